"""The settings screen: which tiny you talk to (and its prompt), which model answers, and how the
hub is doing — all read and changed over the hub's HTTP API, like every other client.

What there is to choose from comes from ``GET /api/models``: the hub asks Ollama there and then
(its models, and which can call tools), so that request runs in a worker and the screen says
"asking Ollama…" until it answers.

The chosen tiny lives on the App as ``tiny_name`` (the chat screen sends it as ``x-tiny-name``).
A cloud API key is never saved: the hub refuses keys on ``PUT /api/model`` and keeps none, so
the key stays in this process's memory as ``App.model_headers`` (the ``x-tiny-model-*`` headers
the chat screen adds to each turn) and is never drawn on screen or written to disk.

Phones pair with a code: ``POST /api/pair/offer`` makes one (and its QR, drawn as text), shown in
a modal only when asked for; ``GET /api/tokens`` lists the paired phones and ``DELETE
/api/tokens?id=`` unpairs one, after a yes/no.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import quote

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    DataTable,
    Digits,
    Footer,
    Header,
    Input,
    Label,
    Select,
    Static,
    TextArea,
)

from hub import contracts as c
from tui.client import HubClient, HubError
from tui.guidance import FULL_AGENT_COMMAND, model_guidance
from tui.widgets import ConfirmScreen, KeysFooter

NOT_YET = "not available on this hub yet"
CLOUD_OFF = "off (tiny-hub cloud join)"
ASKING_OLLAMA = "asking Ollama…"
NO_LAN = "not on a network (the hub listens on loopback only; set server.host / lan.url)"
PAIRING_HOW = "pairing: p shows a code and a QR for a phone (valid 5 minutes, once)"
NO_PHONES = "no phones paired yet"
PROMPT_PREVIEW_CHARS = 44

Answer = dict[str, Any]
DraftT = TypeVar("DraftT")


# --- what the forms hand back ------------------------------------------------------------------


@dataclass(frozen=True)
class TinyDraft:
    """A new tiny (name, visibility, prompt) or, with ``name`` set and ``creating`` off, a new
    prompt for an existing one."""

    name: str
    prompt: str
    visibility: str = "public"
    creating: bool = True

    def body(self) -> dict[str, str]:
        if not self.creating:
            return {"systemPrompt": self.prompt}
        body = {"name": self.name, "visibility": self.visibility}
        if self.prompt.strip():
            body["systemPrompt"] = self.prompt
        return body


@dataclass(frozen=True)
class ModelDraft:
    """A model choice. ``api_key`` has no repr, so it cannot leak into a log or a traceback."""

    provider: str
    model_id: str = ""
    base_url: str = ""
    api_key: str = field(default="", repr=False)

    def body(self) -> dict[str, str]:
        """What PUT /api/model takes: never the key (the hub refuses it)."""
        body = {"provider": self.provider, "id": self.model_id}
        if self.base_url:
            body["baseUrl"] = self.base_url
        return body

    def session_headers(self) -> dict[str, str]:
        """The per-turn headers that carry a cloud key; empty when there is no key to carry."""
        if not self.api_key or self.provider not in c.CLOUD_PROVIDERS:
            return {}
        headers = {
            c.H_MODEL_PROVIDER: self.provider,
            c.H_MODEL_ID: self.model_id,
            c.H_MODEL_API_KEY: self.api_key,
        }
        if self.base_url:
            headers[c.H_MODEL_BASE_URL] = self.base_url
        return headers


# --- pure formatting ---------------------------------------------------------------------------


def prompt_preview(prompt: str) -> str:
    """The first non-empty line of a prompt, cut to fit one table row at 80 columns."""
    line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
    return line if len(line) <= PROMPT_PREVIEW_CHARS else line[: PROMPT_PREVIEW_CHARS - 1] + "…"


def tools_word(capable: object) -> str:
    return "tools on" if capable else "tools off"


def describe_default(model: dict[str, Any]) -> str:
    return (
        f"{model.get('provider', '?')} {model.get('id') or '(no id)'} · "
        f"{tools_word(model.get('toolsCapable'))}"
    )


def ollama_models(listed: Answer | HubError | None) -> list[Answer]:
    """Ollama's models as GET /api/models listed them (none while asking, or on an error)."""
    if not isinstance(listed, dict):
        return []
    return list((listed.get("ollama") or {}).get("models") or [])


