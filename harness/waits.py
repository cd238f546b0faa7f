"""Waiting for a condition in an async test or a benchmark: polls, with a generous deadline
(no timing claims)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

STEP_S = 0.05


async def until(condition: Callable[[], bool], within_s: float = 30.0, what: str = "") -> None:
    for _ in range(int(within_s / STEP_S)):
        if condition():
            return
        await asyncio.sleep(STEP_S)
    raise _not_met(within_s, what)


def until_sync(condition: Callable[[], bool], within_s: float = 30.0, what: str = "") -> None:
    """``until`` for a test that is not async (a subprocess, a pty)."""
    for _ in range(int(within_s / STEP_S)):
        if condition():
            return
        time.sleep(STEP_S)
    raise _not_met(within_s, what)


def _not_met(within_s: float, what: str) -> AssertionError:
    return AssertionError(
        f"not within {within_s:g} s: {what}" if what else "condition not met in time"
    )
