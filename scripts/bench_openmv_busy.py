"""OpenMV RPC calls while every core is busy: how many are lost.

``bench(calls)`` returns ``(name, value, unit, how measured)`` rows:

- ``openmv_rpc_py_busy_lost``: calls of OpenMV's own host library (``rpc.py`` from the openmv
  repository's history, kept in ``tests/fixtures/openmv``) that returned nothing or the wrong
  thing, out of ``calls``: ``status`` and ``jpeg_image_snapshot`` (QVGA) in turn, with
  ``send_timeout`` and ``recv_timeout`` of 5 s, against ``tiny-hub emulate nicla-vision`` in
  a process of its own;
- ``openmv_driver_busy_lost``: the hub's own driver (``NiclaVisionDriver``) over the same board:
  ``status()`` and ``snapshot()`` in turn, ``calls`` of them, those that raised;
- ``openmv_busy_load``: the one-minute load average at the end (what "busy" was).

Each host first makes one uncounted snapshot (the emulated sensor's first frame and OpenCV's
first encode are slow). While both run, one process per core spins (a bounded busy loop, ended
with the benchmark), so the board, the host and the kernel's pty work all wait for a core.
Every call counts: a lost call is a figure, not an error of the benchmark.
``python -m scripts.bench_openmv_busy [calls]`` runs it alone.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from drivers.nicla_vision.driver import NiclaError, NiclaVisionDriver
from firmware_bridges.emulators.nicla_vision import real_time_thread
from scripts.bench_rows import run_alone

ROOT = Path(__file__).resolve().parent.parent
RPC_PY = ROOT / "tests" / "fixtures" / "openmv" / "rpc.py"
SPIN_LIMIT_S = 3600  # a spinner ends by itself after this, should the benchmark be killed
HOST_TIMEOUT_MS = 5000


def openmv_rpc() -> ModuleType:
    """OpenMV's host library, loaded from its file (it is a script to copy, not a package)."""
    spec = importlib.util.spec_from_file_location("openmv_rpc", RPC_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def busy_cores() -> Iterator[int]:
    """One spinning process per core, for as long as the block runs."""
    code = f"import time\nend = time.monotonic() + {SPIN_LIMIT_S}\n"
    code += "while time.monotonic() < end: pass"
    spinners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(os.cpu_count() or 1)]
    try:
        yield len(spinners)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@contextmanager
def emulated_board() -> Iterator[str]:
    """``tiny-hub emulate nicla-vision`` in a process of its own; the pty's path."""
    with tempfile.TemporaryDirectory() as tmp:
        link = Path(tmp) / "nicla"
        board = subprocess.Popen(
            [sys.executable, "-m", "firmware_bridges.emulators.nicla_vision", "--link", str(link)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            started = time.monotonic()
            while not link.exists():
                if board.poll() is not None or time.monotonic() - started > 120:
                    raise RuntimeError("the emulated Nicla Vision did not start")
                time.sleep(0.05)
            yield str(link.resolve())
        finally:
            board.terminate()
            board.wait(timeout=30)


def rpc_py_lost(path: str, calls: int) -> int:
    host = openmv_rpc().rpc_usb_vcp_master(path)
    lost = 0
    try:
        host.call("jpeg_image_snapshot", b"sensor.RGB565,sensor.QVGA", recv_timeout=30_000)
        for index in range(calls):
            if index % 2:
                answer = host.call("status", send_timeout=HOST_TIMEOUT_MS, recv_timeout=5000)
                good = answer is not None and bytes(answer).startswith(b"{")
            else:
                answer = host.call(
                    "jpeg_image_snapshot",
                    b"sensor.RGB565,sensor.QVGA",
                    send_timeout=HOST_TIMEOUT_MS,
                    recv_timeout=HOST_TIMEOUT_MS,
                )
                good = answer is not None and len(answer) == 4
            lost += not good
    finally:
        host._rpc_usb_vcp_master__ser.close()
    return lost


async def driver_lost(path: str, calls: int) -> int:
    driver = NiclaVisionDriver("nicla_vision:busy", path, {})
    await driver.start()
    lost = 0
    try:
        for index in range(calls):
            try:
                if index % 2:
                    await driver.board_status()
                else:
                    await driver.snapshot()
            except NiclaError:
                lost += 1
    finally:
        await driver.stop()
    return lost


def real_time_granted() -> bool:
    """Whether this machine grants the emulated board's thread real-time scheduling (asked in
    a thread of its own here, by the same user)."""
    granted: list[bool] = []
    thread = threading.Thread(target=lambda: granted.append(real_time_thread()))
    thread.start()
    thread.join()
    return granted == [True]


def bench(calls: int) -> list[tuple[str, float, str, str]]:
    calls = max(1, calls)
    real_time = "real-time" if real_time_granted() else "ordinary (real-time refused)"
    with busy_cores() as spinning, emulated_board() as path:
        upstream = rpc_py_lost(path, calls)
        ours = asyncio.run(driver_lost(path, calls))
        load = os.getloadavg()[0]
    where = (
        f"{calls} calls (status and a QVGA snapshot in turn) with {spinning} spinning "
        f"process(es), one per core, against the emulated board in its own process (its "
        f"serving thread {real_time})"
    )
    return [
        (
            "openmv_rpc_py_busy_lost",
            upstream,
            "calls",
            f"lost by OpenMV's rpc.py (send/recv timeouts 5 s): {where}",
        ),
        ("openmv_driver_busy_lost", ours, "calls", f"lost by NiclaVisionDriver: {where}"),
        ("openmv_busy_load", load, "load", "one-minute load average at the end of the run"),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 500))
