"""tui.toml: read once at start, and the theme written back without touching the rest."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tui.config import TuiConfig

WRITTEN_BY_HAND = """\
# my terminal is dark
theme = "nord"   # for now

[keys]
# sending with ctrl+s, like my editor
send = "ctrl+s"
themes_note = "theme-ish keys stay"
"""


def test_saving_the_theme_changes_only_the_theme(tmp_path: Path) -> None:
    (tmp_path / "tui.toml").write_text(WRITTEN_BY_HAND)
    config = TuiConfig.load(tmp_path)
    config.save_theme("ocean")
    after = (tmp_path / "tui.toml").read_text()
    assert after == WRITTEN_BY_HAND.replace('theme = "nord"', 'theme = "ocean"')
    again = TuiConfig.load(tmp_path)
    assert again.theme == "ocean"
    assert again.keys == {"send": "ctrl+s", "themes_note": "theme-ish keys stay"}


def test_a_new_theme_goes_before_the_tables(tmp_path: Path) -> None:
    (tmp_path / "tui.toml").write_text('[keys]\nsend = "ctrl+s"\n')
    TuiConfig.load(tmp_path).save_theme("ocean")
    parsed = tomllib.loads((tmp_path / "tui.toml").read_text())
    assert parsed == {"theme": "ocean", "keys": {"send": "ctrl+s"}}


def test_a_first_theme_makes_the_file(tmp_path: Path) -> None:
    TuiConfig(tmp_path / "new").save_theme("ocean")
    assert tomllib.loads((tmp_path / "new" / "tui.toml").read_text()) == {"theme": "ocean"}


def test_a_broken_file_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "tui.toml").write_text("[keys\nsend =")
    config = TuiConfig.load(tmp_path)
    with pytest.raises(OSError, match="not valid TOML"):
        config.save_theme("ocean")
    assert (tmp_path / "tui.toml").read_text() == "[keys\nsend ="
    assert config.theme == "ocean"  # for this session
