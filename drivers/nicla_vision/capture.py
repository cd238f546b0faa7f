"""Recording a real Nicla Vision: its status and one photo, through the driver itself.

``tiny-hub capture nicla-vision --port /dev/ttyACM0 --out nicla.json`` runs the driver's own
``start`` (a ``status`` call), ``board_status`` and ``snapshot`` against the board, and records
every OpenMV RPC call they make: its name, its arguments and the result the board sent back.
Nothing is written to the board and nothing but the camera and the status is asked for. The
tests replay the calls against the driver's parsers and compare the emulator's answers with
them (``drivers/capture.py`` holds the file format).
"""

from __future__ import annotations

import asyncio
from typing import Any

from drivers.capture import Capture, CaptureError
from drivers.nicla_vision.driver import NiclaError, NiclaVisionDriver
from drivers.nicla_vision.openmv_rpc import RpcHost
from drivers.transports.serial import SerialLineError

SNAPSHOT_QUALITY = 90


class _RecordingHost(RpcHost):
    """The driver's RPC host, writing each completed call into the capture."""

    def __init__(self, host: RpcHost, capture: Capture) -> None:
        super().__init__(host._line)
        self.capture = capture

    async def call(self, name: str, data: bytes = b"", **options: Any) -> bytes:
        result = await super().call(name, data, **options)
        self.capture.add(name, data, result, kind="call")
        return result


async def record_nicla_vision_async(port: str, *, source: str = "device") -> dict[str, Any]:
    capture = Capture(device="nicla-vision", source=source)
    driver = NiclaVisionDriver("nicla_vision:capture", port, {})
    driver._rpc = _RecordingHost(driver._rpc, capture)
    try:
        await driver.start()
        await driver.board_status()
        photo = await driver.snapshot(quality=SNAPSHOT_QUALITY)
    except (NiclaError, SerialLineError) as exc:
        raise CaptureError(str(exc)) from None
    finally:
        await driver.stop()
    capture.notes.append(f"one photo, {len(photo)} bytes of JPEG at quality {SNAPSHOT_QUALITY}")
    return capture.as_json()


def record_nicla_vision(
    port: str, *, redact: bool = True, source: str = "device"
) -> dict[str, Any]:
    """The status and one photo of the Nicla Vision on ``port``, as capture JSON data. Nothing
    in it names the board (no serial number is asked for), so ``redact`` changes nothing."""
    return asyncio.run(record_nicla_vision_async(port, source=source))
