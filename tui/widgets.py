"""The chat screen's widgets: messages, the reasoning pane, tool cards, follow-up chips, the
status line, the prompt, the sidebar, the yes/no question and the ``render_ui`` components.

It is one module of small widgets (none much over 80 lines) that share the chat screen's
messages and styles.

Widgets only show what they are given and post a message when the person does something
(copy, send, pick a chip); the chat screen decides what that means.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import (
    Button,
    Collapsible,
    Footer,
    Input,
    Label,
    Markdown,
    OptionList,
    Sparkline,
    Static,
    TextArea,
)
from textual.widgets.option_list import Option

from tui.conversations import Conversation, matching
from tui.guidance import can_call_tools, model_words
from tui.tables import clip

COPY_BINDING = Binding("c", "copy", "Copy", id="copy_message")
PREVIEW_CHARS = 300


def shorten(text: str, limit: int = PREVIEW_CHARS) -> str:
    return clip(text.strip(), limit)


class CopyRequested(Message):
    """A message widget asks for its text to go to the clipboard (the screen does it)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class UserMessage(Static, can_focus=True):
    """What the person said. Focus it (Tab or a click) and press ``c`` to copy it."""

    DEFAULT_CSS = """
    UserMessage { margin: 1 0 0 6; padding: 0 1; background: $primary 20%; }
    UserMessage:focus { background: $primary 40%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [COPY_BINDING]

    def __init__(self, text: str) -> None:
        super().__init__(text, markup=False)
        self.text = text

    def action_copy(self) -> None:
        self.post_message(CopyRequested(self.text))


class ReplyMessage(Markdown, can_focus=True):
    """The companion's reply, as Markdown; streamed in with ``Markdown.get_stream``."""

    DEFAULT_CSS = """
    ReplyMessage { margin: 1 6 0 0; padding: 0 1; background: $surface; }
    ReplyMessage:focus { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [COPY_BINDING]

    def action_copy(self) -> None:
        self.post_message(CopyRequested(self.source))


class Notice(Static):
    """A line in the chat from the TUI itself: an error, a warning, or plain information."""

    DEFAULT_CSS = """
    Notice { margin: 1 0 0 0; color: $error; }
    Notice.info { color: $text-muted; }
    Notice.warning { color: $warning; }
    """

    def __init__(self, text: str, severity: str = "error") -> None:
        super().__init__(text, markup=False, classes=severity)
        self.text = text


class ReasoningPane(Collapsible):
    """The model's reasoning, folded away by default: there when wanted, not in the way."""

    DEFAULT_CSS = """
    ReasoningPane { margin: 1 6 0 0; border-top: none; padding-bottom: 0; }
    ReasoningPane Static { color: $text-muted; }
    """

    def __init__(self) -> None:
        self.text = ""
        self._body = Static("", markup=False)
        super().__init__(self._body, title="Reasoning", collapsed=True)

    def add(self, fragment: str) -> None:
        self.text += fragment
        self._body.update(self.text)


def content_text(content: Sequence[Mapping[str, Any]]) -> str:
    """A tool result's content as one readable string: its text, which is written for people
    and the model; the JSON (meant for clients) only when there is no text."""
    texts = [str(block["text"]) for block in content if "text" in block]
    if texts:
        return "\n".join(texts)
    parts: list[str] = []
    for block in content:
        if "json" in block:
            parts.append(json.dumps(block["json"], ensure_ascii=False))
        elif "image" in block:
            parts.append(f"[image: {block['image'].get('format') or 'unknown format'}]")
    return "\n".join(parts)


class ToolCard(Static):
    """One tool call: name, input, status, result or error, and how long it took (measured
    here, from the first event that named it to its result)."""

    DEFAULT_CSS = """
    ToolCard {
        margin: 1 6 0 0; padding: 0 1; border: round $secondary; color: $text-muted;
        height: auto;
    }
    ToolCard.-ok { border: round $success; }
    ToolCard.-error { border: round $error; }
    """

    status: reactive[str] = reactive("calling")

    def __init__(self, tool_use_id: str, name: str) -> None:
        super().__init__("", markup=False)
        self.tool_use_id = tool_use_id
        self.tool_name = name
        self.input: Any = None
        self.partial_input = ""
        self.result = ""
        self.error = ""
        self.duration_s: float | None = None
        self._started = time.monotonic()
        self.border_title = f"⚙ {name}"

    def add_input(self, fragment: str) -> None:
        self.partial_input += fragment
        self._show()

    def running(self, tool_input: Any) -> None:
        self.input = tool_input
        self.status = "running"

    def finished(
        self, status: str, content: Sequence[Mapping[str, Any]], error: str | None
    ) -> None:
        self.duration_s = time.monotonic() - self._started
        self.result = content_text(content)
        self.error = error or ""
        self.status = "ok" if status == "success" else "error"

    def watch_status(self, status: str) -> None:
        self.set_class(status == "ok", "-ok")
        self.set_class(status == "error", "-error")
        took = f" · {self.duration_s:.2f} s" if self.duration_s is not None else ""
        self.border_subtitle = f"{status}{took}"
        self._show()

    def _show(self) -> None:
        if self.input is not None:
            shown_input = json.dumps(self.input, ensure_ascii=False)
        else:
            shown_input = self.partial_input
        lines = [f"input: {shorten(shown_input, 200)}"] if shown_input else []
        if self.status == "error":
            lines.append(f"error: {shorten(self.error or self.result)}")
        elif self.result:
            lines.append(f"result: {shorten(self.result)}")
        self.update("\n".join(lines) or "…")


