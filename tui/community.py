"""The community screen: who and what you follow, the tinys the community trusts most, and your
standing.

Everything goes through ``/community``, ``/follow`` and ``/reputation`` exactly as a phone
would. Following asks for a ``@login`` or a tiny's name; unfollowing acts on the selected row
of the list of what you follow, and says what it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from hub.client.http import HubClient, HubError
from tui.tables import cursor_key
from tui.widgets import AskTextScreen, KeysFooter

RANKING_LIMIT = 50


def follow_body(typed: str) -> dict[str, str] | None:
    """What was typed → a /follow body: ``@bea`` a person, ``chef`` or ``tiny:chef`` a tiny;
    None for nothing."""
    text = typed.strip()
    if not text:
        return None
    if text.startswith("@"):
        return {"login": text}
    return {"tiny": text.removeprefix("tiny:")}


def standing_line(reputation: Mapping[str, Any]) -> str:
    breakdown = reputation.get("breakdown") or {}
    parts = ", ".join(f"{kind.replace('_', ' ')} {points}" for kind, points in breakdown.items())
    return f"{reputation.get('login', '')} · reputation {reputation.get('score', 0)} ({parts})"


class CommunityScreen(Screen[None]):
    DEFAULT_CSS = """
    CommunityScreen #status { height: auto; padding: 0 1; color: $text-muted; }
    CommunityScreen #status.problem { height: auto; color: $error; }
    CommunityScreen #lists { height: 1fr; }
    CommunityScreen #lists > Vertical { width: 1fr; }
    CommunityScreen .title { height: 1; padding: 0 1; text-style: bold; }
    CommunityScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "follow", "Follow", id="community_follow"),
        Binding("u,delete", "unfollow", "Unfollow", id="community_unfollow"),
        Binding("r", "refresh", "Refresh", id="community_refresh"),
    ]

    AUTO_FOCUS = "#following"

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="community")
        self.client = client
        self._skip_resume = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="status")
        with Horizontal(id="lists"):
            with Vertical():
                yield Static("You follow", classes="title")
                yield DataTable(id="following", cursor_type="row", zebra_stripes=True)
            with Vertical():
                yield Static("Most trusted tinys", classes="title")
                yield DataTable(id="trust", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#following", DataTable).add_columns(("whom", "whom"), ("kind", "kind"))
        self.query_one("#trust", DataTable).add_columns(
            ("tiny", "tiny"), ("builder", "builder"), ("trust", "trust")
        )

    def on_screen_resume(self) -> None:
        """Others follow and consult behind this screen: reload on every visit — but not when
        the follow question closes, or the reload would race (and hide) its answer."""
        if self._skip_resume:
            self._skip_resume = False
            return
        self.load()

    # --- reading ------------------------------------------------------------------------------

    @work(exclusive=True, group="load")
    async def load(self) -> None:
        try:
            community = await self.client.call("GET", "/community", params={"limit": RANKING_LIMIT})
            reputation = await self.client.call("GET", "/reputation")
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        self.show_following(community.get("following") or [])
        self.show_trust(community.get("trust") or [])
        self.say(standing_line(reputation))

    def show_following(self, rows: Sequence[Mapping[str, Any]]) -> None:
        table = self.query_one("#following", DataTable)
        table.clear()
        for row in rows:
            target = str(row.get("target", ""))
            table.add_row(target, str(row.get("kind", "")), key=target)
        if not rows:
            table.add_row(Text("nobody yet", style="dim"), "", key="")

    def show_trust(self, rows: Sequence[Mapping[str, Any]]) -> None:
        table = self.query_one("#trust", DataTable)
        table.clear()
        for row in rows:
            trust = row.get("trust", 0)
            table.add_row(
                str(row.get("tiny", "")),
                str(row.get("builder", "")),
                f"{trust:.3f}" if isinstance(trust, int | float) else "",
            )
        if not rows:
            table.add_row(Text("none yet", style="dim"), "", "")

    def selected_target(self) -> str | None:
        return cursor_key(self.query_one("#following", DataTable)) or None

    # --- following ----------------------------------------------------------------------------

    def action_follow(self) -> None:
        question = "Follow whom? A person as @login, or a tiny by its name."
        self._skip_resume = True
        self.app.push_screen(AskTextScreen(question, "@bea or chef"), self._follow_answered)

    def _follow_answered(self, typed: str | None) -> None:
        body = follow_body(typed or "")
        if body is not None:
            self.change({**body, "action": "follow"})

    def action_unfollow(self) -> None:
        target = self.selected_target()
        if target is None:
            self.notify("Select someone you follow first.", severity="warning")
            return
        body = follow_body(target)
        assert body is not None
        self.change({**body, "action": "unfollow"})

    @work(exclusive=True, group="write")
    async def change(self, body: dict[str, str]) -> None:
        try:
            state = await self.client.call("POST", "/follow", body=body)
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        verb = "Following" if state.get("following") else "No longer following"
        self.notify(f"{verb} {state.get('target')}.")
        self.load()

    def action_refresh(self) -> None:
        self.load()

    def say(self, line: str, problem: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(Text(line))
        status.set_class(problem, "problem")