def find_listed(models: list[Answer], model_id: str) -> Answer | None:
    """The listed model an id names: as listed, or without Ollama's ``:latest`` tag."""
    for model in models:
        listed_id = str(model.get("id", ""))
        if model_id and model_id in (listed_id, listed_id.removesuffix(":latest")):
            return model
    return None


def ollama_unlisted(listed: Answer | HubError | None) -> str:
    """Why no Ollama model can be listed ("" when some can): asking, the hub's sentence, or
    Ollama's state as the hub saw it."""
    if listed is None:
        return ASKING_OLLAMA
    if isinstance(listed, HubError):
        return str(listed)
    ollama = listed.get("ollama") or {}
    if not ollama.get("answering"):
        return (
            f"Ollama: not answering at {ollama.get('host', '?')} ({ollama.get('error', '?')}); "
            f"install it and run: {FULL_AGENT_COMMAND}"
        )
    if not ollama.get("models"):
        return f"Ollama at {ollama.get('host', '?')} has no models (try: {FULL_AGENT_COMMAND})"
    return ""


def models_lines(listed: Answer | HubError | None) -> list[str]:
    """What there is to choose from: Ollama's models, each with tools on or off (or why there
    are none), then the embedded model."""
    reason = ollama_unlisted(listed)
    if not isinstance(listed, dict):
        return [reason]
    if reason:
        lines = [reason]
    else:
        lines = [f"Ollama at {listed['ollama'].get('host', '?')} has:"]
        lines += [f"  {m.get('id')} · {tools_word(m.get('tools'))}" for m in ollama_models(listed)]
        if not any(m.get("tools") for m in ollama_models(listed)):
            lines.append(f"  none can call tools (try: {FULL_AGENT_COMMAND})")
    embedded = listed.get("embedded")
    if embedded:
        lines.append(f"embedded: {embedded.get('id')} · {tools_word(embedded.get('tools'))}")
    return lines


def saved_tools(
    saved: dict[str, Any], default: dict[str, Any], listed: list[Answer] | None = None
) -> str:
    """Whether the saved model gets tools. The hub reports this only for its default; for an
    Ollama model on the hub's own Ollama, GET /api/models said what Ollama answers; the rest
    follows the hub's own rule (hub/agent/models.py) without guessing Ollama's answer."""
    if saved.get("provider") == default.get("provider") and saved.get("id") in (
        "",
        default.get("id"),
    ):
        return tools_word(default.get("toolsCapable"))
    if saved.get("provider") == c.PROVIDER_EMBEDDED:
        return tools_word(False)
    if saved.get("provider") == c.PROVIDER_OLLAMA:
        known = None if saved.get("baseUrl") else find_listed(listed or [], saved.get("id", ""))
        if known is not None:
            return tools_word(known.get("tools"))
        return "tools: the hub asks Ollama at the next turn"
    return tools_word(True)


def model_lines(
    model: Answer | HubError,
    health: Answer | HubError,
    key_for: str,
    listed: list[Answer] | None = None,
) -> list[str]:
    """The model section: the hub's default, the caller's saved choice, and a held key."""
    if isinstance(health, HubError):
        return [str(health)]
    default = health.get("model", {})
    lines = [f"default: {describe_default(default)}", f"  why: {default.get('reason', '')}"]
    if isinstance(model, HubError):
        lines.append(f"saved: {model}")
    elif model.get("saved") is None:
        lines.append("saved: none (the hub's default answers)")
    else:
        saved = model["saved"]
        where = f" at {saved['baseUrl']}" if saved.get("baseUrl") else ""
        lines.append(
            f"saved: {saved.get('provider')} {saved.get('id') or '(default id)'}{where} · "
            f"{saved_tools(saved, default, listed)}"
        )
    if key_for:
        lines.append(f"API key for {key_for}: held in memory for this session only")
    elif isinstance(model, dict) and (model.get("saved") or {}).get("provider") in (
        c.CLOUD_PROVIDERS
    ):
        lines.append("API key: none in this session (the hub's model.api_key applies if set)")
    return lines


def status_lines(health: Answer | HubError, url: str) -> list[str]:
    """The status section: version and model, where a phone on the LAN dials (and the loopback
    listener when TLS is on), the cloud link as far as /api/health tells, and how to pair."""
    if isinstance(health, HubError):
        return [str(health)]
    model = health.get("model", {})
    lines = [
        f"hub: {url} · version {health.get('version', '?')} · up {health.get('uptime', 0):.0f} s",
        f"model: {describe_default(model)}",
        f"LAN: {health.get('lanUrl') or NO_LAN}",
    ]
    if health.get("loopbackUrl"):
        lines.append(f"loopback: {health['loopbackUrl']}")
    lines += [f"cloud: {cloud_state(health.get('cloud'))}", PAIRING_HOW]
    return lines