class Chip(Button):
    DEFAULT_CSS = """
    Chip { min-width: 8; margin: 0 1 0 0; background: $primary 30%; }
    Chip:focus { background: $primary; }
    """

    def __init__(self, number: int, text: str) -> None:
        super().__init__(f" {number} {shorten(text, 36)} ", compact=True)
        self.text = text
        self.tooltip = text


class FollowupChips(Horizontal):
    """``suggest_followups``' chips under the reply: alt+1…4, or focus one and press Enter."""

    DEFAULT_CSS = """
    FollowupChips { height: auto; margin: 1 0 0 0; }
    """

    class Picked(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, suggestions: Sequence[str]) -> None:
        super().__init__(*(Chip(i, s) for i, s in enumerate(suggestions[:4], 1)))
        self.suggestions = list(suggestions[:4])

    @on(Button.Pressed)
    def _picked(self, event: Button.Pressed) -> None:
        event.stop()
        if isinstance(event.button, Chip):
            self.post_message(self.Picked(event.button.text))


SEPARATOR = Text(" · ")


def status_parts(health: Mapping[str, Any] | None, problem: str) -> list[Text]:
    """What the bottom line must say: which model answers and whether it calls tools, or why
    there is no hub."""
    if problem:
        return [Text(f"⚠ {shorten(problem, 76)}", style="bold red")]
    if health is None:
        return [Text("connecting to the hub…", style="dim")]
    model = health.get("model") or {}
    if can_call_tools(model):
        return [Text(model_words(model))]
    # what limits the companion most: said first, in the warning's colour
    return [Text(f"⚠ {model_words(model)}", style="bold yellow")]


def usage_parts(usage: Mapping[str, int], total: int) -> list[Text]:
    """What the bottom line says when there is room: the tokens of the last turn and chat."""
    parts: list[Text] = []
    if usage:
        parts.append(Text(f"last {usage.get('inputTokens', 0)}→{usage.get('outputTokens', 0)} tok"))
    if total:
        parts.append(Text(f"chat {total} tok"))
    return parts


def fitted(needed: Sequence[Text], extras: Sequence[Text], width: int) -> Text:
    """``needed`` then as many of ``extras`` (in order) as fit ``width`` cells, joined by
    " · ": an extra that does not fit is left out whole, never cut off at the edge; what is
    needed and still does not fit wraps (the line grows a row)."""
    shown = list(needed)
    for extra in extras:
        if SEPARATOR.join([*shown, extra]).cell_len <= width:
            shown.append(extra)
    return SEPARATOR.join(shown)


class StatusLine(Static):
    """Model, tools, token usage, or the offline/unreachable warning. Set its attributes.

    At its width it says what it must and adds the token counts that fit; nothing is cut at
    the edge: what it must say and cannot fit in one row takes a second one."""

    DEFAULT_CSS = """
    StatusLine { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    """

    health: reactive[dict[str, Any] | None] = reactive(None)
    problem: reactive[str] = reactive("")
    usage: reactive[dict[str, int]] = reactive(dict)
    total_tokens: reactive[int] = reactive(0)

    def needed(self) -> list[Text]:
        """What the line must say, most important first."""
        return status_parts(self.health, self.problem)

    def extras(self) -> list[Text]:
        """What it adds when there is room, in the order it is given room."""
        if self.problem or self.health is None:
            return []
        return usage_parts(self.usage, self.total_tokens)

    def render(self) -> Text:
        width = self.content_size.width or 10_000  # not laid out yet: all of it
        return fitted(self.needed(), self.extras(), width)

    @property
    def plain(self) -> str:
        return self.render().plain


