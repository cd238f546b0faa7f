"""What the scheduler's tick costs with 1,000 jobs (docs/scheduler.md), on a real hub's SQLite.

``bench(runs)`` returns ``(name, value, unit, how measured)`` rows:

- ``scheduler_idle_tick_p50`` / ``_p99``: one tick with 1,000 repeating jobs (100 people × 10,
  the most each may have) and none due — what the hub pays every ``scheduler.tick_s``.
- ``scheduler_busy_tick_p50`` / ``_p99``: one tick in which 100 alerts fire among 1,000 pending
  (claim each slot, a notice on the person's ring and in the mailbox of their phone, record the
  run). Every tick is checked to fire exactly its 100 alerts, each without an error.

Job runs are chat turns, measured by the turn benchmarks; here only the scheduler's own work is
timed. ``python -m scripts.bench_scheduler [runs]`` prints them.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from harness.machine import MACHINE_OFF
from hub.config import load_settings
from hub.devices.registry import AdjustableClock
from hub.runtime.hub import Hub
from hub.scheduler.runner import Scheduler
from hub.scheduler.store import MAX_ALERTS, ScheduleStore
from scripts.bench_common import BenchmarkFailed, percentile
from scripts.bench_rows import Row, run_alone

PEOPLE = 100
JOBS_EACH = 10
FIRING = 100


def _open(home: Path) -> Hub:
    overrides = {"host": "127.0.0.1", "port": 0, "drivers": MACHINE_OFF}
    return Hub.open(load_settings(home=home, environ={}, overrides=overrides))


def _fill(hub: Hub, store: ScheduleStore, runs: int) -> None:
    """1,000 jobs, and ``runs`` × 100 alerts one second apart, spread over 100 people."""
    now = store.clock()
    for person in range(PEOPLE):
        user = hub.identity.add_user(f"person {person}")
        hub.devices.registry.enroll(user.id, name="phone", kind="daemon")
        for job in range(JOBS_EACH):
            store.add_job(user.id, f"job {job}", every="*/1h", title=f"job {job}")
        for second in range(runs):
            store.add_alert(user.id, f"alert {second}", "", now + 10 + second)


async def _ticks(hub: Hub, runs: int) -> tuple[list[float], list[float]]:
    scheduler = Scheduler(hub)
    clock = hub.devices.clock
    assert isinstance(clock, AdjustableClock)
    idle, busy = [], []
    for _ in range(runs):
        started = time.perf_counter()
        outcomes = await scheduler.tick()
        idle.append((time.perf_counter() - started) * 1000)
        if outcomes:
            raise BenchmarkFailed(f"an idle tick ran {len(outcomes)} item(s)")
    clock.advance(10)
    for run in range(runs):
        started = time.perf_counter()
        outcomes = await scheduler.tick()
        busy.append((time.perf_counter() - started) * 1000)
        failed = [o.error for o in outcomes if o.error]
        if len(outcomes) != FIRING or failed:
            raise BenchmarkFailed(f"tick {run} fired {len(outcomes)} of {FIRING}: {failed[:3]}")
        clock.advance(1)
    return idle, busy


def bench(runs: int) -> list[Row]:
    runs = min(runs, MAX_ALERTS)  # one alert a person per busy tick, and no more pending
    with tempfile.TemporaryDirectory() as folder:
        hub = _open(Path(folder) / "home")
        try:
            _fill(hub, ScheduleStore(hub.db, hub.devices.clock), runs)
            idle, busy = asyncio.run(_ticks(hub, runs))
        finally:
            hub.close()
    jobs = f"{PEOPLE * JOBS_EACH} jobs ({PEOPLE} people × {JOBS_EACH})"
    return [
        ("scheduler_idle_tick_p50", percentile(idle, 0.5), "ms", f"a tick, none due, {jobs}"),
        ("scheduler_idle_tick_p99", percentile(idle, 0.99), "ms", f"a tick, none due, {jobs}"),
        (
            "scheduler_busy_tick_p50",
            percentile(busy, 0.5),
            "ms",
            f"a tick firing {FIRING} alerts (ring + a phone's mailbox each), {jobs} pending",
        ),
        (
            "scheduler_busy_tick_p99",
            percentile(busy, 0.99),
            "ms",
            f"a tick firing {FIRING} alerts (ring + a phone's mailbox each), {jobs} pending",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(run_alone(bench, sys.argv[1:], 50))
