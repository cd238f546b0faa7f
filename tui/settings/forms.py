"""The settings screen's forms: a modal whose save goes to the hub while it stays open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeVar

from textual import work
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Select, Static

from hub.client.http import HubError

Answer = dict[str, Any]
DraftT = TypeVar("DraftT")


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
    FormModal Select > SelectOverlay.-textual-compact {
        border: round $accent !important; background: $panel;
    }
    FormModal.-choosing .note { visibility: hidden; }
    FormModal TextArea { height: 8; background: $boost; }
    FormModal #error { color: $error; margin-top: 1; }
    FormModal .note { width: 1fr; color: $text-muted; margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="settings_save"),
        Binding("escape", "cancel", "Cancel", id="settings_cancel"),
    ]

    def __init__(self, submit: Callable[[DraftT], Awaitable[Answer]]) -> None:
        super().__init__()
        self.submit = submit

    def on_mount(self) -> None:
        for select in self.query(Select):
            self.watch(select, "expanded", self._choosing, init=False)

    def _choosing(self) -> None:
        """While a list is open over the form, the notes it covers in part are hidden: the
        list is framed on a blank form, not laid over the ends of their lines."""
        self.set_class(any(select.expanded for select in self.query(Select)), "-choosing")

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
