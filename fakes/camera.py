"""A webcam shaped like ``cv2.VideoCapture``, for the camera driver's ``capture=`` seam.

It draws a scene with a frame counter (so consecutive frames differ and a still is a real,
decodable picture), paced like a camera (``fps``). ``mode`` plays the two failures real
backends show: ``"absent"`` (``isOpened()`` is False, as V4L2 with no device) and
``"dead"`` (opened, but every ``read()`` is ``(False, None)``, as some backends do);
``fail_after`` makes reads fail after that many frames (the camera unplugged mid-clip).
"""

from __future__ import annotations

import time
from typing import Literal

import cv2
import numpy as np

Mode = Literal["ok", "absent", "dead"]


class EmulatedCapture:
    def __init__(
        self,
        source: int | str = 0,
        *,
        mode: Mode = "ok",
        size: tuple[int, int] = (320, 240),
        fps: float = 30.0,
        fail_after: int | None = None,
    ) -> None:
        self.source = source
        self.mode = mode
        self.size = size
        self.fps = fps
        self.fail_after = fail_after
        self.frames_read = 0
        self.released = False

    def isOpened(self) -> bool:
        return self.mode != "absent" and not self.released

    def read(self) -> tuple[bool, np.ndarray | None]:
        if self.mode != "ok" or self.released:
            return False, None
        if self.fail_after is not None and self.frames_read >= self.fail_after:
            return False, None
        time.sleep(1.0 / self.fps)
        self.frames_read += 1
        return True, self._scene(self.frames_read)

    def get(self, prop: int) -> float:
        if prop == cv2.CAP_PROP_FPS:
            return self.fps
        if prop == cv2.CAP_PROP_FRAME_WIDTH:
            return float(self.size[0])
        if prop == cv2.CAP_PROP_FRAME_HEIGHT:
            return float(self.size[1])
        return 0.0

    def release(self) -> None:
        self.released = True

    def _scene(self, number: int) -> np.ndarray:
        width, height = self.size
        frame = np.zeros((height, width, 3), np.uint8)
        frame[:] = (40, 90 + number % 100, 160)
        x = 20 + (number * 7) % max(1, width - 60)
        cv2.rectangle(frame, (x, height // 3), (x + 40, height // 3 + 40), (0, 200, 255), -1)
        cv2.putText(
            frame, f"frame {number}", (10, height - 15), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255,) * 3
        )
        return frame


class EmulatedCamera:
    """A capture factory: ``Camera(capture=EmulatedCamera(mode=...))``; keeps what it opened."""

    def __init__(self, **options: object) -> None:
        self.options = options
        self.opened: list[EmulatedCapture] = []

    def __call__(self, source: int | str) -> EmulatedCapture:
        capture = EmulatedCapture(source, **self.options)  # type: ignore[arg-type]
        self.opened.append(capture)
        return capture