def clock(seconds: object) -> str:
    """An epoch time as a local HH:MM ("" when the hub sent none)."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return ""
    return time.strftime("%H:%M", time.localtime(seconds))


def cloud_state(cloud: object) -> str:
    """The cloud link as /api/health's ``cloud`` tells it (hub/cloud/link.py ``status()``):
    off (and how to join), online, offline since when and why with what waits to be sent, or
    refused and why; then memory sync's state when it is on. A hub that predates the field
    says nothing about the cloud."""
    if not isinstance(cloud, dict):
        return NOT_YET
    memory = cloud.get("memory")
    line = _link_state(cloud)
    if isinstance(memory, dict) and memory.get("state") not in (None, "off"):
        synced = clock(memory.get("syncedAt"))
        said = f"in sync at {synced}" if memory.get("state") == "online" and synced else None
        line += f" · memory: {said or memory.get('state')}"
    return line


def _link_state(cloud: dict[str, Any]) -> str:
    state = str(cloud.get("state") or "off")
    if state == "off":
        return CLOUD_OFF
    detail = str(cloud.get("detail") or "")
    if state == "offline":
        since = clock(cloud.get("since"))
        line = f"offline since {since}" if since else "offline"
        if detail:
            line += f" — {detail}"
        pending = cloud.get("pending")
        if isinstance(pending, int) and not isinstance(pending, bool) and pending > 0:
            line += f" · {pending} waiting"
        return line
    if state == "refused":
        return f"refused — {detail}" if detail else "refused"
    return state  # online, starting


def when(seconds: object) -> str:
    """An epoch time as a local date and minute ("" when the hub sent none)."""
    if not isinstance(seconds, int | float):
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def valid_for(offer: Answer) -> str:
    """How long and how often an offer's code works, from the hub's expiresIn."""
    seconds = int(offer.get("expiresIn") or 0)
    if seconds and seconds % 60 == 0:
        span = f"{seconds // 60} minute{'s' if seconds != 60 else ''}"
    else:
        span = f"{seconds} seconds"
    return f"valid for {span}, once"


# --- modals ------------------------------------------------------------------------------------


class FormModal(ModalScreen[Answer | None], Generic[DraftT]):
    """A form whose save goes to the hub while the form stays open: a refusal is shown here, as
    the hub's sentence, and only a success closes it (with the hub's answer)."""

    DEFAULT_CSS = """
    FormModal { align: center middle; }
    FormModal #form {
        width: 78; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    FormModal .title { text-style: bold; }
    FormModal .row { height: 1; margin-top: 1; }
    FormModal .row Label { width: 12; }
    FormModal .row Input, FormModal .row Select { width: 1fr; }
    FormModal TextArea { height: 8; background: $boost; }
    FormModal #error { color: $error; margin-top: 1; }
    FormModal .note { color: $text-muted; margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="settings_save"),
        Binding("escape", "cancel", "Cancel", id="settings_cancel"),
    ]

    def __init__(self, submit: Callable[[DraftT], Awaitable[Answer]]) -> None:
        super().__init__()
        self.submit = submit

    def draft(self) -> DraftT:
        """The form's values; ValueError for what can be said before asking the hub."""
        raise NotImplementedError

    def show_error(self, message: str) -> None:
        self.query_one("#error", Static).update(message)

    def action_save(self) -> None:
        try:
            draft = self.draft()
        except ValueError as exc:
            self.show_error(str(exc))
            return
        self.show_error("saving…")
        self.send(lambda: self.submit(draft))

    @work(exclusive=True, group="submit")
    async def send(self, request: Callable[[], Awaitable[Answer]]) -> None:
        try:
            answer = await request()
        except HubError as exc:
            self.show_error(str(exc))
            return
        self.dismiss(answer)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TinyForm(FormModal[TinyDraft]):
    """Create a tiny (name, visibility, prompt), or edit an existing tiny's prompt."""

    def __init__(
        self, submit: Callable[[TinyDraft], Awaitable[Answer]], editing: Answer | None = None
    ) -> None:
        super().__init__(submit)
        self.editing = editing

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            if self.editing is None:
                yield Label("New tiny", classes="title")
                with Horizontal(classes="row"):
                    yield Label("name")
                    yield Input(placeholder="lowercase, digits, '-'", id="name", compact=True)
                with Horizontal(classes="row"):
                    yield Label("visibility")
                    yield Select(
                        [("public", "public"), ("private (needs its key)", "private")],
                        value="public",
                        allow_blank=False,
                        id="visibility",
                        compact=True,
                    )
                prompt = ""
            else:
                yield Label(f"The prompt of {self.editing['name']}", classes="title")
                prompt = self.editing.get("systemPrompt", "")
            yield Label("prompt (empty: the hub's default prompt)", classes="note")
            yield TextArea(prompt, id="prompt", compact=True)
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#name" if self.editing is None else "#prompt").focus()

    def draft(self) -> TinyDraft:
        prompt = self.query_one("#prompt", TextArea).text
        if self.editing is not None:
            return TinyDraft(self.editing["name"], prompt, creating=False)
        visibility = self.query_one("#visibility", Select).value
        return TinyDraft(
            self.query_one("#name", Input).value.strip(), prompt, visibility=str(visibility)
        )


