"""The memory screen: what the hub remembers about you, searchable, with each fact's history,
the two ways to forget — one fact, or everything — and what was forgotten recently.

Everything goes through ``/learnings`` exactly as a phone would. Forgetting is behind a modal:
unlearning one fact asks yes/no (it can be brought back from the recently forgotten list until
the grace period ends), clearing everything asks for the word "all" typed out, because it is
the one path that deletes at once. ``f`` switches the list to what was forgotten recently (by
this screen, or by a confirmed request in chat), and ``b`` brings the selected forgetting back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Header, Input, Static

from hub.client.http import HubClient, HubError
from tui.forgotten import FORGOTTEN_COLUMNS, forgotten_detail, forgotten_row
from tui.guidance import memory_guidance
from tui.tables import cursor_key, one_line
from tui.widgets import AskTextScreen, ConfirmScreen, KeysFooter

Fact = dict[str, Any]
T = TypeVar("T")

FACT_COLUMNS = (("fact", "fact"), ("kind", "kind"), ("learned", "learned"))
RECENT_LIMIT = 200
MATCH_LIMIT = 20
FACT_CHARS = 44
CLEAR_WORD = "all"


def stamp(iso: Any) -> str:
    """The hub's UTC ``2024-05-01T10:02:03.123456Z`` as local ``2024-05-01 12:02``: enough to
    tell versions apart, in the reader's own hours."""
    if not iso:
        return "now"
    try:
        return datetime.fromisoformat(str(iso)).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(iso)[:16]


def detail_text(fact_id: str, trail: Sequence[Mapping[str, Any]]) -> Text:
    """A fact and its supersedes trail, oldest first, the selected one marked."""
    chosen = next((f for f in trail if f.get("id") == fact_id), None)
    text = Text()
    if chosen is None:
        return Text("This fact is gone.", style="dim")
    text.append(str(chosen.get("fact", "")), style="bold")
    text.append(
        f"\n{chosen.get('kind')} · {chosen.get('visibility')} · id {fact_id}"
        f" · learned {stamp(chosen.get('valid_from'))}",
        style="dim",
    )
    if chosen.get("valid_to"):
        text.append(f" · closed {stamp(chosen.get('valid_to'))}", style="dim")
    if len(trail) < 2:
        text.append("\nNo earlier or later versions.", style="dim")
        return text
    text.append("\nHistory, oldest first:")
    for fact in trail:
        mark = "▶ " if fact.get("id") == fact_id else "  "
        span = f"{stamp(fact.get('valid_from'))} → {stamp(fact.get('valid_to')):<16}"
        text.append(f"\n{mark}{span}  ", style="bold" if mark.strip() else "dim")
        text.append(one_line(str(fact.get("fact", "")), 200))
    return text


# --- the screen -------------------------------------------------------------------------------


