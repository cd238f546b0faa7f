"""Notices as toasts: the app follows the person's event ring and shows each ``notify`` event
(a job's answer, an alert, a finished task) whatever screen is open.

The ring replays what it holds when the stream opens; notices from before the app started are
old news, so only those stamped since then (less a little, for clocks a second apart) become
toasts. A lost stream is resumed after the last event seen, with backoff, and never stops the
app.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from hub.client.http import Event, HubClient, HubError

NOTIFY_KIND = "notify"
CLOCK_SLACK_S = 5.0
RETRY_MIN_S = 1.0
RETRY_MAX_S = 30.0

Show = Callable[[str, str], None]
Heard = Callable[[Event], None]


def notice_of(event: Event, since: float) -> tuple[str, str] | None:
    """(title, body) of a notify event stamped after ``since``, else None."""
    if event.get("kind") != NOTIFY_KIND:
        return None
    stamp = event.get("created_at")
    if not isinstance(stamp, int | float) or stamp < since - CLOCK_SLACK_S:
        return None
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        return None
    return str(detail.get("title") or "Notice"), str(detail.get("body") or "")


async def follow_notices(
    client: HubClient, show: Show, since: float | None = None, heard: Heard | None = None
) -> None:
    """Show every new notice until cancelled; every other new event goes to ``heard``."""
    since = time.time() if since is None else since
    last, delay = 0, RETRY_MIN_S
    while True:
        try:
            async for event in client.follow_events(last):
                last = max(last, _id(event))
                delay = RETRY_MIN_S
                found = notice_of(event, since)
                if found is not None:
                    show(*found)
                elif heard is not None and _new(event, since):
                    heard(event)
        except (HubError, TimeoutError):
            pass
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_S)


def _new(event: Mapping[str, Any], since: float) -> bool:
    stamp = event.get("created_at")
    return isinstance(stamp, int | float) and stamp >= since - CLOCK_SLACK_S


def _id(event: Mapping[str, Any]) -> int:
    found = event.get("id")
    return found if isinstance(found, int) else 0
