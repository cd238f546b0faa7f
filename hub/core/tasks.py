"""Ending background tasks: cancel each, then wait until each has ended, so a part's ``stop``
returns only when nothing of it still runs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any


async def cancel_all(tasks: Iterable[asyncio.Future[Any] | None]) -> None:
    """Cancel every task (None is skipped), then await each; the CancelledError a cancelled
    task ends with is its expected end, not a failure."""
    started = [task for task in tasks if task is not None]
    for task in started:
        task.cancel()
    for task in started:
        with contextlib.suppress(asyncio.CancelledError):
            await task
