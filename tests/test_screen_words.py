"""The rule that finds words cut at an edge (tests/screen_words.py) catches the three ways the
terminal UI cut words at 80 columns — a footer past the edge ("f7 Co"), a note wider than its
dialog ("Their phone pairs wit"), a one-row hint with two rows of words ("ask the companion
to") — and passes the same screens once they wrap, scroll, or sit under an open dropdown."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Footer, Label, Select, Static

from tests.screen_words import cut_words
from tui.widgets import KeysFooter

SCREENS = ("Chat", "Devices", "Memory", "Settings", "Map", "Inbox", "Community", "Jobs")
NOTE = (
    "They get their own memory, tinys, devices and model. Their phone pairs with the code "
    "shown next."
)
HINT = "centred on 20° N · zoom 1 · no markers yet: ask the companion to put some on the map"


class Shown(App[None]):
    """One screen of widgets at 80×24; ``fixed`` draws the way the terminal UI does now."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(f"f{n}", f"notify('{name}')", name) for n, name in enumerate(SCREENS, 1)),
        Binding("r", "notify('r')", "Refresh"),
        Binding("ctrl+q", "quit", "Quit"),
    ]

    AUTO_FOCUS = "Select"

    def __init__(self, part: str, fixed: bool) -> None:
        super().__init__()
        self.part, self.fixed = part, fixed

    def compose(self) -> ComposeResult:
        if self.part == "footer":
            yield KeysFooter() if self.fixed else Footer()
        elif self.part == "note":
            with Vertical(id="dialog"):
                yield Static(NOTE) if self.fixed else Label(NOTE)
        elif self.part == "hint":
            yield Static(HINT, id="hint", classes="auto" if self.fixed else "")
        elif self.part == "scrolled":
            with VerticalScroll(id="long"):
                yield from (Static(f"line {n} of a long list") for n in range(60))
        elif self.part == "dropdown":
            with Vertical(id="dialog"):
                yield Select([(f"provider {n}", n) for n in range(8)], value=0, compact=True)
                yield Static(NOTE)

    CSS = """
    #dialog { width: 74; height: auto; border: round $primary; }
    #hint { height: 1; } #hint.auto { height: auto; }
    #long { height: 10; }
    """


LAYOUT_PASSES = 20


async def problems_of(part: str, fixed: bool, keys: tuple[str, ...] = ()) -> list[str]:
    app = Shown(part, fixed)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        if part == "dropdown":
            assert app.query_one(Select).expanded, "the list is open over the note"
        found = cut_words(app.screen)
        # A KeysFooter grows a row at a time, a layout each; on a busy machine one pause can
        # end between two of them. A cut that stays through every pass is a cut.
        for _ in range(LAYOUT_PASSES):
            if not found:
                break
            await pilot.pause()
            await pilot.wait_for_scheduled_animations()
            found = cut_words(app.screen)
        return found


async def test_a_footer_cut_at_the_edge_is_caught_and_a_wrapping_one_passes() -> None:
    found = await problems_of("footer", fixed=False)
    assert any("f7 Community" in problem for problem in found), found
    assert await problems_of("footer", fixed=True) == []


async def test_a_note_wider_than_its_dialog_is_caught_and_a_wrapping_one_passes() -> None:
    found = await problems_of("note", fixed=False)
    assert [problem for problem in found if "Their phone pairs with" in problem], found
    assert await problems_of("note", fixed=True) == []


async def test_a_hint_with_more_words_than_its_row_is_caught_and_a_growing_one_passes() -> None:
    found = await problems_of("hint", fixed=False)
    assert found and "shows" in found[0] and found[0].endswith(f"of {HINT!r}"), found
    assert await problems_of("hint", fixed=True) == []


async def test_text_scrolled_out_of_view_or_under_an_open_dropdown_is_not_cut() -> None:
    assert await problems_of("scrolled", fixed=True) == []
    assert await problems_of("dropdown", fixed=True, keys=("enter",)) == []


def test_the_rule_reads_what_any_text_widget_says() -> None:
    from tests.screen_words import plain_text

    class Drawn(Static):
        def render(self) -> Any:
            return "drawn by render"

    assert plain_text(Drawn()) == "drawn by render"
