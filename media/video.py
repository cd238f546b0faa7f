"""Frames to a short MP4 clip, and JPEG checks: shared by the machine's camera and the Nicla Vision.

OpenCV's headless wheel carries FFmpeg; of its writers, MPEG-4 Part 2 (``mp4v``) is the one
that opens on a plain CPU (H.264 ``avc1`` wants a hardware encoder here and fails), and its
clips play in browsers' and phones' MP4 players. ``VideoWriter`` only writes to a path, so the
clip goes through a temporary file that is always removed.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

CLIP_TYPE = "video/mp4"


def opencv() -> Any:
    """OpenCV, imported on first use: the import costs ~50 ms of every hub start otherwise."""
    return importlib.import_module("cv2")


class VideoError(ValueError):
    """Frames that cannot become a clip, or bytes that are not a JPEG; ``str()`` is for a person."""


def is_jpeg(data: bytes) -> bool:
    """Starts with SOI and ends with EOI (trailing padding allowed): not a truncated frame."""
    return data[:3] == b"\xff\xd8\xff" and b"\xff\xd9" in data[-32:]


def decode_jpeg(data: bytes) -> np.ndarray:
    if not is_jpeg(data):
        raise VideoError("not a complete JPEG image")
    cv2 = opencv()
    frame = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if frame is None:
        raise VideoError("the JPEG image could not be decoded")
    return np.asarray(frame)


def encode_jpeg(frame: np.ndarray, quality: int = 85) -> bytes:
    cv2 = opencv()
    ok, buf = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise VideoError("the frame could not be encoded as JPEG")
    return bytes(buf.tobytes())


def frames_to_mp4(frames: Sequence[np.ndarray], fps: float) -> bytes:
    """BGR frames (all the first frame's size; others are resized to it) as an MP4 clip."""
    if not frames:
        raise VideoError("no frames to make a clip of")
    if not 0 < fps <= 120:
        raise VideoError(f"fps must be between 0 and 120, not {fps}")
    height, width = frames[0].shape[:2]
    cv2 = opencv()
    fd, path = tempfile.mkstemp(suffix=".mp4", prefix="tiny-hub-clip-")
    os.close(fd)
    try:
        writer = cv2.VideoWriter(path, cv2.VideoWriter.fourcc(*"mp4v"), fps, (width, height))
        if not writer.isOpened():
            raise VideoError("this OpenCV build cannot write MP4 (mp4v) clips")
        try:
            for frame in frames:
                if frame.shape[:2] != (height, width):
                    frame = cv2.resize(frame, (width, height))
                writer.write(frame)
        finally:
            writer.release()
        with open(path, "rb") as clip:
            return clip.read()
    finally:
        os.unlink(path)


def jpegs_to_mp4(jpegs: Sequence[bytes], fps: float) -> bytes:
    return frames_to_mp4([decode_jpeg(j) for j in jpegs], fps)