def _is_function_key(binding: BindingType) -> bool:
    key = binding.key if isinstance(binding, Binding) else binding[0]
    return any(k.strip().startswith("f") and k.strip()[1:].isdigit() for k in key.split(","))


class Prompt(TextArea, inherit_bindings=False):
    """The message being written. Enter sends; the newline key (shift+enter or ctrl+j, any key
    with ``newline = "..."`` in tui.toml) starts a new line.

    TextArea's F-key bindings (f6 select line, f7 select all) are left out: function keys
    belong to the app (F1-F4 switch screens, and tui.toml may move them, e.g. to F6)."""

    DEFAULT_CSS = """
    Prompt { height: auto; min-height: 3; max-height: 8; background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *(b for b in TextArea.BINDINGS if not _is_function_key(b)),
        Binding("enter", "send", "Send", id="send", priority=True),
        Binding("ctrl+j,shift+enter", "newline", "Newline", id="newline", priority=True),
    ]

    class Submitted(Message):
        def __init__(self, prompt: Prompt, text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

        @property
        def control(self) -> Prompt:
            return self.prompt

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            compact=True,
            placeholder="Say something to your companion…",
        )

    def action_send(self) -> None:
        # A priority binding runs as soon as the app reads the key, while the characters
        # that came before it in the same burst (a paste, a voice-typing tool, tmux
        # send-keys) still wait in this widget's queue: read the text after them.
        self.call_later(self._send_typed)

    def _send_typed(self) -> None:
        # Cleared here, at once: keys typed after Enter (the next message of a burst) stay.
        text = self.text
        if text.strip():
            self.clear()
        self.post_message(self.Submitted(self, text))

    def action_newline(self) -> None:
        self.call_later(self.insert, "\n")  # after the characters typed before it, as above


class QueuedMessages(Static):
    """What was sent while a reply was still coming: each message (and a new conversation
    asked for with its key) waits here, in order, until the reply ends."""

    DEFAULT_CSS = """
    QueuedMessages { height: auto; max-height: 6; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.display = False

    def show(self, queued: Sequence[str]) -> None:
        self.display = bool(queued)
        lines = [f"⏳ {len(queued)} queued, sent when this reply ends (Esc: stop it and edit)"]
        self.update("\n".join([*lines, *(f"  • {shorten(q, 120)}" for q in queued)]))


class ConversationList(OptionList):
    """The kept conversations: Enter continues one; r renames it, d deletes it (the chat
    screen asks first), / goes to the search box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search", id="search_conversations"),
        Binding("r", "rename", "Rename", id="rename_conversation"),
        Binding("delete,d", "delete", "Delete", id="delete_conversation"),
    ]

    class Rename(Message):
        def __init__(self, conversation_id: str) -> None:
            super().__init__()
            self.conversation_id = conversation_id

    class Delete(Message):
        def __init__(self, conversation_id: str) -> None:
            super().__init__()
            self.conversation_id = conversation_id

    def highlighted_id(self) -> str | None:
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id

    def action_search(self) -> None:
        self.screen.query_one("#conversation-search", Input).focus()

    def action_rename(self) -> None:
        chosen = self.highlighted_id()
        if chosen is not None:
            self.post_message(self.Rename(chosen))

    def action_delete(self) -> None:
        chosen = self.highlighted_id()
        if chosen is not None:
            self.post_message(self.Delete(chosen))


class Sidebar(Vertical):
    """Conversations kept on this machine, searchable by title and text, and the local notes."""

    DEFAULT_CSS = """
    Sidebar { width: 28; dock: left; border-right: solid $panel; display: none; }
    Sidebar.-shown { display: block; }
    Sidebar Label { color: $text-muted; padding: 0 1; }
    Sidebar Input { margin: 0 1; }
    Sidebar OptionList { height: 1fr; border: none; }
    Sidebar #notes { height: auto; max-height: 10; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.conversations: list[Conversation] = []
        self.current = ""

    def compose(self) -> ComposeResult:
        yield Label("Conversations")
        yield Input(placeholder="search titles and text", id="conversation-search", compact=True)
        yield ConversationList(id="conversations")
        yield Label("Notes (this device only)")
        yield Static("", id="notes", markup=False)

    def show_conversations(self, conversations: Sequence[Conversation], current: str) -> None:
        self.conversations, self.current = list(conversations), current
        self._list()

    @on(Input.Changed, "#conversation-search")
    def _list(self) -> None:
        query = self.query_one("#conversation-search", Input).value
        found = matching(self.conversations, query)
        options = self.query_one("#conversations", OptionList)
        options.set_options(
            Option(("● " if conv.id == self.current else "") + conv.title, id=conv.id)
            for conv in found
        )
        if query and not found:
            options.add_option(Option("nothing matches", disabled=True))
        elif found:
            options.highlighted = 0  # r and d act on a row even before the cursor moves

    @on(Input.Submitted, "#conversation-search")
    def _to_the_list(self) -> None:
        self.query_one("#conversations", OptionList).focus()

    def show_notes(self, notes: Sequence[str]) -> None:
        text = "\n".join(f"• {shorten(n, 80)}" for n in notes) or "(none)"
        self.query_one("#notes", Static).update(text)


def cells_for(shown: Sequence[tuple[Binding, bool, str]]) -> int:
    """How many cells Footer.compose makes of these bindings: one per action, two per group
    (its keys, its label)."""
    group_of = {binding.action: binding.group for binding, _, _ in shown}
    groups = {group for group in group_of.values() if group is not None}
    return sum(1 for group in group_of.values() if group is None) + 2 * len(groups)


class KeysFooter(Footer):
    """Every binding the screen shows, on as many rows as the terminal's width needs (up to
    ``MAX_ROWS``), so no key is cut off at 80 columns and none is hidden to make room.

    Footer.compose makes one cell per action (two per group: its keys, its label); here they
    go into a grid, and a grid wider than the footer gets one more row and is laid out
    again. A new width or another set of bindings starts again from one row.

    Textual says the bindings changed on every focus move and mount (dozens of times while a
    screen starts), and Footer rebuilds every key each time, one restyle per key; here the
    keys are rebuilt only when what they show changed, once however often it was said."""

    DEFAULT_CSS = """
    KeysFooter {
        layout: grid; grid-columns: auto; grid-rows: 1; grid-gutter: 0 1; height: 1;
        &.-compact FooterKey { margin: 0; }
        &.-compact KeyGroup { margin: 0; padding: 0; }
    }
    """
    MAX_ROWS = 3

    def __init__(self, *, compact: bool = True, show_command_palette: bool = False) -> None:
        super().__init__(compact=compact, show_command_palette=show_command_palette)
        self.rows = 1
        self._laid_out_for: tuple[int, int] = (0, 0)
        self._regrowing = False
        self._composed_from: tuple[tuple[Binding, bool, str], ...] | None = None
        self._recompose_queued = False

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not (self.is_attached and screen is self.screen):
            return
        if not self._recompose_queued and self._shown() != self._composed_from:
            self._recompose_queued = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_queued = False
        await self.recompose()

    def _shown(self) -> tuple[tuple[Binding, bool, str], ...]:
        """What the keys show: each shown binding (compared by its fields: keys, label,
        action, group), enabled or not, and its tooltip."""
        return tuple(
            (binding, enabled, tooltip)
            for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()
            if binding.show
        )

    def compose(self) -> ComposeResult:
        shown = self._shown()
        items = cells_for(shown)
        if self._laid_out_for != (items, self.size.width):
            self.rows = 1  # another set of keys or another width: fit them afresh
        if self._bindings_ready:
            self._composed_from = shown
        yield from super().compose()
        self._regrowing = False
        self._laid_out_for = (items, self.size.width)
        self.styles.grid_size_columns = max(1, -(-items // self.rows))
        self.styles.height = self.rows

    def on_resize(self) -> None:
        if self._laid_out_for[1] != self.size.width:
            self.call_later(self.recompose)

    def watch_virtual_size(self) -> None:
        """The keys were laid out: one more row when they are wider than the footer."""
        too_wide = self.virtual_size.width > self.size.width > 0
        if too_wide and self.rows < self.MAX_ROWS and not self._regrowing:
            self.rows, self._regrowing = self.rows + 1, True
            self.call_later(self.recompose)


class ConfirmScreen(ModalScreen[bool]):
    """The app's one yes/no question (opening a link, unlearning a fact, unpairing a phone):
    y or the yes button goes ahead; n, Escape or the no button does not. The no button has the
    focus, so a stray Enter answers no. `danger` marks an act that cannot be taken back."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 64; max-width: 100%; height: auto; max-height: 100%; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    ConfirmScreen.danger > Vertical { border: thick $error; }
    ConfirmScreen #question { height: auto; max-height: 16; overflow-y: auto; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """
    AUTO_FOCUS = "#no"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
    ]

    def __init__(
        self, question: str | Text, yes: str = "Yes", no: str = "No", *, danger: bool = False
    ) -> None:
        super().__init__(classes="danger" if danger else None)
        self.question, self.yes, self.no, self.danger = question, yes, no, danger

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question", markup=False)
            with Horizontal():
                yield Button(
                    f"{self.yes} (y)", id="yes", variant="error" if self.danger else "warning"
                )
                yield Button(f"{self.no} (n)", id="no")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class AskTextScreen(ModalScreen[str | None]):
    """Ask for a line of text (a new title, a word to type to go on): what was typed and
    Enter, or None for Escape."""

    DEFAULT_CSS = """
    AskTextScreen { align: center middle; }
    AskTextScreen > Vertical {
        width: 64; max-width: 100%; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    AskTextScreen.danger > Vertical { border: thick $error; }
    AskTextScreen Input { margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="confirm_no"),
    ]

    def __init__(
        self, question: str, placeholder: str, value: str = "", *, danger: bool = False
    ) -> None:
        super().__init__(classes="danger" if danger else None)
        self.question, self.placeholder, self.value = question, placeholder, value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, markup=False)
            yield Input(self.value, placeholder=self.placeholder, id="word")

    @on(Input.Submitted, "#word")
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


# --- render_ui: props only, drawn with what a terminal has --------------------------------------

EIGHTHS = " ▏▎▍▌▋▊▉"
BAR_WIDTH = 32


class UiComponent(Vertical):
    """A ``render_ui`` result in the chat; ``component`` says which kind it is."""

    DEFAULT_CSS = """
    UiComponent { height: auto; margin: 1 6 0 0; padding: 0 1; border: round $accent; }
    UiComponent Sparkline { height: 3; }
    """

    def __init__(self, component: str, title: str, *children: Widget) -> None:
        super().__init__(*children)
        self.component = component
        if title:
            self.border_title = title


def _numbers(values: Any) -> list[float]:
    if not isinstance(values, list) or not values:
        raise ValueError("values must be a non-empty list of numbers")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError("values must all be numbers")
    return [float(v) for v in values]


def _labels(props: Mapping[str, Any], count: int) -> list[str]:
    labels = props.get("labels") or []
    if not isinstance(labels, list):
        raise ValueError("labels must be a list")
    return [str(x) for x in labels[:count]] + [str(i + 1) for i in range(len(labels), count)]


def bar_lines(labels: Sequence[str], values: Sequence[float], width: int = BAR_WIDTH) -> str:
    """Horizontal bars of block characters, eighths for the remainder; negatives draw none."""
    top = max((abs(v) for v in values), default=0.0) or 1.0
    label_width = min(max(len(label) for label in labels), 16)
    lines = []
    for label, value in zip(labels, values, strict=True):
        cells = max(value, 0.0) / top * width
        full, eighth = int(cells), int((cells - int(cells)) * 8)
        bar = "█" * full + (EIGHTHS[eighth] if eighth else "")
        lines.append(f"{label[:label_width]:<{label_width}} {bar} {value:g}")
    return "\n".join(lines)


def _table(props: Mapping[str, Any]) -> Widget:
    columns, rows = props.get("columns"), props.get("rows")
    if not isinstance(columns, list) or not columns:
        raise ValueError("a table needs columns: a non-empty list")
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise ValueError("a table needs rows: a list of lists")
    table = Table(*(str(col) for col in columns), expand=False)
    for row in rows:
        cells = [str(cell) for cell in row[: len(columns)]]
        table.add_row(*cells, *([""] * (len(columns) - len(cells))))
    return Static(table)


def _key_value(props: Mapping[str, Any]) -> Widget:
    items = props.get("items")
    if isinstance(items, list) and all(isinstance(i, list) and len(i) == 2 for i in items):
        items = {str(k): v for k, v in items}
    if not isinstance(items, dict) or not items:
        raise ValueError("key_value needs items: a non-empty mapping")
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column()
    for key, value in items.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(str(key), shown)
    return Static(table)


def build_component(component: str, props: Any) -> UiComponent:
    """The widget for a ``render_ui`` request; ValueError says what is wrong with the props."""
    if not isinstance(props, dict):
        raise ValueError("props must be an object")
    title = str(props.get("title") or "")
    if component == "table":
        return UiComponent(component, title, _table(props))
    if component == "key_value":
        return UiComponent(component, title, _key_value(props))
    if component == "bar_chart":
        values = _numbers(props.get("values"))
        labels = _labels(props, len(values))
        return UiComponent(component, title, Static(bar_lines(labels, values), markup=False))
    if component == "line_chart":
        values = _numbers(props.get("values"))
        labels = _labels(props, len(values))
        scale = f"{labels[0]} … {labels[-1]} · min {min(values):g} · max {max(values):g}"
        return UiComponent(component, title, Sparkline(values), Label(scale, markup=False))
    raise ValueError(f"this terminal cannot draw a {component!r}")
