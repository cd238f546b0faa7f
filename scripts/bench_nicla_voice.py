"""Nicla Voice driver figures against the emulated board behind bleak's backend seam.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``nicla_voice_record_kib_s``: KiB/s of μ-law audio (wire bytes) a 5 s recording moves from the
  emulated board through the real ``BleakClient`` to the driver's WAV, board unpaced (it sends
  as fast as the event loop takes it), median of ``runs``;
- ``nicla_voice_wake_to_event_ms_p50``: median ms from the board's wake notification to the
  driver's event reaching its host (``Driver.emit``).

The emulated link has no radio timing, so these measure the host side (bleak's callback path,
reassembly, μ-law decoding, WAV writing), not a real board: a real take streams live, so it
takes at least its own length, and a real link carries about 16-100 KiB/s.
``python -m scripts.bench_nicla_voice [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

from drivers.nicla_voice.driver import NiclaVoiceDriver
from firmware_bridges.emulators.nicla_voice import BOARD_RATE, EmulatedNiclaVoice
from harness.driver_host import RecordingHost
from scripts.bench_rows import run_alone

RECORD_S = 5.0


async def _measure(runs: int) -> tuple[list[float], list[float]]:
    board = EmulatedNiclaVoice(pace=0)
    woke = asyncio.Event()
    woke_at: list[float] = []

    class Host(RecordingHost):
        def emit(self, driver: str, kind: str, device_id: str | None, detail: Any) -> None:
            woke_at.append(time.perf_counter())
            woke.set()

    driver = NiclaVoiceDriver(
        "nicla_voice:bench", board.address, {"backend": board.client_backend()}
    )
    driver.host = Host()
    await driver.start()
    try:
        record_s: list[float] = []
        for _ in range(runs):
            started = time.perf_counter()
            wav = await driver.record(RECORD_S)
            record_s.append(time.perf_counter() - started)
            assert len(wav) == 44 + int(RECORD_S * BOARD_RATE) * 2
        wake_ms: list[float] = []
        for _ in range(runs):
            woke.clear()
            started = time.perf_counter()
            board.wake("NN0:hey_arduino")
            await asyncio.wait_for(woke.wait(), 5.0)
            wake_ms.append((woke_at[-1] - started) * 1000)
        return record_s, wake_ms
    finally:
        await driver.stop()


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    record_s, wake_ms = asyncio.run(_measure(runs))
    wire_kib = RECORD_S * BOARD_RATE / 1024  # μ-law: one byte a sample
    where = "NiclaVoiceDriver through the real BleakClient against the emulated board (unpaced)"
    return [
        (
            "nicla_voice_record_kib_s",
            wire_kib / statistics.median(record_s),
            "KiB/s",
            f"{RECORD_S:g} s μ-law take (16 kHz, 244-byte notifications) → WAV, median of "
            f"{runs}; {where}",
        ),
        (
            "nicla_voice_wake_to_event_ms_p50",
            statistics.median(wake_ms),
            "ms",
            f"board wake notification → the driver's event at its host, median of {runs}; {where}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 10))