class MemoryScreen(Screen[None]):
    DEFAULT_CSS = """
    MemoryScreen #status { height: auto; padding: 0 1; color: $text-muted; }
    MemoryScreen #status.problem { color: $error; }
    MemoryScreen #facts { height: 1fr; min-height: 4; }
    MemoryScreen #detail {
        height: auto; max-height: 9; padding: 0 1; border-top: solid $primary;
        overflow-y: auto;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_search", "Search", id="memory_search"),
        Binding("escape", "clear_search", "Recent", id="memory_recent"),
        Binding("down", "focus_facts", "Facts", id="memory_facts", show=False),
        Binding("delete,d", "unlearn", "Unlearn", id="unlearn"),
        Binding("X", "clear_all", "Clear all", id="clear_all"),
        Binding("f", "toggle_forgotten", "Forgotten", id="memory_forgotten"),
        Binding("b", "bring_back", "Bring back", id="memory_bring_back"),
        Binding("r", "refresh", "Refresh", id="refresh"),
    ]

    AUTO_FOCUS = "#facts"  # so / goes to the search box instead of being typed into it
    search_delay_s: ClassVar[float] = 0.3
    """Search once typing pauses, not on every key (each search embeds the query)."""

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="memory")
        self.client = client
        self.facts: dict[str, Fact] = {}
        self.forgettings: dict[str, dict[str, Any]] = {}
        self.showing_forgotten = False
        """The list shows what was forgotten recently instead of the current facts."""
        self.model: dict[str, Any] = {}
        """The model that answers, as /api/health said when the list was last empty."""
        self._skip_resume = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="Search your memory (empty: the newest facts)", id="search")
        yield Static("", id="status")
        yield DataTable(id="facts", cursor_type="row", zebra_stripes=True)
        yield Static("", id="detail")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#facts", DataTable).add_columns(*FACT_COLUMNS)

    def on_screen_resume(self) -> None:
        """Facts change behind this screen (the companion learns in chat): reload on every
        visit — but not when a confirmation closes, or the reload would race its write."""
        if self._skip_resume:
            self._skip_resume = False
            return
        self.load(self.query_text)

    @property
    def query_text(self) -> str:
        return self.query_one("#search", Input).value.strip()

    # --- listing and search ---------------------------------------------------------------

    @on(Input.Changed, "#search")
    def typed(self) -> None:
        self.load(self.query_text, self.search_delay_s)

    @on(Input.Submitted, "#search")
    def submitted(self) -> None:
        self.load(self.query_text)
        self.action_focus_facts()

    @work(exclusive=True, group="list")
    async def load(self, query: str, delay: float = 0.0) -> None:
        """The newest facts, or the best matches for ``query``; a newer call cancels this."""
        if delay:
            await asyncio.sleep(delay)
        if self.showing_forgotten:
            await self.load_forgotten()
            return
        params: dict[str, str | int] = (
            {"q": query, "limit": MATCH_LIMIT} if query else {"limit": RECENT_LIMIT}
        )
        try:
            answer = await self.client.call("GET", "/learnings", params=params)
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        facts = [f for f in answer.get("learnings", []) if isinstance(f, dict)]
        if not facts and not query:
            self.model = await self.model_of_hub()
        self.show_facts(facts)
        count = f"{len(facts)} fact{'s' * (len(facts) != 1)}"
        self.say(f"{count}, best match for “{query}” first" if query else f"{count}, newest first")

    async def model_of_hub(self) -> dict[str, Any]:
        """/api/health's model (empty when the hub cannot say): the empty list's hint."""
        try:
            model = (await self.client.health()).get("model")
        except (HubError, TimeoutError):
            return {}
        return model if isinstance(model, dict) else {}

    def show_facts(self, facts: Sequence[Fact]) -> None:
        """Redraw the list, keeping the cursor on the same fact when it is still there."""
        table = self.query_one("#facts", DataTable)
        was = self.selected_id()
        self.facts = {str(f.get("id")): f for f in facts}
        self.forgettings = {}
        table.clear(columns=True)
        table.add_columns(*FACT_COLUMNS)
        for fact in facts:
            table.add_row(
                one_line(str(fact.get("fact", "")), FACT_CHARS),
                str(fact.get("kind", "")),
                stamp(fact.get("valid_from")),
                key=str(fact.get("id")),
            )
        if was in self.facts:
            table.move_cursor(row=table.get_row_index(was))
        selected = self.selected_id()
        if selected is not None:
            self.load_detail(selected)  # not left to RowHighlighted: the row may not move
        else:
            empty = (
                "Nothing matches."
                if self.query_text
                else f"No facts yet. {memory_guidance(self.model)}"
            )
            self.query_one("#detail", Static).update(Text(empty, style="dim"))

    def selected_id(self) -> str | None:
        key = cursor_key(self.query_one("#facts", DataTable))
        return key if key in self.facts else None

    # --- a fact's detail ------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#facts")
    def highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key in self.forgettings:
            self.query_one("#detail", Static).update(forgotten_detail(self.forgettings[key]))
        elif key:
            self.load_detail(key)

    @work(exclusive=True, group="detail")
    async def load_detail(self, fact_id: str) -> None:
        detail = self.query_one("#detail", Static)
        try:
            answer = await self.client.call("GET", "/learnings/history", params={"id": fact_id})
        except (HubError, TimeoutError) as exc:
            detail.update(Text(str(exc) or "the hub did not answer in time", style="red"))
            return
        detail.update(detail_text(fact_id, answer.get("history", [])))

    # --- forgetting -------------------------------------------------------------------------

    def action_unlearn(self) -> None:
        if self.showing_forgotten:
            self.notify("This lists what was forgotten: press f for your facts.", timeout=4)
            return
        fact_id = self.selected_id()
        if fact_id is None:
            self.notify("Select a fact to unlearn first.", severity="warning")
            return
        question = Text.assemble(
            "Unlearn this fact?\n\n",
            (one_line(str(self.facts[fact_id].get("fact", "")), 300), "bold"),
            (
                "\n\nIt leaves recall and listings; you can bring it back from the recently "
                "forgotten list (f) until the hub deletes it for good.",
                "dim",
            ),
        )
        modal = ConfirmScreen(question, "Unlearn", "Cancel", danger=True)
        self._ask(modal, partial(self._unlearn_answered, fact_id))

    def _unlearn_answered(self, fact_id: str, yes: bool | None) -> None:
        if yes:
            self.forget({"id": fact_id}, "Unlearned.")

    def action_clear_all(self) -> None:
        question = (
            "Forget EVERYTHING the hub remembers about you? Facts, history and vectors are "
            f"deleted; this cannot be undone.\n\nType {CLEAR_WORD} and press Enter (Escape "
            "cancels)."
        )
        self._ask(AskTextScreen(question, f"type {CLEAR_WORD}", danger=True), self._clear_answered)

    def _clear_answered(self, typed: str | None) -> None:
        if typed is None:
            return
        if typed.strip().lower() == CLEAR_WORD:
            self.forget({"scope": CLEAR_WORD}, "Memory cleared.")
        else:
            self.notify(f"Nothing cleared: type the word {CLEAR_WORD} to confirm.")

    def _ask(self, modal: ModalScreen[T], answered: Callable[[T | None], None]) -> None:
        self._skip_resume = True
        self.app.push_screen(modal, answered)

    @work(exclusive=True, group="write")
    async def forget(self, params: dict[str, str | int], done: str) -> None:
        try:
            answer = await self.client.call("DELETE", "/learnings", params=params)
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        if "cleared" in answer:
            done = f"{done} {answer['cleared']} facts deleted."
        if isinstance(answer.get("forgetting"), dict):
            until = str(answer["forgetting"].get("delete_after", ""))[:10]
            done = f"{done} Press f, then b, to bring it back (until {until})."
        self.notify(done)
        self.load(self.query_text)

    # --- recently forgotten ------------------------------------------------------------------

    def action_toggle_forgotten(self) -> None:
        self.showing_forgotten = not self.showing_forgotten
        self.load(self.query_text)
        self.action_focus_facts()

    async def load_forgotten(self) -> None:
        try:
            answer = await self.client.call("GET", "/learnings/forgotten")
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        listing = [f for f in answer.get("forgotten", []) if isinstance(f, dict)]
        table = self.query_one("#facts", DataTable)
        self.facts, self.forgettings = {}, {str(f.get("id")): f for f in listing}
        table.clear(columns=True)
        table.add_columns(*FORGOTTEN_COLUMNS)
        for made in listing:
            table.add_row(*forgotten_row(made), key=str(made.get("id")))
        count = f"{len(listing)} forgetting{'s' * (len(listing) != 1)}"
        self.say(f"{count} you can bring back, newest first (b brings one back, f: your facts)")
        selected = cursor_key(table)
        empty = Text("Nothing was forgotten recently.", style="dim")
        detail = forgotten_detail(self.forgettings[selected]) if selected else empty
        self.query_one("#detail", Static).update(detail)

    def action_bring_back(self) -> None:
        key = cursor_key(self.query_one("#facts", DataTable))
        if not self.showing_forgotten or key not in self.forgettings:
            self.notify("Press f and select what to bring back first.", severity="warning")
            return
        self.bring_back(key)

    @work(exclusive=True, group="write")
    async def bring_back(self, forgetting_id: str) -> None:
        body = {"id": forgetting_id}
        try:
            answer = await self.client.call("POST", "/learnings/forgotten/undo", body=body)
        except (HubError, TimeoutError) as exc:
            self.say(str(exc) or "the hub did not answer in time", problem=True)
            return
        count = len(answer.get("restored", []))
        self.notify(f"Brought back {count} fact{'s' * (count != 1)}.")
        self.load(self.query_text)

    # --- the rest ---------------------------------------------------------------------------

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_focus_facts(self) -> None:
        self.query_one("#facts", DataTable).focus()

    def action_clear_search(self) -> None:
        search = self.query_one("#search", Input)
        search.value = ""  # Input.Changed reloads the newest facts
        search.focus()

    def action_refresh(self) -> None:
        self.load(self.query_text)

    def say(self, line: str, problem: bool = False) -> None:
        """The status line: how many facts, or the hub's own sentence when it refused."""
        status = self.query_one("#status", Static)
        status.update(Text(line))
        status.set_class(problem, "problem")
