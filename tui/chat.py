"""The chat screen: type, watch the reply stream in, stop it, keep the conversation.

It is one module on purpose: the screen and its turn worker share the conversation being
written; the widgets are in ``tui/widgets.py``.

Streamed over the hub's HTTP API exactly as a phone would (``HubClient.stream_chat``). One turn
is one worker: its events become widgets in the log (Markdown text written through
``Markdown.get_stream`` so a long reply stays fast, a folded reasoning pane, a card per tool
call), client tools are acted on here (``tui/client_tools.py``), and the conversation is saved
on this machine (``tui/conversations.py``) when it is sent and again with whatever arrived —
also when the reply is stopped or the hub goes away.

From Enter to the last token the status line says what the turn is doing and for how long
(``hub/client/progress.py``). What is sent while a reply is coming (Enter, a chip, Ctrl+N) is queued
on screen and sent in order when it ends; Esc stops the reply and puts the queued messages
back into the prompt.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Markdown, OptionList
from textual.widgets.markdown import MarkdownStream
from textual.worker import Worker

from hub import contracts as c
from hub.client.conversation import TurnRecorder, readable
from hub.client.http import HubClient, HubError
from hub.client.progress import TurnProgress
from hub.client.proposals import VERBS, answered_text, proposal_of
from tui.client_tools import (
    CLIPBOARD_CAVEAT,
    ClientTools,
    Outcome,
    client_request,
    register_themes,
    restore_theme,
    suggestions_of,
)
from tui.config import TuiConfig
from tui.confirmation import ConfirmationCard
from tui.conversations import Conversation, ConversationStore, Message
from tui.export import conversation_markdown, export_name
from tui.guidance import EmptyChat, model_words
from tui.widgets import (
    AskTextScreen,
    ConfirmScreen,
    ConversationList,
    CopyRequested,
    FollowupChips,
    KeysFooter,
    Notice,
    Prompt,
    QueuedMessages,
    ReasoningPane,
    ReplyMessage,
    Sidebar,
    StatusLine,
    ToolCard,
    UserMessage,
)

__all__ = ["ChatScreen", "Notice", "ReplyMessage", "UserMessage"]

CHIPS = Binding.Group("Chip")
CLIENT_KIND = "terminal"
CLIENT_CAN = (c.CAN_MAP, c.CAN_SOUND)
STOPPED = "stopped (closing the stream stops the model too); what arrived is kept"
NEW_CONVERSATION = "then: a new conversation"
"""A queued Ctrl+N (None in the queue), as the queue shows it."""
PROGRESS_EVERY_S = 1.0
PREPARING_EVERY_S = 2
"""Ticks of the progress line between two health checks while the model gets ready."""


def model_summary(model: dict[str, Any]) -> str:
    """The header's words on the model /api/health (or a turn) reported."""
    return model_words(model)


def hub_changed(before: dict[str, Any] | None, now: dict[str, Any]) -> bool:
    """Whether ``now`` is another hub than ``before``: none seen yet, a restart (its uptime
    went back) or another default model. A turn's model then no longer says what answers."""
    if before is None:
        return True
    uptime_before, uptime_now = before.get("uptime"), now.get("uptime")
    restarted = (
        isinstance(uptime_before, int | float)
        and isinstance(uptime_now, int | float)
        and uptime_now < uptime_before
    )
    return restarted or before.get("model") != now.get("model")


def cloud_warning(cloud: object) -> str:
    """The status line's word on the cloud link (/api/health's ``cloud``): only when it is
    offline or refused; nothing when off, starting or online."""
    if not isinstance(cloud, dict):
        return ""
    if cloud.get("state") == "refused":
        return "⚠ cloud refused the token"
    if cloud.get("state") != "offline":
        return ""
    since = cloud.get("since")
    if isinstance(since, int | float) and not isinstance(since, bool):
        return f"⚠ cloud offline since {time.strftime('%H:%M', time.localtime(since))}"
    return "⚠ cloud offline"


