"""Waiting for a condition in an async test: polls, with a generous deadline (no timing claims)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], bool], within_s: float = 10.0, what: str = "") -> None:
    for _ in range(int(within_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(
        f"not within {within_s:g} s: {what}" if what else "condition not met in time"
    )
