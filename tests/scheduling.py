"""What tests of jobs and alerts share: a running hub's clock, which they move, and its
scheduler, which they tick, instead of waiting."""

from __future__ import annotations

from hub.api.server import RunningServer
from hub.devices.registry import AdjustableClock
from hub.scheduler.runner import Scheduler

# Nothing pops up on the desktop of whoever runs the tests (a test that wants one brings its own
# notifier), and the scheduler's own loop stays out of the way of the ticks a test makes.
QUIET = {"scheduler_tick_s": 60.0, "scheduler_desktop_notifications": False}


def clock(server: RunningServer) -> AdjustableClock:
    found = server.hub.devices.clock
    assert isinstance(found, AdjustableClock)
    return found


def scheduler(server: RunningServer) -> Scheduler:
    found = server.parts.scheduler
    assert found is not None
    return found
