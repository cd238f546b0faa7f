"""Words a person cannot read whole: the rule the screen tests hold every text on a screen to.

A text widget (a hint, a status line, a note in a dialog, a footer key, a button) shows its
words whole, or it is cut. It can be cut in two ways:

- it is smaller than its own text: a one-row hint whose text needs two rows, a footer key
  narrower than its label. Drawn at its own size, its words are not its text's words;
- it is bigger than the room its container gives it, and the container does not scroll that
  way: a note wider than its dialog, a key past the right edge of the footer.

So the words drawn are compared with the words of the text, in order: "f7 Co" for
"f7 Community" differs, "Their phone pairs wit" differs, and so does a hint that stops after
"ask the companion to". A word the text itself shortens ("stora…" in the text) is the text's
own choice and passes; a widget scrolled out of view is one scroll away and passes too.
"""

from __future__ import annotations

import contextlib
from typing import Any

from rich.text import Text
from textual.content import Content
from textual.errors import NoWidget
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Button, Static
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast

TEXT_WIDGETS = (Static, FooterKey, Button)


def plain_text(widget: Widget) -> str | None:
    """The text a widget shows, or None when what it draws is not text (a table, a chart)."""
    try:
        rendered: Any = widget.render()
    except Exception:  # a widget that cannot render outside its own refresh is no text
        return None
    if isinstance(rendered, Content | Text):
        return rendered.plain
    if isinstance(rendered, str):
        return rendered
    return None


def drawn_text(widget: Widget) -> str:
    """What the widget draws inside its border and padding, at its own size."""
    gutter = widget.styles.gutter
    area = Region(gutter.left, gutter.top, widget.size.width, widget.size.height)
    return "\n".join(strip.text for strip in widget.render_lines(area))


def scrolls_to_show(widget: Widget, seen: Region, region: Region) -> bool:
    """Whether an ancestor shows a scrollbar the way ``widget`` is hidden, so the rest is
    reachable (a footer scrolls too, by the mouse wheel only, with no bar: that is no way)."""
    wider, taller = seen.width < region.width, seen.height < region.height
    for ancestor in widget.ancestors:
        if not isinstance(ancestor, Widget) or isinstance(ancestor, Screen):
            break
        styles = ancestor.styles
        across = ancestor.show_horizontal_scrollbar and styles.scrollbar_size_horizontal > 0
        down = ancestor.show_vertical_scrollbar and styles.scrollbar_size_vertical > 0
        if (across or down) and (across or not wider) and (down or not taller):
            return True
    return False


def words(lines: list[Strip]) -> list[str]:
    return " ".join(strip.text for strip in lines).split()


def widget_name(widget: Widget) -> str:
    return f"{type(widget).__name__}#{widget.id}" if widget.id else type(widget).__name__


def overlays(screen: Screen[Any]) -> list[tuple[Widget, Region]]:
    """What is drawn over the screen on purpose (an open dropdown's list), where it is."""
    found = []
    for widget in screen.query("*"):
        if widget.styles.overlay == "screen" and widget.display and widget.size:
            with contextlib.suppress(NoWidget):
                found.append((widget, screen.find_widget(widget).visible_region))
    return found


def under_an_overlay(widget: Widget, seen: Region, over: list[tuple[Widget, Region]]) -> bool:
    return any(
        region.overlaps(seen) and widget is not layer and layer not in widget.ancestors
        for layer, region in over
    )


def cut_words(screen: Screen[Any]) -> list[str]:
    """Every text on ``screen`` that does not show all its words whole, and why. What an open
    dropdown covers is not counted as cut; notifications are not the screen's (clear them)."""
    composed = screen._compositor.render_strips()
    over = overlays(screen)
    problems = []
    for widget in screen.query("*"):
        if not isinstance(widget, TEXT_WIDGETS) or isinstance(widget, Toast):
            continue
        if not widget.display or not widget.size:
            continue
        text = plain_text(widget)
        if text is None or not text.strip():
            continue
        try:
            geometry = screen.find_widget(widget)
        except NoWidget:
            continue  # inside something that is not shown
        name, region, seen = widget_name(widget), geometry.region, geometry.visible_region
        drawn = drawn_text(widget)
        if drawn.split() != text.split():
            problems.append(f"{name} is too small: shows {' '.join(drawn.split())!r} of {text!r}")
        elif seen != region and not scrolls_to_show(widget, seen, region):
            problems.append(f"{name} is cut at {seen} of {region}: {text!r}")
        elif seen and not under_an_overlay(widget, seen, over):
            own = widget.render_lines(seen.translate(-region.offset))
            on_screen = [line.crop(seen.x, seen.right) for line in composed[seen.y : seen.bottom]]
            if words(on_screen) != words(own):
                shown = " ".join(words(on_screen))
                problems.append(f"{name} is drawn over: the screen shows {shown!r} of {text!r}")
    return problems


def shown_in(widget: Widget) -> str:
    """What the screen shows where ``widget`` is, line by line."""
    screen = widget.screen
    seen = screen.find_widget(widget).visible_region
    lines = screen._compositor.render_strips()[seen.y : seen.bottom]
    return "\n".join(line.crop(seen.x, seen.right).text for line in lines)