class ChatStatusLine(StatusLine):
    """The status line, with the cloud link's warning in front when it is offline or refused.
    ``cloud`` is kept apart from ``health`` so a turn's model id (set into ``health``) and the
    periodic health check do not overwrite each other."""

    cloud: reactive[dict[str, Any] | None] = reactive(None)
    repairs: reactive[dict[str, Any] | None] = reactive(None)
    embedded: reactive[dict[str, Any] | None] = reactive(None)
    progress: reactive[str] = reactive("")
    """What the turn in flight is doing (hub/client/progress.py); empty between turns."""

    def needed(self) -> list[Text]:
        line = super().needed()
        if self.problem:
            return line
        working = [Text(f"⟳ {self.progress}", style="bold")] if self.progress else []
        answering = (self.health or {}).get("model") or {}
        in_use = answering.get("provider") == c.PROVIDER_EMBEDDED
        warnings = [embedded_warning(self.embedded, in_use), cloud_warning(self.cloud)]
        shown = [Text(w, style="bold yellow") for w in warnings if w]
        notes = [repairs_note(self.repairs), preparing_note(self.embedded)]
        after = [Text(n, style="dim") for n in notes if n]
        return [*working, *shown, *line, *after]


def embedded_warning(embedded: object, in_use: bool = False) -> str:
    """The status line's word when the hub switched its embedded model off (its runner kept
    crashing), or when the embedded model that answers is not installed: the reason stays in
    view instead of each message failing anew."""
    if not isinstance(embedded, dict):
        return ""
    if embedded.get("state") == "unavailable" and in_use:
        return f"⚠ embedded model unavailable: {embedded.get('reason', 'not installed')}"
    if embedded.get("state") != "failed":
        return ""
    return f"⚠ embedded model off: {embedded.get('reason', 'its runner kept crashing')}"


def repairs_note(repairs: object) -> str:
    """The status line's word on the hub's start-up repairs while they run (a hub that
    crashed may be re-indexing facts, so the first minutes are slower)."""
    if not isinstance(repairs, dict) or repairs.get("state") != "running":
        return ""
    doing = str(repairs.get("doing") or "repairing")
    return f"⟳ the hub is starting: {doing}"


def preparing_note(embedded: object) -> str:
    """The status line's word while the embedded model gets ready (joining its file, loading
    it, reading the prompts ahead): a message sent meanwhile waits, and this says for what."""
    if not isinstance(embedded, dict) or not embedded.get("preparing"):
        return ""
    return f"⟳ the model is getting ready: {embedded['preparing']}"


@dataclass
class Turn:
    """What one reply has shown so far, so the next event lands in the right widget."""

    texts: list[str] = field(default_factory=list)
    """Text segments: a tool call between two texts starts a new segment."""
    reply: ReplyMessage | None = None
    stream: MarkdownStream | None = None
    streams: list[MarkdownStream] = field(default_factory=list)
    reasoning: ReasoningPane | None = None
    cards: dict[str, ToolCard] = field(default_factory=dict)
    last: Widget | None = None
    usage: dict[str, int] = field(default_factory=dict)
    ended: bool = False
    error: str = ""
    """An agentResultEvent or an error arrived: the hub finished the turn on purpose."""
    suggestions: list[str] = field(default_factory=list)
    messages_changed: bool = False
    record: TurnRecorder = field(default_factory=TurnRecorder)
    """What the turn adds to the history: its tool calls, their results, its text."""

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.texts if t)


