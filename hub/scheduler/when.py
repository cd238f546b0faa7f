"""When a job runs: the contract's few schedule forms, parsed and stepped forward.

``*/Nm`` and ``*/Nh`` repeat every N minutes or hours from the moment the job was made;
``daily@HH:MM`` runs once a day at that time in UTC. The forms are few and fixed, so this is a
small parser rather than cron expressions (croniter would accept forms the contract does not).

A slot missed while the hub was off is not made up one by one: the next run is the first slot
after *now*, so a job that missed four slots runs once at start, then keeps its cadence.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hub.core.errors import Refused

MAX_MINUTES = 24 * 60
MAX_HOURS = 7 * 24
MAX_ONE_SHOT_MINUTES = 366 * 24 * 60
DAY_S = 86_400.0
FORMS = "*/Nm (every N minutes), */Nh (every N hours) or daily@HH:MM (UTC)"

_EVERY = re.compile(r"^\*/(\d{1,4})([mh])$")
_DAILY = re.compile(r"^daily@(\d{2}):(\d{2})$")


class BadSchedule(Refused):
    """A schedule the hub cannot keep; the message names the forms it can."""


@dataclass(frozen=True)
class Every:
    """A repeating schedule: a fixed interval, or a time of day (seconds after UTC midnight)."""

    text: str
    interval_s: float = 0.0
    daily_at_s: float | None = None

    def first_after(self, anchor: float, now: float) -> float:
        """The first slot strictly after ``now``; an interval keeps the cadence of ``anchor``
        (the job's creation), a daily time is the next one on the UTC clock."""
        if self.daily_at_s is not None:
            midnight = (now // DAY_S) * DAY_S
            slot = midnight + self.daily_at_s
            return slot if slot > now else slot + DAY_S
        steps = max(0, int((now - anchor) // self.interval_s)) + 1
        return anchor + steps * self.interval_s

    def describe(self, zone_offset_s: float | None = None) -> str:
        """In words, a daily time in UTC with the local time beside it."""
        if self.daily_at_s is None:
            count, unit = _interval_parts(self.interval_s)
            return f"every {count} {unit}{'s' * (count != 1)}"
        utc = _clock(self.daily_at_s)
        offset = local_offset_s() if zone_offset_s is None else zone_offset_s
        local = _clock((self.daily_at_s + offset) % DAY_S)
        return f"daily at {utc} UTC ({local} local)" if local != utc else f"daily at {utc} UTC"


def parse_every(text: str) -> Every:
    """``*/5m``, ``*/2h`` or ``daily@07:00``; BadSchedule for anything else."""
    form = text.strip().lower()
    if match := _EVERY.match(form):
        count, unit = int(match.group(1)), match.group(2)
        top = MAX_MINUTES if unit == "m" else MAX_HOURS
        if not 1 <= count <= top:
            raise BadSchedule(f"*/N{unit}: N must be 1 to {top}")
        return Every(form, interval_s=count * (60.0 if unit == "m" else 3600.0))
    if match := _DAILY.match(form):
        hours, minutes = int(match.group(1)), int(match.group(2))
        if hours > 23 or minutes > 59:
            raise BadSchedule(f"daily@HH:MM needs a time from 00:00 to 23:59, not {text!r}")
        return Every(form, daily_at_s=hours * 3600.0 + minutes * 60.0)
    raise BadSchedule(f"unknown schedule {text!r}: use {FORMS}")


def local_offset_s(at: float | None = None) -> float:
    """This machine's offset from UTC at ``at`` (now by default), daylight saving included."""
    stamp = time.time() if at is None else at
    offset = datetime.fromtimestamp(stamp).astimezone().utcoffset()
    return offset.total_seconds() if offset is not None else 0.0


def next_local_time(hours: int, minutes: int, now: float) -> float:
    """The next ``HH:MM`` on this machine's clock after ``now`` (today, else tomorrow)."""
    here = datetime.fromtimestamp(now).astimezone()
    slot = here.replace(hour=hours, minute=minutes, second=0, microsecond=0)
    if slot.timestamp() <= now:
        slot = slot + timedelta(days=1)
    return slot.timestamp()


def local_text(stamp: float) -> str:
    """``07:00 on Mon 8 Dec (local time)``: a run time as the person reads it."""
    local = datetime.fromtimestamp(stamp).astimezone()
    return f"{local:%H:%M} on {local:%a} {local.day} {local:%b} (local time)"


def stamp_text(stamp: float | None) -> str:
    """``2026-12-01 07:00 UTC (08:00 local)``: a run time as the contract keeps it, and as the
    person reads it."""
    if stamp is None:
        return "never"
    utc = datetime.fromtimestamp(stamp, UTC)
    local = datetime.fromtimestamp(stamp).astimezone()
    return f"{utc:%Y-%m-%d %H:%M} UTC ({local:%H:%M} local)"


def _interval_parts(seconds: float) -> tuple[int, str]:
    if seconds % 3600 == 0:
        return int(seconds // 3600), "hour"
    return int(seconds // 60), "minute"


def _clock(seconds: float) -> str:
    return f"{int(seconds // 3600):02d}:{int(seconds % 3600 // 60):02d}"
