"""How the memory screen shows one forgetting (``GET /learnings/forgotten``): a row, and the
facts it closed with the date they are deleted for good."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from tui.tables import one_line

FORGOTTEN_COLUMNS = (("what", "what"), ("forgotten", "forgotten"), ("until", "until"))
WHAT_CHARS = 44


def _local(iso: Any, fmt: str) -> str:
    try:
        return datetime.fromisoformat(str(iso)).astimezone().strftime(fmt)
    except ValueError:
        return str(iso)[:16]


def _facts(made: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [f for f in made.get("facts") or [] if isinstance(f, Mapping)]


def heading(made: Mapping[str, Any]) -> str:
    """ "2 facts about my bicycle": how many, and why."""
    count = len(_facts(made))
    why = {"all": " (everything)", "about": f" about {made.get('about')}"}
    return f"{count} fact{'s' * (count != 1)}{why.get(str(made.get('scope')), '')}"


def what(made: Mapping[str, Any]) -> str:
    """The heading and the first fact: "2 facts about my bicycle: The user's bicycle …"."""
    facts = _facts(made)
    return heading(made) + (f": {facts[0].get('fact', '')}" if facts else "")


def forgotten_row(made: Mapping[str, Any]) -> tuple[str, str, str]:
    return (
        one_line(what(made), WHAT_CHARS),
        _local(made.get("forgotten_at"), "%Y-%m-%d %H:%M"),
        _local(made.get("delete_after"), "%Y-%m-%d"),
    )


def forgotten_detail(made: Mapping[str, Any]) -> Text:
    text = Text()
    text.append(heading(made), style="bold")
    until = _local(made.get("delete_after"), "%Y-%m-%d")
    text.append(f"\nPress b to bring them back; deleted for good after {until}.", style="dim")
    for fact in _facts(made):
        text.append(f"\n• {one_line(str(fact.get('fact', '')), 200)}")
    return text