class ModelForm(FormModal[ModelDraft]):
    """Choose Ollama (one of its listed models, or an id typed by hand), the embedded model, or
    a cloud provider with its key; or unset the saved choice so the hub's default answers
    again."""

    DEFAULT_CSS = """
    ModelForm #model-note { margin-top: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "unset", "Unset", id="settings_unset_model"),
    ]

    PROVIDERS: ClassVar[list[tuple[str, str]]] = [
        ("ollama (on this machine)", c.PROVIDER_OLLAMA),
        ("embedded (offline, no tools)", c.PROVIDER_EMBEDDED),
        *((f"{name} (cloud)", name) for name in c.CLOUD_PROVIDERS if name != "google"),
    ]

    def __init__(
        self,
        submit: Callable[[ModelDraft], Awaitable[Answer]],
        unset: Callable[[], Awaitable[Answer]],
        current: Answer,
        listed: Answer | HubError | None = None,
    ) -> None:
        super().__init__(submit)
        self.unset = unset
        self.current = current
        self.listed = listed
        """GET /api/models's answer; None while the screen is still asking (see offer)."""

    def action_unset(self) -> None:
        self.show_error("unsetting…")
        self.send(self.unset)

    def compose(self) -> ComposeResult:
        provider = self.current.get("provider", c.PROVIDER_OLLAMA)
        if provider not in {value for _, value in self.PROVIDERS}:
            provider = c.PROVIDER_OLLAMA
        with Vertical(id="form"):
            yield Label("Model", classes="title")
            with Horizontal(classes="row"):
                yield Label("provider")
                yield Select(
                    self.PROVIDERS, value=provider, allow_blank=False, id="provider", compact=True
                )
            with Horizontal(classes="row", id="pick-row"):
                yield Label("Ollama has")
                yield Select[str]([], prompt=ASKING_OLLAMA, id="ollama-model", compact=True)
            with Horizontal(classes="row"):
                yield Label("model id")
                yield Input(self.current.get("id", ""), id="model-id", compact=True)
            yield Static("", id="model-note", classes="note", markup=False)
            with Horizontal(classes="row"):
                yield Label("base URL")
                yield Input(
                    self.current.get("baseUrl") or "",
                    placeholder="custom provider, or another Ollama",
                    id="base-url",
                    compact=True,
                )
            with Horizontal(classes="row"):
                yield Label("API key")
                yield Input(password=True, placeholder="cloud only", id="api-key", compact=True)
            yield Static(
                "The hub never stores API keys: this one stays in this TUI's memory for this "
                "session, sent with each chat turn, never shown or written to disk.",
                classes="note",
            )
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#provider").focus()
        self.offer(self.listed)

    def offer(self, listed: Answer | HubError | None) -> None:
        """Offer Ollama's models (GET /api/models's answer; the screen calls this again when
        an answer arrives while the form is open), each marked with whether it can call
        tools."""
        self.listed = listed
        pick = self.query_one("#ollama-model", Select)
        options = [
            (f"{m['id']} · {tools_word(m.get('tools'))}", str(m["id"]))
            for m in ollama_models(listed)
        ]
        if listed is None:
            pick.prompt = ASKING_OLLAMA
        else:
            pick.prompt = (
                "pick one of Ollama's models" if options else f"none ({FULL_AGENT_COMMAND})"
            )
        with pick.prevent(Select.Changed):  # not a pick: it must not overwrite the id
            pick.set_options(options)
        pick.disabled = not options
        self.sync_pick()

    def sync_pick(self) -> None:
        """Show the typed id as picked when it is one of the listed models, and say whether
        it can call tools."""
        pick = self.query_one("#ollama-model", Select)
        model_id = self.query_one("#model-id", Input).value.strip()
        listed = {str(m["id"]) for m in ollama_models(self.listed)}
        wanted = model_id if model_id in listed else Select.NULL
        if pick.value != wanted:
            with pick.prevent(Select.Changed):  # following the id, not picking one
                pick.value = wanted
        ollama = self.query_one("#provider", Select).value == c.PROVIDER_OLLAMA
        self.query_one("#pick-row").display = ollama
        self.query_one("#model-id", Input).placeholder = (
            "pick one above, or type an id" if ollama else ""
        )
        provider = self.query_one("#provider", Select).value
        note = self.query_one("#model-note", Static)
        note.display = ollama or provider == c.PROVIDER_EMBEDDED
        if ollama:
            note.update(self.ollama_note(model_id))
        else:
            note.update(model_guidance({"provider": provider, "id": self.embedded_id()}))

    def embedded_id(self) -> str:
        """The embedded model's name, as GET /api/models listed it."""
        if isinstance(self.listed, dict):
            return str((self.listed.get("embedded") or {}).get("id") or "")
        return ""

    def ollama_note(self, model_id: str) -> str:
        unlisted = ollama_unlisted(self.listed)
        known = find_listed(ollama_models(self.listed), model_id)
        if known is not None and known.get("tools"):
            return f"{known['id']} can call tools."
        if known is not None:
            return (
                f"{known['id']} cannot call tools: the tiny will answer without them "
                f"(a model that can: {FULL_AGENT_COMMAND})."
            )
        if unlisted:
            return unlisted
        if not model_id:
            return "No id: the hub's default answers, if it is an Ollama model."
        return f"{model_id} is not listed: the hub asks Ollama about tools at the next turn."

    @on(Select.Changed, "#provider")
    def provider_changed(self, event: Select.Changed) -> None:
        """Another provider's model ids mean nothing here: offer the current id only for the
        current provider."""
        same = event.value == self.current.get("provider")
        self.query_one("#model-id", Input).value = self.current.get("id", "") if same else ""
        self.sync_pick()

    @on(Select.Changed, "#ollama-model")
    def model_picked(self, event: Select.Changed) -> None:
        """Picking a listed model fills in its id (which can still be edited by hand). Only
        the person's picks arrive here: sync_pick's own changes are not announced."""
        if event.value == Select.NULL:
            return
        model_id = self.query_one("#model-id", Input)
        if model_id.value != event.value:
            model_id.value = str(event.value)

    @on(Input.Changed, "#model-id")
    def model_id_typed(self) -> None:
        self.sync_pick()

    def draft(self) -> ModelDraft:
        provider = str(self.query_one("#provider", Select).value)
        model_id = self.query_one("#model-id", Input).value.strip()
        if provider in c.CLOUD_PROVIDERS and not model_id:
            raise ValueError(f"provider {provider} needs a model id")
        return ModelDraft(
            provider,
            model_id,
            self.query_one("#base-url", Input).value.strip(),
            self.query_one("#api-key", Input).value.strip(),
        )


