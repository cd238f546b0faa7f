"""The model: what there is to choose from (GET /api/models asks Ollama there and then, and
lists the embedded models with whether each is installed and calls tools), what the saved
choice and the hub's default can do, and the form that changes the choice.

What a choice can do is what the hub says: /api/health's ``model`` is what answers this person
(their saved choice, else the default), GET /api/model's ``default`` the hub's own.

A cloud API key is never saved: the hub refuses keys on ``PUT /api/model`` and keeps none, so
the key stays in this process's memory as ``App.model_headers`` (the ``x-tiny-model-*`` headers
the chat screen adds to each turn) and is never drawn on screen or written to disk.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    Footer,
    Input,
    Label,
    Select,
    Static,
)
from textual.widgets.select import NoSelection

from hub import contracts as c
from hub.client.http import HubError
from tui.guidance import FULL_AGENT_COMMAND, model_guidance, model_words, tools_word
from tui.settings.forms import Answer, FormModal

ASKING_OLLAMA = "asking Ollama…"


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


def describe_default(model: dict[str, Any]) -> str:
    return model_words(model)


def embedded_models(listed: Answer | HubError | None) -> list[Answer]:
    """The bundled embedded models as GET /api/models listed them (none before it answered)."""
    if not isinstance(listed, dict):
        return []
    return list((listed.get("embedded") or {}).get("models") or [])


def embedded_lines(listed: Answer) -> list[str]:
    """Each embedded model: whether it calls tools, and installed or how to install it."""
    embedded = listed.get("embedded") or {}
    models = embedded_models(listed)
    if not models:  # a hub that lists only the one it runs
        return [f"embedded: {embedded.get('id')} · {tools_word(embedded.get('tools'))}"]
    lines = ["embedded, offline on this machine:"]
    for model in models:
        state = "installed" if model.get("installed") else f"not installed: {model.get('install')}"
        configured = " · embedded.model" if model.get("key") == embedded.get("key") else ""
        lines.append(
            f"  {model.get('id')} · {tools_word(model.get('tools'))} · {state}{configured}"
        )
    return lines


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


def ollama_unlisted(listed: Answer | HubError | None, said: str = "") -> str:
    """Why no Ollama model can be listed ("" when some can): asking, the hub's sentence, or
    Ollama's state as the hub saw it — its error only when ``said`` (the lines above) does not
    hold it already."""
    if listed is None:
        return ASKING_OLLAMA
    if isinstance(listed, HubError):
        return str(listed)
    ollama = listed.get("ollama") or {}
    if not ollama.get("answering"):
        error = str(ollama.get("error") or "?")
        why = "see why above" if error in said else error
        return (
            f"Ollama: not answering at {ollama.get('host', '?')} ({why}); "
            f"install it and run: {FULL_AGENT_COMMAND}"
        )
    if not ollama.get("models"):
        return f"Ollama at {ollama.get('host', '?')} has no models (try: {FULL_AGENT_COMMAND})"
    return ""


def models_lines(listed: Answer | HubError | None, said: str = "") -> list[str]:
    """What there is to choose from: Ollama's models, each with tools on or off (or why there
    are none, without repeating an error ``said`` above), then the embedded model."""
    reason = ollama_unlisted(listed, said)
    if not isinstance(listed, dict):
        return [reason]
    if reason:
        lines = [reason]
    else:
        lines = [f"Ollama at {listed['ollama'].get('host', '?')} has:"]
        lines += [f"  {m.get('id')} · {tools_word(m.get('tools'))}" for m in ollama_models(listed)]
        if not any(m.get("tools") for m in ollama_models(listed)):
            lines.append(f"  none can call tools (try: {FULL_AGENT_COMMAND})")
    if listed.get("embedded"):
        lines += embedded_lines(listed)
    return lines


def model_lines(model: Answer | HubError, health: Answer | HubError, key_for: str) -> list[str]:
    """The model section: the hub's default, the caller's saved choice as the hub answers it
    (/api/health's model: what answers this person, tools and all), and a held key."""
    if isinstance(health, HubError):
        return [str(health)]
    answering = health.get("model", {})
    default = model.get("default") if isinstance(model, dict) else None
    default = default or answering
    lines = [f"default: {describe_default(default)}", f"  why: {default.get('reason', '')}"]
    if isinstance(model, HubError):
        lines.append(f"saved: {model}")
    elif model.get("saved") is None:
        lines.append("saved: none (the hub's default answers)")
    else:
        saved = model["saved"]
        where = f" (at {saved['baseUrl']})" if saved.get("baseUrl") else ""
        lines.append(f"saved: {model_words(answering)}{where}")
    if key_for:
        lines.append(f"API key for {key_for}: held in memory for this session only")
    elif isinstance(model, dict) and (model.get("saved") or {}).get("provider") in (
        c.CLOUD_PROVIDERS
    ):
        lines.append("API key: none in this session (the hub's model.api_key applies if set)")
    return lines


class ModelForm(FormModal[ModelDraft]):
    """Choose Ollama (one of its listed models, or an id typed by hand), an installed embedded
    model (or none: the hub's embedded.model), or a cloud provider with its key; or unset the
    saved choice so the hub's default answers again."""

    DEFAULT_CSS = """
    ModelForm #model-note { margin-top: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "unset", "Unset", id="settings_unset_model"),
    ]

    PROVIDERS: ClassVar[list[tuple[str, str]]] = [
        ("ollama (on this machine)", c.PROVIDER_OLLAMA),
        ("embedded (offline, on this machine)", c.PROVIDER_EMBEDDED),
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
            with Horizontal(classes="row", id="embedded-row"):
                yield Label("installed")
                yield Select[str]([], prompt=ASKING_OLLAMA, id="embedded-model", compact=True)
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
        """Offer Ollama's models and the installed embedded ones (GET /api/models's answer;
        the screen calls this again when an answer arrives while the form is open), each
        marked with whether it can call tools."""
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
        self.offer_embedded()
        self.sync_pick()

    def offer_embedded(self) -> None:
        """The installed embedded models; none picked means the hub's embedded.model."""
        pick = self.query_one("#embedded-model", Select)
        configured = self.listed.get("embedded") if isinstance(self.listed, dict) else None
        if configured:
            pick.prompt = (
                f"as the hub's embedded.model: {configured.get('id')} · "
                f"{tools_word(configured.get('tools'))}"
            )
        options = [
            (f"{m.get('id')} · {tools_word(m.get('tools'))}", str(m.get("key")))
            for m in embedded_models(self.listed)
            if m.get("installed")
        ]
        with pick.prevent(Select.Changed):
            pick.set_options(options)
        pick.disabled = not options

    def sync_pick(self) -> None:
        """Show the typed id as picked when it is one of the listed models, and say whether
        it can call tools."""
        pick = self.query_one("#ollama-model", Select)
        model_id = self.query_one("#model-id", Input).value.strip()
        listed = {str(m["id"]) for m in ollama_models(self.listed)}
        self.follow(pick, model_id if model_id in listed else Select.NULL)
        provider = self.query_one("#provider", Select).value
        ollama, embedded = provider == c.PROVIDER_OLLAMA, provider == c.PROVIDER_EMBEDDED
        named = self.embedded_named(model_id)
        self.follow(self.query_one("#embedded-model", Select), self.embedded_key(named))
        self.query_one("#pick-row").display = ollama
        self.query_one("#embedded-row").display = embedded
        self.query_one("#model-id", Input).placeholder = (
            "pick one above, or type an id" if ollama else ""
        )
        note = self.query_one("#model-note", Static)
        note.display = ollama or embedded
        if ollama:
            note.update(self.ollama_note(model_id))
        elif embedded:
            note.update(self.embedded_note(model_id, named))

    @staticmethod
    def follow(pick: Select[str], wanted: str | NoSelection) -> None:
        if pick.value != wanted:
            with pick.prevent(Select.Changed):  # following the id, not picking one
                pick.value = wanted

    def embedded_named(self, model_id: str) -> Answer | None:
        """The listed embedded model an id names (its key or its title), if any."""
        wanted = model_id.lower()
        for model in embedded_models(self.listed):
            if wanted in (str(model.get("key")).lower(), str(model.get("id")).lower()):
                return model
        return None

    @staticmethod
    def embedded_key(model: Answer | None) -> str | NoSelection:
        if model is None or not model.get("installed"):
            return Select.NULL
        return str(model.get("key"))

    def embedded_note(self, model_id: str, named: Answer | None) -> str:
        """What the picked embedded model (or the hub's embedded.model) can do."""
        configured = self.listed.get("embedded") if isinstance(self.listed, dict) else None
        if named is not None and not named.get("installed"):
            return f"{named.get('id')} is not installed: {named.get('install')}"
        if model_id and named is None:
            return f"{model_id} is no embedded model the hub knows: pick one above."
        model = named or configured or {}
        return model_guidance(
            {
                "provider": c.PROVIDER_EMBEDDED,
                "id": model.get("id") or "the embedded model",
                "toolsCapable": model.get("tools"),
            }
        )

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
    @on(Select.Changed, "#embedded-model")
    def model_picked(self, event: Select.Changed) -> None:
        """Picking a listed model fills in its id (which can still be edited by hand); an
        embedded pick taken back leaves no id (the hub's embedded.model). Only the person's
        picks arrive here: sync_pick's own changes are not announced."""
        embedded = event.select.id == "embedded-model"
        if event.value == Select.NULL and not embedded:
            return
        wanted = "" if event.value == Select.NULL else str(event.value)
        model_id = self.query_one("#model-id", Input)
        if model_id.value != wanted:
            model_id.value = wanted

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