class ChatScreen(Screen[None]):
    DEFAULT_CSS = """
    ChatScreen #main { height: 1fr; }
    ChatScreen #log { height: 1fr; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(
                f"alt+{n}",
                f"pick_followup({n})",
                f"Chip {n}",
                key_display=None if n == 1 else str(n),  # the footer reads "alt+1 2 3 4 Chip"
                id=f"pick_followup_{n}",
                group=CHIPS,
            )
            for n in range(1, 5)
        ),
        Binding("escape", "stop", "Stop", id="stop"),
        Binding("ctrl+o", "copy_reply", "Copy", id="copy_reply"),
        Binding("ctrl+b", "toggle_sidebar", "Chats", id="toggle_sidebar"),
        Binding("ctrl+n", "new_conversation", "New", id="new_conversation"),
        Binding("ctrl+s", "export", "Export", id="export_conversation"),
    ]

    busy: reactive[bool] = reactive(False)
    health_every_s: ClassVar[float] = 10.0
    """How often /api/health is asked: a hub that restarted (perhaps on another model) or
    came back shows in the header within this long."""

    def __init__(self, client: HubClient, config: TuiConfig | None = None) -> None:
        super().__init__(name="chat")
        self.client = client
        self._config = config
        self.conversation = Conversation()
        self.total_tokens = 0
        self.last_health: dict[str, Any] | None = None
        self.progress: TurnProgress | None = None
        self.queued: list[str | None] = []
        """Messages sent while a reply was coming (None: a new conversation), in order."""
        self.ticks = 0
        """Progress ticks since the screen opened."""

    # --- set-up -----------------------------------------------------------------------------

    @property
    def config(self) -> TuiConfig:
        if self._config is None:
            self._config = getattr(self.app, "config")  # noqa: B009  (TinyApp.config)
        assert self._config is not None
        return self._config

    @property
    def history(self) -> list[Message]:
        """The messages of the current conversation, exactly as they are sent to the hub."""
        return self.conversation.messages

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            yield Sidebar(id="sidebar")
            with Vertical():
                yield EmptyChat(id="empty")
                yield VerticalScroll(id="log")
                yield QueuedMessages(id="queued")
                yield Prompt(id="prompt")
        yield ChatStatusLine(id="status")
        yield KeysFooter()

    async def on_mount(self) -> None:
        self.store = ConversationStore(self.config.conversations_dir)
        self.client_tools = ClientTools(
            self.app, self.config, board=getattr(self.app, "map_board", None)
        )
        register_themes(self.app)
        if self.config.theme and self.app.theme != self.config.theme:
            restore_theme(self.app, self.config.theme)
        self.query_one("#log", VerticalScroll).anchor()
        self.query_one("#prompt", Prompt).focus()
        await self.refresh_sidebar(announce_problems=True)
        self.load_health()
        self.set_interval(self.health_every_s, self._check_health)
        self.set_interval(PROGRESS_EVERY_S, self.show_progress)

    def _check_health(self) -> None:
        self.load_health(announce=False, periodic=True)

    @property
    def status(self) -> ChatStatusLine:
        return self.query_one("#status", ChatStatusLine)

    @work(exclusive=True, group="health", exit_on_error=False)
    async def load_health(self, announce: bool = True, periodic: bool = False) -> None:
        """Which model answers, whether the hub is there at all, and the cloud link (the
        header and the status line). Also every ``health_every_s`` (``periodic``): that check
        keeps the model the last turn reported, unless the hub came back or changed its model
        since the check before, when all of it is taken afresh."""
        try:
            health = await self.client.health()
        except HubError as exc:
            self.status.problem = str(exc)
            refused = str(exc).startswith("the hub answered")
            self.sub_title = "hub error" if refused else "hub unreachable"
            self.last_health = None
            if announce:
                await self.say(str(exc))
            return
        fresh = not periodic or self.status.problem != "" or hub_changed(self.last_health, health)
        self.last_health = health
        self.status.problem = ""
        self.status.cloud = health.get("cloud")
        self.status.repairs = health.get("repairs")
        self.status.embedded = health.get("embedded")
        if fresh or self.status.health is None:
            self.status.health = health
        self.show_model((self.status.health or health).get("model") or {})

    def show_model(self, model: dict[str, Any]) -> None:
        """The header's line on the model, and the empty chat's word on what it can do."""
        self.sub_title = model_summary(model)
        self.query_one(EmptyChat).model = model

    # --- sending ----------------------------------------------------------------------------

    @on(Prompt.Submitted)
    async def _submitted(self, event: Prompt.Submitted) -> None:
        await self.send(event.text)  # the prompt cleared itself, keeping keys typed since

    @on(FollowupChips.Picked)
    async def _chip_picked(self, event: FollowupChips.Picked) -> None:
        await self.send(event.text)

    async def action_pick_followup(self, number: int) -> None:
        chips = self.query(FollowupChips)
        if not chips or not 1 <= number <= len(chips.last().suggestions):
            self.app.bell()
            return
        await self.send(chips.last().suggestions[number - 1])

    async def send(self, text: str) -> bool:
        """Start a turn with ``text``, or queue it while a reply is still coming (it is sent
        when the reply ends); False only for an empty text."""
        text = text.strip()
        if not text:
            return False
        if self.busy or self.queued:
            self.queue_up(text)
        else:
            await self.start_turn(text)
        return True

    async def start_turn(self, text: str) -> None:
        self.busy = True
        await self.query(FollowupChips).remove()
        self.history.append({"role": "user", "content": text})
        self.query_one(EmptyChat).display = False
        self.save_conversation()
        await self.show(UserMessage(text))
        self.progress = TurnProgress()
        self.show_progress()
        self.stream_reply()

    def save_conversation(self) -> None:
        """Write the conversation now: a crash, a stop or a lost hub keeps what was there."""
        try:
            self.store.save(self.conversation)
        except OSError as exc:
            self.notify(f"could not save the conversation: {exc}", severity="error")

    # --- one turn ---------------------------------------------------------------------------

    def turn_headers(self) -> dict[str, str]:
        """Which tiny (chosen on the settings screen), for this session which model, and what
        this client can do: a map and sounds (the bell at least), no phone hardware."""
        return {
            c.H_NAME: getattr(self.app, "tiny_name", c.DEFAULT_TINY),
            c.H_CLIENT: CLIENT_KIND,
            c.H_CLIENT_CAN: ", ".join(CLIENT_CAN),
            **getattr(self.app, "model_headers", {}),
        }

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def stream_reply(self) -> None:
        """One turn. Cancelling this worker (Esc) closes the stream, which is how the hub
        learns to stop the model; whatever ends the turn, ``finish_turn`` keeps what arrived."""
        turn, problem, stopped = Turn(), "", False
        try:
            async for event in self.client.stream_chat(list(self.history), self.turn_headers()):
                self.progress_seen(event)
                await self.on_turn_event(turn, event)
            if not turn.ended:
                problem = "the hub closed the stream before the reply finished"
        except HubError as exc:
            problem = str(exc)
        except asyncio.CancelledError:
            stopped = True
        finally:
            await self.finish_turn(turn, problem, stopped)

    async def on_turn_event(self, turn: Turn, event: dict[str, Any]) -> None:
        turn.record.feed(event)
        kind = event.get("type")
        if kind == c.EV_BLOCK_DELTA:
            await self._delta(turn, event)
        elif kind == c.EV_BLOCK_START and isinstance(event.get("toolStart"), dict):
            await self._card(turn, event["toolStart"])
        elif kind == c.EV_BEFORE_TOOL and isinstance(event.get("toolCall"), dict):
            call = event["toolCall"]
            (await self._card(turn, call)).running(call.get("input"))
        elif kind == c.EV_AFTER_TOOL and isinstance(event.get("toolResult"), dict):
            await self._tool_result(turn, event["toolResult"])
        elif kind == c.EV_METADATA:
            self._usage(turn, event)
        elif kind == c.EV_CONTEXT_COMPACTED:
            await self.say(
                f"the model's context was full: the hub left out the {event.get('dropped')} "
                "oldest messages for this reply (your copy keeps them)",
                "warning",
            )
        elif kind == c.EV_AGENT_RESULT:
            turn.ended = True
            if event.get("stopReason") == "max_tokens":
                await self.say("the reply was cut: the model reached its token limit", "warning")
        elif kind == c.EV_ERROR:
            turn.ended = True
            turn.error = str(event.get("error"))
            await self.say(f"error: {turn.error}")
        elif kind == c.EV_NOTICE:
            await self.say(str(event.get("message", "")), "info")

    async def _delta(self, turn: Turn, event: dict[str, Any]) -> None:
        if event.get(c.DELTA_TEXT):
            if turn.reply is None or turn.last is not turn.reply:
                turn.reply = ReplyMessage("")
                turn.texts.append("")
                await self.show(turn.reply, turn)
                turn.stream = Markdown.get_stream(turn.reply)
                turn.streams.append(turn.stream)
            turn.texts[-1] += event[c.DELTA_TEXT]
            assert turn.stream is not None
            await turn.stream.write(event[c.DELTA_TEXT])
        elif event.get(c.DELTA_REASONING):
            if turn.reasoning is None or turn.last is not turn.reasoning:
                turn.reasoning = ReasoningPane()
                await self.show(turn.reasoning, turn)
            turn.reasoning.add(event[c.DELTA_REASONING])
        elif event.get(c.DELTA_TOOL_INPUT) and isinstance(turn.last, ToolCard):
            turn.last.add_input(str(event[c.DELTA_TOOL_INPUT]))

    async def _card(self, turn: Turn, call: dict[str, Any]) -> ToolCard:
        """The card for a tool call, made the first time its toolUseId is seen."""
        tool_use_id = str(call.get("toolUseId"))
        card = turn.cards.get(tool_use_id)
        if card is None:
            card = turn.cards[tool_use_id] = ToolCard(tool_use_id, str(call.get("name")))
            await self.show(card, turn)
        return card

    async def _tool_result(self, turn: Turn, result: dict[str, Any]) -> None:
        card = await self._card(turn, result)
        card.finished(str(result.get("status")), result.get("content") or [], result.get("error"))
        turn.suggestions = suggestions_of(result) or turn.suggestions
        proposal = proposal_of(result)
        if proposal is not None:
            await self.show(ConfirmationCard(proposal), turn)
        request = client_request(result)
        if request is not None:
            outcome = await self.client_tools.run(*request, self.history)
            turn.record.client_did(str(result.get("toolUseId")), outcome.text)
            await self.apply(outcome, turn)

    def _usage(self, turn: Turn, event: dict[str, Any]) -> None:
        usage = event.get("usage") or {}
        for key in ("inputTokens", "outputTokens", "totalTokens"):
            turn.usage[key] = turn.usage.get(key, 0) + int(usage.get(key) or 0)
        self.total_tokens += int(usage.get("totalTokens") or 0)
        self.status.usage = dict(turn.usage)
        self.status.total_tokens = self.total_tokens
        if event.get("modelId") and self.status.health:
            model = {**(self.status.health.get("model") or {}), "id": event["modelId"]}
            self.status.health = {**self.status.health, "model": model}

    async def finish_turn(self, turn: Turn, problem: str, stopped: bool) -> None:
        """Keep what arrived (on disk first), then tell the person how the turn ended. The
        history gets the turn's tool calls and results too, so the model sees next time how
        it answered (hub/client/conversation.py); the screen shows only their cards."""
        self.history.extend(dict(message) for message in turn.record.messages())
        failure = turn.error or problem
        if failure and not stopped:  # reopened later, the conversation still says why
            self.conversation.notes.append(
                {"after": len(self.history) - 1, "text": f"no reply: {failure}"}
            )
        self.save_conversation()
        self.progress = None
        try:
            if self.is_attached:
                await self.show_how_it_ended(turn, problem, stopped)
        finally:
            # Not busy until here: a key pressed meanwhile is queued, and sent once this
            # worker is done (send_queued), instead of a new turn cancelling this one half-way.
            self.busy = False

    async def show_how_it_ended(self, turn: Turn, problem: str, stopped: bool) -> None:
        self.show_progress()
        for stream in turn.streams:
            await stream.stop()
        if stopped:
            await self.say(STOPPED, "info")
        elif problem:
            kept = " (the conversation is kept with what arrived)" if turn.text else ""
            await self.say(f"{problem}{kept}")
            self.load_health(announce=False)
        if stopped or turn.error or problem:
            await self.unqueue_to_prompt("stopped" if stopped else "the reply failed")
        if turn.messages_changed:
            await self.render_conversation()
        if turn.suggestions and not stopped:
            await self.show(FollowupChips(turn.suggestions))
        await self.refresh_sidebar()

    def action_stop(self) -> None:
        """Cancel the turn: the worker's stream is closed, and the hub closes the model's."""
        if self.busy:
            self.workers.cancel_group(self, "turn")

    # --- progress and the queue -------------------------------------------------------------

    def progress_seen(self, event: dict[str, Any]) -> None:
        if self.progress is not None and self.progress.see(event):
            self.show_progress()

    def show_progress(self) -> None:
        """The status line's word on the turn in flight, with its seconds (every second); while
        the model gets ready, its progress is asked for every ``PREPARING_EVERY_S``."""
        self.status.progress = self.progress.line() if self.progress is not None else ""
        self.ticks += 1
        if preparing_note(self.status.embedded) and self.ticks % PREPARING_EVERY_S == 0:
            self._check_health()

    def queue_up(self, item: str | None) -> None:
        self.queued.append(item)
        self.show_queue()

    def show_queue(self) -> None:
        shown = [NEW_CONVERSATION if item is None else item for item in self.queued]
        self.query_one(QueuedMessages).show(shown)

    async def unqueue_to_prompt(self, why: str) -> None:
        """A stopped or failed reply sends nothing queued after it: the messages go back into
        the prompt (before whatever is being typed), a queued new conversation is dropped,
        and the log says so."""
        if not self.queued:
            return
        texts = [q for q in self.queued if q is not None]
        new_conversation = None in self.queued
        self.queued = []
        self.show_queue()
        prompt = self.query_one("#prompt", Prompt)
        prompt.load_text("\n\n".join([*texts, prompt.text] if prompt.text else texts))
        prompt.focus()
        back = f"{len(texts)} queued message(s) back in the prompt" if texts else ""
        dropped = "the queued new conversation not started" if new_conversation else ""
        await self.say(f"{why}: " + "; ".join(w for w in (back, dropped) if w), "info")

    @on(Worker.StateChanged)
    async def send_queued(self, event: Worker.StateChanged) -> None:
        """Once a turn's worker is done, what was queued meanwhile goes, in order: a queued
        new conversation starts, then the next message is sent (and waits for its reply)."""
        if event.worker.group != "turn" or not event.worker.is_finished:
            return
        while self.queued and not self.busy:
            item = self.queued.pop(0)
            self.show_queue()
            if item is None:
                await self.start_new_conversation()
            else:
                await self.start_turn(item)

    # --- client tools -----------------------------------------------------------------------

    async def apply(self, outcome: Outcome, turn: Turn | None = None) -> None:
        """Show what a client action did; ask first when it needs a yes."""
        if outcome.widget is not None:
            await self.show(outcome.widget, turn)
        if outcome.text:
            await self.say(outcome.text, outcome.severity)
        if outcome.messages_changed:
            self.save_conversation()
            if turn is not None:
                turn.messages_changed = True
            else:
                await self.render_conversation()
        if outcome.notes_changed:
            self.show_notes()
        if outcome.confirm is not None:
            confirm = outcome.confirm

            async def answered(yes: bool | None) -> None:
                await self.say(confirm.on_yes() if yes else confirm.on_no, "info")

            self.app.push_screen(ConfirmScreen(confirm.question), answered)

    @on(ConfirmationCard.Answered)
    def _proposal_answered(self, event: ConfirmationCard.Answered) -> None:
        self.answer_proposal(event.card, event.yes)

    @work(group="proposals", exit_on_error=False)
    async def answer_proposal(self, card: ConfirmationCard, yes: bool) -> None:
        """The person's answer to a proposal, sent with their own token: only this carries
        the action out, never the turn."""
        body = {"id": card.pending_id}
        try:
            answer = await self.client.call("POST", VERBS[yes], body=body)
        except (HubError, TimeoutError) as exc:
            card.settled("failed", str(exc) or "the hub did not answer in time")
            return
        state = str((answer.get("confirmation") or {}).get("state", "failed"))
        card.settled(state, answered_text(answer))

    # --- copying ----------------------------------------------------------------------------

    @on(CopyRequested)
    def _copy(self, event: CopyRequested) -> None:
        self.copy(event.text)

    def action_copy_reply(self) -> None:
        """Copy the last reply (while one streams: what has arrived so far)."""
        replies = self.query(ReplyMessage)
        if not replies:
            self.notify("no reply to copy yet", timeout=3)
            return
        self.copy(replies.last().source)

    def copy(self, text: str) -> None:
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {len(text)} characters, {CLIPBOARD_CAVEAT}", timeout=6)

    # --- conversations ----------------------------------------------------------------------

    def action_toggle_sidebar(self) -> None:
        sidebar = self.query_one(Sidebar)
        sidebar.toggle_class("-shown")
        if sidebar.has_class("-shown"):
            self.query_one("#conversations", OptionList).focus()
        else:
            self.query_one("#prompt", Prompt).focus()

    def action_new_conversation(self) -> None:
        """A new conversation; while a reply is coming, queued after it (and after the
        messages queued before it). Taken in the order of the keys: a message sent just
        before waits in the screen's queue too."""
        self.call_later(self._new_conversation_in_turn)

    async def _new_conversation_in_turn(self) -> None:
        if self.busy or self.queued:
            self.queue_up(None)
            return
        await self.start_new_conversation()

    async def start_new_conversation(self) -> None:
        self.conversation = Conversation()
        self.total_tokens = 0
        self.status.usage, self.status.total_tokens = {}, 0
        await self.render_conversation()
        await self.refresh_sidebar()
        self.query_one("#prompt", Prompt).focus()

    @on(OptionList.OptionSelected, "#conversations")
    async def _conversation_picked(self, event: OptionList.OptionSelected) -> None:
        await self.open_conversation(str(event.option.id))

    async def open_conversation(self, conversation_id: str) -> None:
        """Continue a stored conversation: its messages are shown and sent with the next one."""
        if self.busy:
            self.notify("stop the reply first (Esc)", timeout=3)
            return
        try:
            self.conversation = self.store.load(conversation_id)
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        await self.render_conversation()
        await self.refresh_sidebar()
        self.query_one("#prompt", Prompt).focus()

    async def render_conversation(self) -> None:
        """The conversation's words, each note after the message it follows; the tool calls
        and results the history keeps for the model are not shown again."""
        log = self.query_one("#log", VerticalScroll)
        await log.remove_children()
        widgets: list[Widget] = []
        notes = self.conversation.notes
        shown = 0  # the history's messages the widgets so far stand for
        for said in readable(self.history):
            if said.role == "user":
                widgets.append(UserMessage(said.text))
            elif said.text:
                widgets.append(ReplyMessage(said.text))
            widgets += [Notice(n["text"]) for n in notes if shown <= n["after"] <= said.index]
            shown = said.index + 1
        widgets += [Notice(n["text"]) for n in notes if n["after"] >= shown]
        await log.mount_all(widgets)
        log.scroll_end(animate=False)
        self.query_one(EmptyChat).display = not self.history

    async def refresh_sidebar(self, announce_problems: bool = False) -> None:
        conversations, problems = self.store.listing()
        self.query_one(Sidebar).show_conversations(conversations, self.conversation.id)
        self.show_notes()
        if announce_problems:
            for problem in problems:
                await self.say(f"{problem} (left as it is)", "warning")

    @on(ConversationList.Rename)
    def _rename_asked(self, event: ConversationList.Rename) -> None:
        conversation = self._kept(event.conversation_id)
        if conversation is None:
            return

        def answered(title: str | None) -> None:
            if title is None:
                return
            try:
                self.store.rename(conversation, title)
            except (ValueError, OSError) as exc:
                self.notify(f"not renamed: {exc}", severity="warning")
                return
            self.call_later(self.refresh_sidebar)

        question = "A new title for this conversation (Enter keeps it, Escape cancels):"
        self.app.push_screen(AskTextScreen(question, "title", conversation.title), answered)

    @on(ConversationList.Delete)
    def _delete_asked(self, event: ConversationList.Delete) -> None:
        conversation = self._kept(event.conversation_id)
        if conversation is None:
            return
        if self.busy and conversation.id == self.conversation.id:
            self.notify("stop the reply first (Esc)", timeout=3)
            return

        async def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                self.store.delete(conversation.id)
            except OSError as exc:
                self.notify(f"not deleted: {exc}", severity="error")
                return
            if conversation.id == self.conversation.id:
                await self.start_new_conversation()
            await self.refresh_sidebar()
            self.notify(f"deleted “{conversation.title}”")

        question = (
            f"Delete “{conversation.title}” ({len(conversation.messages)} messages) from this "
            "machine? This cannot be undone; the hub keeps no copy."
        )
        self.app.push_screen(ConfirmScreen(question, "Delete", danger=True), answered)

    def _kept(self, conversation_id: str) -> Conversation | None:
        """The current conversation, or a stored one; None (said) when it cannot be read."""
        if conversation_id == self.conversation.id:
            return self.conversation
        try:
            return self.store.load(conversation_id)
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return None

    def action_export(self) -> None:
        """Write the current conversation as Markdown into the data dir's exports folder."""
        if not self.history:
            self.notify("nothing to export yet: this conversation is empty", timeout=4)
            return
        path = self.config.data_dir / "exports" / export_name(self.conversation)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(conversation_markdown(self.conversation), encoding="utf-8")
        except OSError as exc:
            self.notify(f"could not export: {exc}", severity="error")
            return
        self.notify(f"exported to {path}", timeout=8)

    def show_notes(self) -> None:
        notes = self.client_tools.notes
        self.query_one(Sidebar).show_notes(notes.texts())
        if notes.problem:
            self.notify(notes.problem, severity="warning")

    # --- the log ----------------------------------------------------------------------------

    async def show(self, widget: Widget, turn: Turn | None = None) -> None:
        await self.query_one("#log", VerticalScroll).mount(widget)
        if turn is not None:
            turn.last = widget

    async def say(self, text: str, severity: str = "error") -> None:
        await self.show(Notice(text, severity))