class KeyNotice(ModalScreen[None]):
    """A private tiny's key, the one time the hub shows it."""

    DEFAULT_CSS = """
    KeyNotice { align: center middle; }
    KeyNotice #notice {
        width: 78; max-width: 100%; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    KeyNotice #key { text-style: bold; margin: 1 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy", "Copy key", id="settings_copy_key"),
        Binding("escape,enter", "close", "Close", id="settings_close_key"),
    ]

    def __init__(self, tiny: str, key: str) -> None:
        super().__init__()
        self.tiny = tiny
        self.key = key

    def compose(self) -> ComposeResult:
        with Vertical(id="notice"):
            yield Static(f"{self.tiny} is private. Its key:", markup=False)
            yield Static(self.key, id="key", markup=False)
            yield Static(
                "Copy it now: the hub keeps only a hash and will not show it again. A phone or "
                "another person needs it (x-tiny-key) to talk to this tiny.",
                markup=False,
            )
        yield Footer()

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.key)
        self.notify("key copied (if your terminal allows it)")

    def action_close(self) -> None:
        self.key = ""
        self.dismiss(None)


class PairNotice(ModalScreen[None]):
    """A pairing offer: the QR (as the hub drew it, for a terminal) and its code, large. The QR
    with its quiet zone is up to 57 columns; beside it the code takes 19, so both fit in 80
    columns (taller than 24 rows, the box scrolls)."""

    DEFAULT_CSS = """
    PairNotice { align: center middle; }
    PairNotice #pair {
        width: auto; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0; scrollbar-size-vertical: 1;
    }
    PairNotice #pair-row { height: auto; width: auto; }
    PairNotice #qr { width: auto; height: auto; }
    PairNotice #pair-side { width: 19; height: auto; padding: 0 0 0 1; }
    PairNotice .title { text-style: bold; }
    PairNotice #code { text-style: bold; color: $accent; width: auto; margin: 1 0; }
    PairNotice #valid { text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "Close", id="settings_close_pair"),
    ]

    def __init__(self, offer: Answer) -> None:
        super().__init__()
        self.code = str(offer.get("code", ""))
        self.qr = str((offer.get("qr") or {}).get("text", ""))
        self.valid = valid_for(offer)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="pair"), Horizontal(id="pair-row"):
            yield Static(Text(self.qr.rstrip("\n"), no_wrap=True), id="qr")
            with Vertical(id="pair-side"):
                yield Static("Pair a phone", classes="title")
                yield Static("Scan the QR in the tiny app, or type the code:", markup=False)
                yield Digits(self.code, id="code")
                yield Static(self.valid, id="valid", markup=False)
                yield Static(
                    "A new code voids this one. The phone must reach the hub's LAN address.",
                    markup=False,
                )
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)


