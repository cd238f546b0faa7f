"""The machine's own webcam through OpenCV: a still for ``/api/camera/snapshot`` and the agent,
and a short clip. :class:`CameraDriver` runs it behind the same ``DriverHost`` as every board.

A camera is opened per request and released at once, rather than held: the light next to the
lens then means "the hub is looking now", and another program (a video call) can have it the
rest of the time. OpenCV with no camera reports not-opened; some backends report opened and then
fail every read, so a capture counts as working only when a frame was read (docs/hardware.md).
Every OpenCV call runs on one worker thread (they block), one capture at a time.

``capture`` is the seam: anything shaped like ``cv2.VideoCapture`` (``isOpened``, ``read``,
``get``, ``release``); ``fakes/camera.py`` provides one for tests.
"""

from __future__ import annotations

import asyncio
import glob
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from drivers.base import (
    DriverError,
    DriverStatus,
    Setting,
)
from drivers.machine.device import MachineDevice
from media.video import encode_jpeg, frames_to_mp4, opencv

if TYPE_CHECKING:  # annotations only: importing strands costs ~0.4 s
    from strands.types.tools import AgentTool

CaptureFactory = Callable[[int | str], Any]

MAX_CLIP_S = 10.0
CLIP_FPS = 10.0
WARMUP_FRAMES = 3  # auto-exposure settles over the first frames; the first is often black


class CameraError(DriverError):
    """A capture failed; ``str()`` says why, for a person."""


class CameraUnavailable(CameraError):
    """There is no camera to open (or it cannot be opened)."""


def _source(device: str) -> int | str:
    """``"0"`` → index 0 (OpenCV picks the backend); anything else is a path or URL."""
    return int(device) if device.strip().isdigit() else device


def _open_capture(source: int | str) -> Any:
    return opencv().VideoCapture(source)


class Camera:
    def __init__(
        self,
        device: str = "0",
        *,
        capture: CaptureFactory | None = None,
        max_clip_s: float = MAX_CLIP_S,
        fps: float = CLIP_FPS,
    ) -> None:
        self.device = device
        self._capture: CaptureFactory = capture or _open_capture
        self._real = capture is None
        self.max_clip_s = max_clip_s
        self.fps = fps
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="camera")
        self._last_problem = ""

    def status(self) -> tuple[bool, str]:
        """Whether a capture is worth trying, without opening the camera (cheap, never raises).

        On Linux the real OpenCV path needs a ``/dev/video*`` node for an index; without one
        the answer is known. Otherwise the last capture's outcome is the best knowledge.
        """
        absent = self.absent()
        if absent:
            return False, absent
        if self._last_problem:
            return False, self._last_problem
        return True, f"camera {self.device}"

    def absent(self) -> str:
        """Why there is certainly no camera to open (no ``/dev/video*`` node on Linux for an
        index), or "" when one may be there: only a capture tells."""
        if (
            self._real
            and sys.platform.startswith("linux")
            and isinstance(_source(self.device), int)
            and not glob.glob("/dev/video*")
        ):
            return (
                "camera unavailable: no /dev/video* device on this machine; plug in a "
                "webcam or set drivers.camera.device to a path or stream URL"
            )
        return ""

    async def snapshot(self, *, quality: int = 90) -> bytes:
        """One JPEG still."""
        frames = await self._run(lambda cap: [self._read(cap) for _ in range(WARMUP_FRAMES)])
        return encode_jpeg(frames[-1], quality)

    async def clip(self, seconds: float) -> bytes:
        """``seconds`` of video as an MP4 clip (at most ``max_clip_s``)."""
        if not 0 < seconds <= self.max_clip_s:
            raise CameraError(f"a clip is between 0 and {self.max_clip_s:g} seconds, not {seconds}")
        frames = await self._run(lambda cap: self._record(cap, seconds))
        return frames_to_mp4(frames, self.fps)

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)

    async def _run(self, work: Callable[[Any], list[np.ndarray]]) -> list[np.ndarray]:
        loop = asyncio.get_running_loop()
        try:
            frames = await loop.run_in_executor(self._worker, self._with_capture, work)
        except CameraError as exc:
            self._last_problem = str(exc) if isinstance(exc, CameraUnavailable) else ""
            raise
        self._last_problem = ""
        return frames

    def _with_capture(self, work: Callable[[Any], list[np.ndarray]]) -> list[np.ndarray]:
        try:
            cap = self._capture(_source(self.device))
        except Exception as exc:
            raise CameraUnavailable(
                f"camera unavailable: cannot open {self.device}: {exc}"
            ) from None
        try:
            if not cap.isOpened():
                raise CameraUnavailable(
                    f"camera unavailable: camera {self.device} could not be opened (none "
                    "attached, or another program holds it)"
                )
            return work(cap)
        finally:
            cap.release()

    def _read(self, cap: Any) -> np.ndarray:
        ok, frame = cap.read()
        if not ok or frame is None:
            raise CameraUnavailable(
                f"camera unavailable: camera {self.device} opened but gave no picture"
            )
        return np.asarray(frame)

    def _record(self, cap: Any, seconds: float) -> list[np.ndarray]:
        """Read at the camera's own pace; keep one frame every 1/fps s (a camera gives ~30)."""
        wanted = max(1, round(seconds * self.fps))
        frames: list[np.ndarray] = []
        due = time.monotonic()
        while len(frames) < wanted:
            frame = self._read(cap)
            now = time.monotonic()
            if now >= due:
                frames.append(frame)
                due += 1.0 / self.fps
        return frames


class CameraDriver(MachineDevice):
    """The machine's camera: online while one may be opened (a capture that failed says why in
    the detail, and the next one tries again)."""

    name: ClassVar[str] = "camera"
    what: ClassVar[str] = "this machine's camera"
    off: ClassVar[str] = ""  # an empty device turns it off
    default: ClassVar[str] = ""
    capabilities: ClassVar[tuple[str, ...]] = ("camera", "video")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting(
            "device",
            "0",
            "the machine's camera: an index (0 is the first webcam), a /dev/video path or a "
            "stream URL; empty turns the camera off",
            env="TINY_HUB_CAMERA",
        ),
    )

    @classmethod
    def agent_tools(cls) -> Sequence[AgentTool]:
        from drivers.machine.tools import CAMERA_TOOLS  # loads strands (~0.4 s): when mounted

        return CAMERA_TOOLS

    def __init__(self, device_id: str, port: str, config: Mapping[str, Any]) -> None:
        super().__init__(device_id, port, config)
        self.camera = Camera(port, capture=config.get("capture"))

    async def stop(self) -> None:
        self.camera.close()

    def status(self) -> DriverStatus:
        absent = self.camera.absent()
        if absent:
            return DriverStatus("offline", absent)
        return DriverStatus("online", self.camera.status()[1])

    async def snapshot(self) -> bytes:
        return await self.camera.snapshot()

    async def clip(self, seconds: float) -> bytes:
        return await self.camera.clip(seconds)
