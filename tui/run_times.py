"""When a job runs, in words: ``14:05 (13:05 UTC), in 5 min`` — what the Jobs screen's table and
the job form's preview both say."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def in_words(seconds: float) -> str:
    """ "in 5 min", "in 2 h", "now": how far away a run is."""
    if seconds < 60:
        return "now" if seconds < 1 else f"in {int(seconds)} s"
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"in {int(seconds / size + 0.5)} {unit}"  # 4 min 59 s is "in 5 min"
    return "now"  # unreachable: the loop ends at minutes


def when_text(stamp: Any, now: float) -> str:
    """A run time as ``14:05 (13:05 UTC)`` (``13:05 UTC`` where local time is UTC), the date
    too when it is not today, and how far it is when it is ahead."""
    if not isinstance(stamp, int | float):
        return "—"
    local, utc = datetime.fromtimestamp(stamp).astimezone(), datetime.fromtimestamp(stamp, UTC)
    same_day = local.date() == datetime.fromtimestamp(now).astimezone().date()
    shown = f"{local:%H:%M}" if same_day else f"{local:%m-%d %H:%M}"
    shown += " UTC" if local.utcoffset() == utc.utcoffset() else f" ({utc:%H:%M} UTC)"
    return f"{shown}, {in_words(stamp - now)}" if stamp > now else shown
