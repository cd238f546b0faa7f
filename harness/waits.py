"""Waiting for a condition in an async test or a benchmark: polls, with a generous deadline
(no timing claims).

The first looks come quickly (5 ms, then twice as long each time up to ``STEP_S``): most
conditions hold within a few milliseconds, and a fixed 50 ms step cost every wait 25 ms on
average; a condition that takes longer is still looked at only every ``STEP_S``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

FIRST_STEP_S = 0.005
STEP_S = 0.05


def steps() -> Iterator[float]:
    """5 ms, 10 ms, 20 ms, 40 ms, then ``STEP_S`` for ever."""
    step = FIRST_STEP_S
    while True:
        yield step
        step = min(step * 2, STEP_S)


async def until(condition: Callable[[], bool], within_s: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + within_s
    for step in steps():
        if condition():
            return
        if time.monotonic() >= deadline:
            raise _not_met(within_s, what)
        await asyncio.sleep(step)


def until_sync(condition: Callable[[], bool], within_s: float = 30.0, what: str = "") -> None:
    """``until`` for a test that is not async (a subprocess, a pty)."""
    deadline = time.monotonic() + within_s
    for step in steps():
        if condition():
            return
        if time.monotonic() >= deadline:
            raise _not_met(within_s, what)
        time.sleep(step)


def _not_met(within_s: float, what: str) -> AssertionError:
    return AssertionError(
        f"not within {within_s:g} s: {what}" if what else "condition not met in time"
    )
