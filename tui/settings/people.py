"""People of the hub, for its owner: the add-a-person form (its pairing code is then shown
once, in the pairing notice) and the question a removal asks — keep their data or purge it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from tui.settings.forms import FormModal

NO_PEOPLE = "only you so far · Add person makes a pairing code for someone's phone"
#: What a member's settings screen shows instead of the people (the hub's 403).
NOT_OWNER = "the hub answered 403"

DataChoice = Literal["keep", "purge"]


@dataclass(frozen=True)
class PersonDraft:
    name: str
    login: str = ""

    def body(self) -> dict[str, str]:
        body = {"name": self.name, "with": "code"}
        if self.login:
            body["login"] = self.login
        return body


class PersonForm(FormModal[PersonDraft]):
    """A new person: name and, optionally, their @login; saving answers with their code."""

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Label("Add a person", classes="title")
            with Horizontal(classes="row"):
                yield Label("name")
                yield Input(placeholder="as they are called", id="person-name", compact=True)
            with Horizontal(classes="row"):
                yield Label("login")
                yield Input(
                    placeholder="optional: made from the name", id="person-login", compact=True
                )
            yield Label(
                "They get their own memory, tinys, devices and model. Their phone pairs with "
                "the code shown next.",
                classes="note",
            )
            yield Static("", id="error", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#person-name").focus()

    def draft(self) -> PersonDraft:
        name = self.query_one("#person-name", Input).value.strip()
        if not name:
            raise ValueError("a name, please")
        login = self.query_one("#person-login", Input).value.strip()
        return PersonDraft(name, login)


class RemoveQuestion(ModalScreen[DataChoice | None]):
    """Remove a person: keep (k) or purge (p) their data, or cancel (n, Escape). Cancel has the
    focus, so a stray Enter removes nobody."""

    DEFAULT_CSS = """
    RemoveQuestion { align: center middle; }
    RemoveQuestion > Vertical {
        width: 70; max-width: 100%; height: auto; padding: 1 2;
        border: thick $error; background: $surface;
    }
    RemoveQuestion #question { height: auto; }
    RemoveQuestion Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    RemoveQuestion Button { margin-left: 1; }
    """
    AUTO_FOCUS = "#cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "answer('keep')", "Keep data", id="people_keep"),
        Binding("p", "answer('purge')", "Purge data", id="people_purge"),
        Binding("n,escape", "answer('')", "Cancel", id="people_cancel"),
    ]

    def __init__(self, login: str, name: str) -> None:
        super().__init__()
        self.question = (
            f"Remove {name} (@{login})? Every token they hold stops working at once.\n"
            "Keep their data (memory, tinys, archives stay on the hub) or purge all of it?"
        )

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question", markup=False)
            with Horizontal():
                yield Button("Keep data (k)", id="keep", variant="warning")
                yield Button("Purge data (p)", id="purge", variant="error")
                yield Button("Cancel (n)", id="cancel")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_answer(str(event.button.id))

    def action_answer(self, choice: str) -> None:
        if choice == "keep":
            self.dismiss("keep")
        elif choice == "purge":
            self.dismiss("purge")
        else:
            self.dismiss(None)
