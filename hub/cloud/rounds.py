"""Rounds against the cloud that outlive failures: after a cloud failure or a local fault the
loop backs off (exponential, capped, with jitter) and tries again, until a failure its owner
calls final (a refused token). The device link's heartbeat and relay and memory sync all run
this way, so they back off alike."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal, TypeVar

from hub.cloud.client import CloudError

log = logging.getLogger(__name__)
T = TypeVar("T")
# Where a loop of rounds stands, for /api/health: "refused" is final (the token was refused).
LinkState = Literal["starting", "online", "offline", "refused"]


async def rounds(
    once: Callable[[], Awaitable[T]],
    failed: Callable[[CloudError], bool],
    backoff_s: Callable[[int], float],
    fault: str,
) -> AsyncIterator[T]:
    """Each successful round's result, for as long as the loop may go on. ``failed`` records a
    cloud failure and says whether to try again; any other exception (a bug, the database) is
    logged as ``fault`` and tried again, since one bad round must not end the loop."""
    failures = 0
    while True:
        try:
            result = await once()
        except CloudError as exc:
            if not failed(exc):
                return
        except Exception:
            log.exception(fault)
        else:
            failures = 0
            yield result
            continue
        failures += 1
        await asyncio.sleep(backoff_s(failures))
