"""Flipper driver figures against the byte-faithful emulator on a pty (real pyserial both ways).

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``flipper_device_info_p50``: median ms of the driver's CLI ``device_info`` round trip;
- ``flipper_storage_read_cli`` / ``flipper_storage_read_rpc``: KiB/s reading a 64 KiB file with
  the driver, over the text CLI (``storage stat`` + ``storage read``) and over the protobuf RPC
  (``start_rpc_session``, stat, read in 512-byte messages, ``stop_session``), median of ``runs``.

The emulator answers at pty speed, so these measure the host side (pyserial, the driver's
parsing, the event loop) plus the protocols' framing, not a real Flipper's USB or SD card.
``python -m scripts.bench_flipper [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from drivers.flipper.usb import FlipperDriver
from firmware_bridges.emulators.flipper import FlipperEmulator
from scripts.bench_rows import run_alone

FILE_PATH = "/ext/bench/64k.txt"
FILE_SIZE = 64 * 1024


def _text_file(size: int) -> bytes:
    """ASCII lines (the CLI's ``storage read`` output must not contain a prompt)."""
    line = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.\n"
    return (line * (size // len(line) + 1))[:size]


async def _measure(path: str, runs: int) -> tuple[list[float], list[float], list[float]]:
    driver = FlipperDriver("bench", path, {})
    await driver.start()
    try:
        info_ms: list[float] = []
        cli_s: list[float] = []
        rpc_s: list[float] = []
        for _ in range(runs):
            started = time.perf_counter()
            await driver.run("device_info")
            info_ms.append((time.perf_counter() - started) * 1000)
        for _ in range(runs):
            started = time.perf_counter()
            data = await driver.read_file_cli(FILE_PATH)
            cli_s.append(time.perf_counter() - started)
            assert len(data) == FILE_SIZE
            started = time.perf_counter()
            data = await driver.read_file(FILE_PATH)
            rpc_s.append(time.perf_counter() - started)
            assert len(data) == FILE_SIZE
        return info_ms, cli_s, rpc_s
    finally:
        await driver.stop()


def bench(runs: int) -> list[tuple[str, float, str, str]]:
    runs = max(1, runs)
    emulator = FlipperEmulator()
    emulator.state.put_file(FILE_PATH, _text_file(FILE_SIZE))
    path = emulator.start()
    try:
        info_ms, cli_s, rpc_s = asyncio.run(_measure(path, runs))
    finally:
        emulator.stop()
    kib = FILE_SIZE / 1024
    where = "FlipperDriver on real pyserial against the emulator on a pty"
    return [
        (
            "flipper_device_info_p50",
            statistics.median(info_ms),
            "ms",
            f"median of {runs} CLI `device_info` round trips (write, echo, table, prompt); {where}",
        ),
        (
            "flipper_storage_read_cli",
            kib / statistics.median(cli_s),
            "KiB/s",
            f"64 KiB text file, CLI `storage stat` + `storage read`, median of {runs}; {where}",
        ),
        (
            "flipper_storage_read_rpc",
            kib / statistics.median(rpc_s),
            "KiB/s",
            f"64 KiB file, RPC start_rpc_session + stat + read (512 B messages) + stop_session, "
            f"median of {runs}; {where}",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 10))
