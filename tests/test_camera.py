"""The machine's camera: real OpenCV on this machine (no camera here), the emulated capture
through the driver's ``capture=`` seam, and clip/JPEG encoding for real."""

from __future__ import annotations

import glob
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pytest

from drivers.machine.camera import Camera, CameraError, CameraUnavailable
from fakes.camera import EmulatedCamera
from media.video import VideoError, decode_jpeg, frames_to_mp4, is_jpeg, jpegs_to_mp4


def frame_count(mp4: bytes) -> int:
    with tempfile.NamedTemporaryFile(suffix=".mp4") as f:
        f.write(mp4)
        f.flush()
        cap = cv2.VideoCapture(f.name)
        count = 0
        while cap.read()[0]:
            count += 1
        cap.release()
    return count


async def test_a_snapshot_is_a_decodable_jpeg() -> None:
    factory = EmulatedCamera(size=(320, 240))
    camera = Camera("0", capture=factory)
    jpeg = await camera.snapshot()
    assert is_jpeg(jpeg)
    assert decode_jpeg(jpeg).shape == (240, 320, 3)
    assert factory.opened[0].released  # opened per request and let go at once
    assert camera.status() == (True, "camera 0")


async def test_a_clip_is_an_mp4_of_the_asked_length() -> None:
    camera = Camera("0", capture=EmulatedCamera(fps=60.0), fps=10.0)
    clip = await camera.clip(1.0)
    assert clip[4:8] == b"ftyp"
    assert frame_count(clip) == 10


@pytest.mark.parametrize("seconds", [0, -1, 10.5, 1e9])
async def test_a_clip_out_of_bounds_is_refused_before_opening(seconds: float) -> None:
    factory = EmulatedCamera()
    camera = Camera("0", capture=factory, max_clip_s=10)
    with pytest.raises(CameraError, match="between 0 and 10 seconds"):
        await camera.clip(seconds)
    assert factory.opened == []


async def test_no_camera_is_a_clear_error_and_is_remembered() -> None:
    camera = Camera("0", capture=EmulatedCamera(mode="absent"))
    with pytest.raises(CameraUnavailable, match="could not be opened"):
        await camera.snapshot()
    available, detail = camera.status()
    assert not available and "could not be opened" in detail


async def test_a_camera_that_opens_but_never_gives_a_frame_counts_as_absent() -> None:
    # Some backends report isOpened() True and then fail every read (docs/hardware.md).
    factory = EmulatedCamera(mode="dead")
    camera = Camera("0", capture=factory)
    with pytest.raises(CameraUnavailable, match="gave no picture"):
        await camera.snapshot()
    assert factory.opened[0].released


async def test_a_camera_lost_mid_clip_fails_the_clip_and_recovers_after() -> None:
    factory = EmulatedCamera(fail_after=4)
    camera = Camera("0", capture=factory, fps=10.0)
    with pytest.raises(CameraUnavailable):
        await camera.clip(2.0)
    factory.options.pop("fail_after")
    assert is_jpeg(await camera.snapshot())
    assert camera.status()[0]


async def test_a_capture_factory_that_raises_is_a_clear_error() -> None:
    def broken(_source: int | str) -> None:
        raise RuntimeError("backend exploded")

    with pytest.raises(CameraUnavailable, match="backend exploded"):
        await Camera("/dev/video9", capture=broken).snapshot()


async def test_the_real_opencv_on_this_machine() -> None:
    """Real cv2.VideoCapture: with no /dev/video* (this machine, CI) the camera says so without
    opening anything, and a capture attempt is a clear error, not a hang or a crash."""
    camera = Camera("0")
    available, detail = camera.status()
    if glob.glob("/dev/video*"):
        pytest.skip("this machine has a camera: the no-camera path is covered by the emulator")
    assert not available
    assert "no /dev/video" in detail
    with pytest.raises(CameraUnavailable):
        await camera.snapshot()


async def test_a_missing_device_path_through_real_opencv(tmp_path: Path) -> None:
    with pytest.raises(CameraUnavailable, match="could not be opened"):
        await Camera(str(tmp_path / "video-nowhere")).snapshot()


def test_frames_to_mp4_checks_its_input() -> None:
    with pytest.raises(VideoError, match="no frames"):
        frames_to_mp4([], 10)
    with pytest.raises(VideoError, match="fps"):
        frames_to_mp4([np.zeros((8, 8, 3), np.uint8)], 0)
    mixed = [np.zeros((64, 64, 3), np.uint8), np.zeros((32, 48, 3), np.uint8)]
    assert frame_count(frames_to_mp4(mixed, 5)) == 2  # resized to the first frame's size


def test_a_truncated_jpeg_is_refused() -> None:
    ok, buf = cv2.imencode(".jpg", np.full((32, 32, 3), 200, np.uint8))
    assert ok
    jpeg = buf.tobytes()
    assert decode_jpeg(jpeg).shape == (32, 32, 3)
    with pytest.raises(VideoError, match="not a complete JPEG"):
        decode_jpeg(jpeg[: len(jpeg) // 2])
    with pytest.raises(VideoError):
        jpegs_to_mp4([jpeg, b"garbage"], 5)
