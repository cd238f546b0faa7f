"""Nicla Vision driver figures against the emulated board on a pty (real pyserial both ways).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``nicla_photo_round_trip_ms_p50``: median ms of ``NiclaVisionDriver.snapshot()`` (QVGA colour
  JPEG, quality 90): ``jpeg_image_snapshot`` then ``jpeg_image_read`` in 32 KiB slices, over the
  OpenMV RPC handshakes;
- ``nicla_photo_kib_s``: the same photos' KiB over their median time;
- ``nicla_listen_5s_s``: seconds for ``listen(5)`` (recording runs in real time, so at best 5 s;
  the excess is the last slice's transfer and the RPC polling around it).

The emulator encodes its JPEGs with OpenCV and answers at pty speed, so these measure the host
side (pyserial, the RPC's flush-and-poll handshakes, the event loop) and the emulator's Python,
not a real board's sensor, JPEG unit or USB. ``python -m scripts.bench_nicla_vision [runs]``
prints them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from drivers.nicla_vision.driver import NiclaVisionDriver
from firmware_bridges.emulators.nicla_vision import NiclaVisionEmulator
from scripts.bench_rows import run_alone

LISTEN_S = 5


async def _measure(path: str, runs: int) -> tuple[list[float], list[int], float]:
    driver = NiclaVisionDriver("nicla_vision:bench", path, {})
    await driver.start()
    try:
        await driver.snapshot()  # warm up: the sensor's first frame, OpenCV's first encode
        seconds: list[float] = []
        sizes: list[int] = []
        for _ in range(runs):
            started = time.perf_counter()
            photo = await driver.snapshot()
            seconds.append(time.perf_counter() - started)
            sizes.append(len(photo))
        started = time.perf_counter()
        await driver.listen(LISTEN_S)
        listen_s = time.perf_counter() - started
        return seconds, sizes, listen_s
    finally:
        await driver.stop()


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    emulator = NiclaVisionEmulator()
    path = emulator.start()
    try:
        seconds, sizes, listen_s = asyncio.run(_measure(path, runs))
    finally:
        emulator.stop()
    median_s = statistics.median(seconds)
    kib = statistics.median(sizes) / 1024
    where = "NiclaVisionDriver on real pyserial against the emulated board on a pty"
    return [
        (
            "nicla_photo_round_trip_ms_p50",
            median_s * 1000,
            "ms",
            f"median of {runs} snapshot() calls, QVGA JPEG q90 (~{kib:.1f} KiB): "
            f"jpeg_image_snapshot + jpeg_image_read over OpenMV RPC; {where}",
        ),
        (
            "nicla_photo_kib_s",
            kib / median_s,
            "KiB/s",
            f"median photo size over median snapshot() time, {runs} runs; {where}",
        ),
        (
            "nicla_listen_5s_s",
            listen_s,
            "s",
            "one listen(5): audio_record + ten 0.5 s audio_read slices as the microphone "
            f"records them (real time, so at least 5 s); {where}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 20))
