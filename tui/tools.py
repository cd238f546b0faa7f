"""The Tools screen: every tool your companion's turns get, by tier, on or off, and your forged
tools, over ``/api/tools`` — the routes behind which ``manage_tools``, ``create_tool`` and
``install_tool`` keep their rules.

Space turns the tool under the cursor off or on (from the next message; the protected ones stay
on), ``f`` forges a tool, ``i`` installs one from GitHub, ``t`` tries the forged tool under the
cursor with an input (``tui/tool_forms.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from hub.client.http import HubClient, HubError
from tui.settings.forms import Answer
from tui.table_layout import CELL_PADDING
from tui.tables import Cells, cursor_key, one_line
from tui.tool_forms import ForgeForm, InstallForm, ToolDraft, TryForm
from tui.widgets import KeysFooter

COLUMNS = ("tool", "tier", "on", "what")
WHAT_CHARS = 48
"""The most of a description shown; less where the screen is narrower."""
SCROLLBAR = 2


def tool_cells(tool: dict[str, Any], what_chars: int) -> Cells:
    state = Text("on", style="green") if tool.get("on") else Text("off", style="dim")
    if tool.get("protected"):
        state = Text("on (kept)", style="green")
    described = one_line(str(tool.get("description", "")), what_chars)
    return (str(tool.get("name")), str(tool.get("tier")), state, described)


def column_widths(tools: list[dict[str, Any]], width: int) -> tuple[int, ...]:
    """Each column's width in ``width``: a name and a tier whole, and a description that
    ends after its last whole word that fits, never cut at the screen's edge. The widths are
    set when the rows are, so the table is never drawn at its labels' widths while it
    measures its cells (as it would be behind a dialog that opens meanwhile)."""
    names = max([len(COLUMNS[0]), *(len(str(t.get("name"))) for t in tools)])
    tiers = max([len(COLUMNS[1]), *(len(str(t.get("tier"))) for t in tools)])
    state = len("on (kept)")
    used = names + tiers + state + CELL_PADDING * len(COLUMNS) + SCROLLBAR
    return names, tiers, state, max(len(COLUMNS[3]), min(WHAT_CHARS, width - used))


class ToolsScreen(Screen[None]):
    DEFAULT_CSS = """
    ToolsScreen #status { height: auto; padding: 0 1; color: $text-muted; }
    ToolsScreen #status.problem { color: $error; }
    ToolsScreen #tools { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "switch", "On/off", id="tools_switch"),
        Binding("f", "forge", "Forge", id="tools_forge"),
        Binding("i", "install", "Install", id="tools_install"),
        Binding("t", "try", "Try", id="tools_try"),
        Binding("r", "refresh", "Refresh", id="tools_refresh"),
    ]

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="tools")
        self.client = client
        self.tools: dict[str, dict[str, Any]] = {}
        self.forged: dict[str, dict[str, Any]] = {}
        self.answer: Answer | None = None
        self.show_next = ""
        """A tool just forged or installed: the cursor goes to it once it is listed."""
        self.shown_width = 0
        """The screen's width when the table was last filled."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="status")
        yield DataTable(id="tools", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_screen_resume(self) -> None:
        self.query_one("#tools", DataTable).focus()
        self.load()

    def action_refresh(self) -> None:
        self.load()

    @work(exclusive=True, group="tools")
    async def load(self) -> None:
        try:
            answer = await self.client.call("GET", "/api/tools")
        except HubError as exc:
            self.say(f"{exc}; r to retry", problem=True)
            return
        self.show(answer)

    def on_resize(self) -> None:
        # Only a new width changes what a description may take; a resize at the same width
        # (a dialog opening over the screen) leaves the table as it is.
        if self.answer is not None and self.size.width != self.shown_width:
            self.show(self.answer)

    def show(self, answer: Answer) -> None:
        self.answer = answer
        self.tools = {str(t["name"]): t for t in answer.get("tools", [])}
        self.forged = {str(t["name"]): t for t in answer.get("forged", [])}
        table = self.query_one("#tools", DataTable)
        kept = self.show_next or cursor_key(table)
        self.show_next = ""
        table.clear(columns=True)
        # Your own first: the forged tier, then the rest as the turns mount them.
        ordered = sorted(self.tools.values(), key=lambda t: (t.get("tier") != "forged", t["name"]))
        self.shown_width = self.size.width
        widths = column_widths(ordered, self.shown_width)
        for name, width in zip(COLUMNS, widths, strict=True):
            table.add_column(name, key=name, width=width)
        for tool in ordered:
            table.add_row(*tool_cells(tool, widths[-1]), key=str(tool["name"]))
        if kept in self.tools:
            table.move_cursor(row=table.get_row_index(kept))
        off = sum(1 for t in self.tools.values() if not t.get("on"))
        trusted = ", ".join(answer.get("trusted", [])) or "none"
        self.say(
            f"{len(self.tools)} tools, {len(self.forged)} forged by you, {off} off · "
            f"trusted GitHub owners: {trusted}"
        )

    def say(self, text: str, *, problem: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(Text(text))
        status.set_class(problem, "problem")

    def action_switch(self) -> None:
        name = cursor_key(self.query_one("#tools", DataTable))
        if name is not None and name in self.tools:
            self.switch(name, not self.tools[name].get("on"))

    @work(group="tools-switch")
    async def switch(self, name: str, on: bool) -> None:
        try:
            await self.client.call("PATCH", f"/api/tools/{quote(name, safe='')}", body={"on": on})
        except HubError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"{name} is {'on' if on else 'off'} from the next message")
        self.load()

    def action_forge(self) -> None:
        self.app.push_screen(ForgeForm(self._post("/api/tools")), self._saved)

    def action_install(self) -> None:
        self.app.push_screen(InstallForm(self._post("/api/tools/install")), self._saved)

    def action_try(self) -> None:
        name = cursor_key(self.query_one("#tools", DataTable))
        if name is None or name not in self.forged:
            self.notify("only your forged tools can be tried here: f forges one")
            return
        path = f"/api/tools/{quote(name, safe='')}/run"
        self.app.push_screen(TryForm(name, self._post(path)))

    def _post(self, path: str) -> Any:
        async def post(draft: ToolDraft) -> Answer:
            return await self.client.call("POST", path, body=draft.body)

        return post

    def _saved(self, answer: Answer | None) -> None:
        if answer is None:
            return
        name = answer.get("tool", {}).get("name", "the tool")
        self.show_next = name
        self.notify(f"{name} is yours: it can be called from the next message")
        self.load()
