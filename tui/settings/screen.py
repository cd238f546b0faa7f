"""The settings screen: which tiny you talk to (and its prompt), which model answers, and how
the hub is doing — all read and changed over the hub's HTTP API, like every other client.

What there is to choose from comes from ``GET /api/models``: the hub asks Ollama there and then,
so that request runs in a worker and the screen says "asking Ollama…" until it answers. The
chosen tiny goes up to the App (``TinyChosen``), which keeps it as ``tiny_name`` for the chat
screen to send as ``x-tiny-name``; a session's model headers go up the same way.
Phones are listed from ``GET /api/tokens``; ``DELETE /api/tokens?id=`` unpairs one, after a yes.
The owner also sees the people of the hub (``GET /api/people``), adds one (``POST /api/people``:
their pairing code is shown once) and removes one (``DELETE /api/people/<login>``, after
choosing to keep or purge their data); a member's screen has no people section.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar
from urllib.parse import quote

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Header,
    Static,
)

from hub import contracts as c
from hub.client.http import HubClient, HubError
from tui.settings.forms import Answer
from tui.settings.model import (
    ASKING_OLLAMA,
    ModelDraft,
    ModelForm,
    model_lines,
    models_lines,
)
from tui.settings.pairing import NO_PHONES, PairNotice, when
from tui.settings.people import (
    NO_PEOPLE,
    NOT_OWNER,
    DataChoice,
    PersonDraft,
    PersonForm,
    RemoveQuestion,
)
from tui.settings.status import status_lines
from tui.settings.telegram import TelegramForm, telegram_section
from tui.settings.tinys import KeyNotice, TinyDraft, TinyForm, prompt_preview
from tui.tables import cursor_key
from tui.widgets import ConfirmScreen, KeysFooter


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
    SettingsScreen #people { height: auto; max-height: 7; }
    SettingsScreen #people-note { color: $text-muted; }
    SettingsScreen #people-note.error { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("u", "use_tiny", "Use", id="settings_use_tiny"),
        Binding("n", "new_tiny", "New", id="settings_new_tiny"),
        Binding("e", "edit_tiny", "Edit", id="settings_edit_tiny"),
        Binding("m", "choose_model", "Model", id="settings_choose_model"),
        Binding("r", "reload", "Reload", id="settings_reload"),
        Binding("p", "pair", "Pair", id="settings_pair"),
        Binding("x", "unpair", "Unpair", id="settings_unpair"),
        Binding("a", "add_person", "Add person", id="settings_add_person"),
        Binding("d", "remove_person", "Remove", id="settings_remove_person"),
        Binding("t", "telegram", "Telegram", id="settings_telegram"),
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
        self.people: dict[str, Answer] = {}
        """GET /api/people's people by login (the owner's screen only)."""
        self.bot: Answer | None = None  # GET /api/telegram's bot; None: none, or not read yet
        self.talking_to = ""
        """The tiny picked here ("" until one is: the app's own then applies)."""
        self.held_headers: dict[str, str] | None = None
        """The session's model headers as last set here (None until then)."""
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
            yield Static("People", classes="heading", id="people-heading")
            yield DataTable(id="people", cursor_type="row", zebra_stripes=True)
            yield Static("loading…", id="people-note", markup=False)
            yield Static("Telegram", classes="heading")
            yield Static("loading…", id="telegram", markup=False)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#tinys", DataTable).add_columns(" ", "name", "visibility", "prompt")
        phones = self.query_one("#phones", DataTable)
        phones.add_columns("name", "platform", "paired", "online")
        phones.display = False
        people = self.query_one("#people", DataTable)
        people.add_columns("login", "name", "role", "devices")
        people.display = False

    def on_screen_resume(self) -> None:
        """Read everything afresh whenever the screen is shown: another client (a phone, a
        tool call) may have changed tinys or the model meanwhile."""
        self.query_one("#tinys", DataTable).focus()
        self.action_reload()

    class TinyChosen(Message):
        """The person picked the tiny the chat talks to: the app keeps it."""

        def __init__(self, tiny: str) -> None:
            super().__init__()
            self.tiny = tiny

    class SessionHeaders(Message):
        """The ``x-tiny-model-*`` headers the chat adds to each turn of this session (they
        carry a cloud key, which the hub never stores): the app keeps them, in memory only."""

        def __init__(self, headers: dict[str, str]) -> None:
            super().__init__()
            self.headers = headers

    @property
    def tiny_name(self) -> str:
        return self.talking_to or str(getattr(self.app, "tiny_name", c.DEFAULT_TINY))

    @property
    def model_headers(self) -> dict[str, str]:
        if self.held_headers is not None:
            return dict(self.held_headers)
        return dict(getattr(self.app, "model_headers", {}) or {})

    def action_reload(self) -> None:
        self.load_tinys()
        self.load_model()
        self.load_telegram()

    @work(exclusive=True, group="telegram")
    async def load_telegram(self) -> None:
        self.bot, lines, failed = await telegram_section(self.client)
        self.show("#telegram", lines, failed)

    def action_telegram(self) -> None:
        self.app.push_screen(TelegramForm(self.client, self.bot, self.tiny_name), self.bot_saved)

    def bot_saved(self, answer: Answer | None) -> None:
        if answer is not None:
            self.notify(str(answer.get("said") or "Telegram saved"), title="Telegram")
            self.load_telegram()

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
        return cursor_key(self.query_one(selector, DataTable))

    @on(DataTable.RowSelected, "#tinys")
    def row_chosen(self) -> None:
        self.action_use_tiny()

    def action_use_tiny(self) -> None:
        name = self.selected_name()
        if name is None:
            return
        self.talking_to = name
        self.post_message(self.TinyChosen(name))
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
        model, health, listed, phones, people = await asyncio.gather(
            self._answer_or_error("/api/model"),
            self._answer_or_error("/api/health"),
            self._answer_or_error("/api/models"),
            self._answer_or_error("/api/tokens"),
            self._answer_or_error("/api/people"),
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
        lines = model_lines(model, health, held)
        self.show("#model", lines, failed)
        # An unreachable hub is said once, in the line above.
        self.query_one("#models").display = not (failed and isinstance(listed, HubError))
        said = "\n".join(lines)  # the hub's reason may hold Ollama's error already
        self.show("#models", models_lines(listed, said), isinstance(listed, HubError))
        self.show("#status", status_lines(health, self.client.url), failed)
        self.fill_phones(phones, failed)
        self.fill_people(people, failed)

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
        self.held_headers = draft.session_headers()
        self.post_message(self.SessionHeaders(self.held_headers))
        return answer

    async def unset_model(self) -> Answer:
        answer = await self.client.call("DELETE", "/api/model")
        self.held_headers = {}
        self.post_message(self.SessionHeaders({}))
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
        """The phone may have used the code meanwhile: list the phones (and people) again."""
        self.load_phones()
        self.load_people()

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

    # --- people (the owner's) ----------------------------------------------------------------

    @work(exclusive=True, group="people")
    async def load_people(self) -> None:
        self.fill_people(await self._answer_or_error("/api/people"), False)

    def fill_people(self, answer: Answer | HubError, hub_unreachable: bool) -> None:
        """The people table for the owner; a member (403) sees no people section at all."""
        note = self.query_one("#people-note", Static)
        table = self.query_one("#people", DataTable)
        not_owner = isinstance(answer, HubError) and str(answer).startswith(NOT_OWNER)
        self.query_one("#people-heading").display = not not_owner
        if isinstance(answer, HubError):
            self.people = {}
            table.clear()
            table.display = False
            note.display = not (hub_unreachable or not_owner)
            note.update(str(answer))
            note.add_class("error")
            return
        note.display = True
        note.remove_class("error")
        selected = self.selected_key("#people")
        current = [p for p in answer.get("people", []) if p.get("removedAt") is None]
        self.people = {str(p["login"]): p for p in current}
        table.clear()
        for login, person in self.people.items():
            table.add_row(
                Text(f"@{login}"),
                Text(str(person.get("name", ""))),
                str(person.get("role", "")),
                str(person.get("devices", 0)),
                key=login,
            )
        if selected in self.people:
            table.move_cursor(row=table.get_row_index(selected))
        table.display = bool(self.people)
        others = len(self.people) - 1
        note.update(
            f"{others} besides you · Remove asks keep or purge" if others > 0 else NO_PEOPLE
        )

    def action_add_person(self) -> None:
        self.app.push_screen(PersonForm(self.create_person), self.person_added)

    async def create_person(self, draft: PersonDraft) -> Answer:
        return await self.client.call("POST", "/api/people", body=draft.body())

    def person_added(self, answer: Answer | None) -> None:
        if answer is None:
            return
        login = str(answer.get("person", {}).get("login", ""))
        self.notify(f"added @{login}")
        if answer.get("pairing"):
            self.app.push_screen(
                PairNotice(answer["pairing"], f"Pair @{login}'s phone"), self.pair_closed
            )
        self.load_people()

    def action_remove_person(self) -> None:
        login = self.selected_key("#people")
        person = self.people.get(login or "")
        if login is None or person is None or person.get("role") == "owner":
            self.notify("select a person to remove (not yourself)", severity="warning")
            return

        def answered(choice: DataChoice | None) -> None:
            if choice is not None:
                self.remove_person(login, choice)

        self.app.push_screen(RemoveQuestion(login, str(person.get("name", login))), answered)

    @work(group="remove-person")
    async def remove_person(self, login: str, data: DataChoice) -> None:
        path = f"/api/people/{quote(login, safe='')}"
        try:
            await self.client.call("DELETE", path, body={"data": data})
        except HubError as exc:
            self.notify(str(exc), title="remove", severity="error")
        else:
            kept = "kept" if data == "keep" else "purged"
            self.notify(f"removed @{login}; their data is {kept}")
        self.load_people()