# --- the screen --------------------------------------------------------------------------------


class SettingsScreen(Screen[None]):
    DEFAULT_CSS = """
    SettingsScreen #body { height: 1fr; padding: 0 1; }
    SettingsScreen .heading { text-style: bold; color: $accent; }
    SettingsScreen #tinys { height: auto; max-height: 9; }
    SettingsScreen #tinys-note { color: $text-muted; }
    SettingsScreen #tinys-note.error, SettingsScreen .error { color: $error; }
    SettingsScreen #phones { height: auto; max-height: 7; }
    SettingsScreen #phones-note { color: $text-muted; }
    SettingsScreen #phones-note.error { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("u", "use_tiny", "Use", id="settings_use_tiny"),
        Binding("n", "new_tiny", "New", id="settings_new_tiny"),
        Binding("e", "edit_tiny", "Edit", id="settings_edit_tiny"),
        Binding("m", "choose_model", "Model", id="settings_choose_model"),
        Binding("r", "reload", "Reload", id="settings_reload"),
        Binding("p", "pair", "Pair", id="settings_pair"),
        Binding("x", "unpair", "Unpair", id="settings_unpair"),
    ]

    def __init__(self, client: HubClient) -> None:
        super().__init__(name="settings")
        self.client = client
        self.tinys: dict[str, Answer] = {}
        self.default_model: Answer = {}
        self.saved_model: Answer | None = None
        self.listed: Answer | HubError | None = None
        """GET /api/models's last answer (or the hub's refusal); None until the first."""
        self.phones: dict[str, Answer] = {}
        """GET /api/tokens's paired phones by deviceId."""

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="body"):
            yield Static("Tinys", classes="heading")
            yield DataTable(id="tinys", cursor_type="row", zebra_stripes=True)
            yield Static("loading…", id="tinys-note", markup=False)
            yield Static("Model", classes="heading")
            yield Static("loading…", id="model", markup=False)
            yield Static(ASKING_OLLAMA, id="models", markup=False)
            yield Static("Status", classes="heading")
            yield Static("loading…", id="status", markup=False)
            yield Static("Paired phones", classes="heading")
            yield DataTable(id="phones", cursor_type="row", zebra_stripes=True)
            yield Static("loading…", id="phones-note", markup=False)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#tinys", DataTable).add_columns(" ", "name", "visibility", "prompt")
        phones = self.query_one("#phones", DataTable)
        phones.add_columns("name", "platform", "paired", "online")
        phones.display = False

    def on_screen_resume(self) -> None:
        """Read everything afresh whenever the screen is shown: another client (a phone, a
        tool call) may have changed tinys or the model meanwhile."""
        self.query_one("#tinys", DataTable).focus()
        self.action_reload()

    @property
    def tiny_name(self) -> str:
        return str(getattr(self.app, "tiny_name", c.DEFAULT_TINY))

    @property
    def model_headers(self) -> dict[str, str]:
        return dict(getattr(self.app, "model_headers", {}) or {})

    def action_reload(self) -> None:
        self.load_tinys()
        self.load_model()

    # --- tinys -----------------------------------------------------------------------------

    @work(exclusive=True, group="tinys")
    async def load_tinys(self) -> None:
        note = self.query_one("#tinys-note", Static)
        try:
            answer = await self.client.call("GET", "/api/tinys", params={"limit": 50})
        except HubError as exc:
            note.update(str(exc))
            note.add_class("error")
            return
        note.remove_class("error")
        self.tinys = {t["name"]: t for t in answer.get("tinys", [])}
        self.fill_table()
        shown, total = len(self.tinys), answer.get("total", len(self.tinys))
        more = f" (the newest {shown} of {total})" if total > shown else ""
        note.update(f"talking to {self.tiny_name}{more}")

    def fill_table(self) -> None:
        """Redraw the rows, keeping the cursor on the same tiny when it is still there."""
        table = self.query_one("#tinys", DataTable)
        selected = self.selected_name()
        table.clear()
        for name, tiny in self.tinys.items():
            table.add_row(
                "▶" if name == self.tiny_name else "",
                Text(name),
                tiny.get("visibility", ""),
                Text(prompt_preview(tiny.get("systemPrompt", ""))),
                key=name,
            )
        if selected in self.tinys:
            table.move_cursor(row=table.get_row_index(selected))
        # The table is as tall as its rows: a row more or less must move what is below it
        # too, not only repaint the table (a terminal otherwise keeps the old lines there).
        table.refresh(layout=True)

    def selected_name(self) -> str | None:
        return self.selected_key("#tinys")

    def selected_key(self, selector: str) -> str | None:
        table = self.query_one(selector, DataTable)
        if table.row_count == 0:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    @on(DataTable.RowSelected, "#tinys")
    def row_chosen(self) -> None:
        self.action_use_tiny()

    def action_use_tiny(self) -> None:
        name = self.selected_name()
        if name is None:
            return
        self.app.tiny_name = name  # type: ignore[attr-defined]  # the chat screen reads it
        self.sub_title = f"talking to {name}"
        self.query_one("#tinys-note", Static).update(f"talking to {name}")
        self.fill_table()

    def action_new_tiny(self) -> None:
        self.app.push_screen(TinyForm(self.create_tiny), self.tiny_saved)

    def action_edit_tiny(self) -> None:
        name = self.selected_name()
        if name is None:
            self.notify("no tiny to edit", severity="warning")
            return
        self.app.push_screen(TinyForm(self.change_tiny, self.tinys[name]), self.tiny_saved)

    async def create_tiny(self, draft: TinyDraft) -> Answer:
        return await self.client.call("POST", "/api/tinys", body=draft.body())

    async def change_tiny(self, draft: TinyDraft) -> Answer:
        path = f"/api/tinys/{quote(draft.name, safe='')}"
        return await self.client.call("PATCH", path, body=draft.body())

    def tiny_saved(self, answer: Answer | None) -> None:
        if answer is None:
            return
        name = answer.get("tiny", {}).get("name", "")
        if answer.get("key"):
            self.app.push_screen(KeyNotice(name, answer["key"]))
        self.notify(f"saved {name}")
        self.load_tinys()

    # --- model and status ------------------------------------------------------------------

    @work(exclusive=True, group="model")
    async def load_model(self) -> None:
        """The saved choice, the hub's status and what there is to choose from. GET
        /api/models asks Ollama live (seconds, at worst), so the section says so meanwhile;
        all three are drawn together, so the section never mixes old and new answers."""
        self.query_one("#models").display = True
        self.show("#models", [ASKING_OLLAMA], False)
        model, health, listed, phones = await asyncio.gather(
            self._answer_or_error("/api/model"),
            self._answer_or_error("/api/health"),
            self._answer_or_error("/api/models"),
            self._answer_or_error("/api/tokens"),
        )
        if not isinstance(health, HubError):
            self.default_model = health.get("model", {})
        if not isinstance(model, HubError):
            self.saved_model = model.get("saved")
        self.listed = listed
        if isinstance(self.app.screen, ModelForm):
            self.app.screen.offer(listed)
        held = self.model_headers.get(c.H_MODEL_PROVIDER, "")
        failed = isinstance(health, HubError)
        lines = model_lines(model, health, held, ollama_models(listed))
        self.show("#model", lines, failed)
        # An unreachable hub is said once, in the line above.
        self.query_one("#models").display = not (failed and isinstance(listed, HubError))
        self.show("#models", models_lines(listed), isinstance(listed, HubError))
        self.show("#status", status_lines(health, self.client.url), failed)
        self.fill_phones(phones, failed)

    async def _answer_or_error(self, path: str) -> Answer | HubError:
        try:
            return await self.client.call("GET", path)
        except HubError as exc:
            return exc

    def show(self, selector: str, lines: list[str], failed: bool) -> None:
        static = self.query_one(selector, Static)
        static.update("\n".join(lines))
        static.set_class(failed, "error")

    def action_choose_model(self) -> None:
        current = self.saved_model or self.default_model
        self.app.push_screen(
            ModelForm(self.save_model, self.unset_model, current, self.listed), self.model_saved
        )

    async def save_model(self, draft: ModelDraft) -> Answer:
        answer = await self.client.call("PUT", "/api/model", body=draft.body())
        self.app.model_headers = draft.session_headers()  # type: ignore[attr-defined]
        return answer

    async def unset_model(self) -> Answer:
        answer = await self.client.call("DELETE", "/api/model")
        self.app.model_headers = {}  # type: ignore[attr-defined]
        return answer

    def model_saved(self, answer: Answer | None) -> None:
        if answer is None:
            return
        saved = answer.get("saved")
        self.notify("model choice saved" if saved else "unset: the hub's default answers")
        self.load_model()

    # --- paired phones ---------------------------------------------------------------------

    @work(exclusive=True, group="phones")
    async def load_phones(self) -> None:
        self.fill_phones(await self._answer_or_error("/api/tokens"), False)

    def fill_phones(self, answer: Answer | HubError, hub_unreachable: bool) -> None:
        """The phones table, or why there is none (an unreachable hub is said once, above)."""
        note = self.query_one("#phones-note", Static)
        table = self.query_one("#phones", DataTable)
        if isinstance(answer, HubError):
            self.phones = {}
            table.clear()
            table.display = False
            note.display = not hub_unreachable
            note.update(str(answer))
            note.add_class("error")
            return
        note.display = True
        note.remove_class("error")
        selected = self.selected_key("#phones")
        self.phones = {str(p["deviceId"]): p for p in answer.get("tokens", [])}
        table.clear()
        for device_id, phone in self.phones.items():
            table.add_row(
                Text(str(phone.get("name", ""))),
                str(phone.get("platform", "")),
                when(phone.get("pairedAt")),
                "online" if phone.get("online") else "offline",
                key=device_id,
            )
        if selected in self.phones:
            table.move_cursor(row=table.get_row_index(selected))
        table.display = bool(self.phones)
        count = len(self.phones)
        note.update(f"{count} paired · Unpair removes the selected one" if count else NO_PHONES)

    def action_pair(self) -> None:
        self.offer_pairing()

    @work(exclusive=True, group="pair")
    async def offer_pairing(self) -> None:
        try:
            offer = await self.client.call("POST", "/api/pair/offer")
        except HubError as exc:
            self.notify(str(exc), title="pairing", severity="error")
            return
        self.app.push_screen(PairNotice(offer), self.pair_closed)

    def pair_closed(self, _: None) -> None:
        """The phone may have used the code meanwhile: list the phones again."""
        self.load_phones()

    def action_unpair(self) -> None:
        device_id = self.selected_key("#phones")
        if device_id is None or device_id not in self.phones:
            self.notify("no paired phone to unpair", severity="warning")
            return
        phone = self.phones[device_id]
        question = (
            f"Unpair {phone.get('name', device_id)} ({phone.get('platform', '?')})? "
            "Its token stops working at once; pairing again needs a new code."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.unpair(device_id, str(phone.get("name", device_id)))

        self.app.push_screen(ConfirmScreen(question, "Unpair"), answered)

    @work(group="unpair")
    async def unpair(self, device_id: str, name: str) -> None:
        try:
            await self.client.call("DELETE", "/api/tokens", params={"id": device_id})
        except HubError as exc:
            self.notify(str(exc), title="unpair", severity="error")
        else:
            self.notify(f"unpaired {name}")
        self.load_phones()
