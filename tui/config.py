"""What the TUI keeps on this machine: its data dir (conversations, notes, the map) and its settings
file.

``tui.toml`` in the data dir holds the key bindings (``[keys]``: binding id = key, e.g.
``send = "ctrl+s"``) and the theme (``theme = "nord"``). Nothing here is ever sent to the hub:
the TUI is one client among many, and these are this client's own choices.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

log = logging.getLogger(__name__)

SETTINGS_FILE = "tui.toml"


@dataclass
class TuiConfig:
    data_dir: Path
    keys: dict[str, str] = field(default_factory=dict)
    """Binding id → key(s), applied with ``App.set_keymap``."""
    theme: str = ""
    problems: list[str] = field(default_factory=list)
    """What was wrong with tui.toml (shown once in the app; the defaults are used instead)."""

    @property
    def conversations_dir(self) -> Path:
        return self.data_dir / "conversations"

    @property
    def notes_path(self) -> Path:
        return self.data_dir / "notes.json"

    @property
    def map_path(self) -> Path:
        """The Map screen's markers and view (``tui/map_board.py``)."""
        return self.data_dir / "map.json"

    @property
    def settings_path(self) -> Path:
        return self.data_dir / SETTINGS_FILE

    @classmethod
    def load(cls, data_dir: Path) -> TuiConfig:
        config = cls(data_dir)
        path = config.settings_path
        if not path.exists():
            return config
        try:
            raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            config.problems.append(f"{path}: {exc}; using the default keys and theme")
            return config
        keys = raw.get("keys", {})
        if isinstance(keys, dict) and all(isinstance(v, str) for v in keys.values()):
            config.keys = {str(k): v for k, v in keys.items()}
        else:
            config.problems.append(f"{path}: [keys] must map binding ids to key names")
        theme = raw.get("theme", "")
        if isinstance(theme, str):
            config.theme = theme
        else:
            config.problems.append(f"{path}: theme must be a string")
        return config

    def save_theme(self, theme: str) -> None:
        """Keep the theme for next time, leaving the rest of tui.toml as the person wrote it
        (comments, order, other tables): tomlkit edits the one value in place. A file that
        does not parse is left alone, and the theme then lasts this session only."""
        self.theme = theme
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.settings_path
        try:
            document = tomlkit.parse(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            document = tomlkit.document()
        except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
            raise OSError(f"{path} is not valid TOML ({exc}); the theme is not saved") from None
        _set_top_level(document, "theme", theme)
        path.write_text(tomlkit.dumps(document), encoding="utf-8")


def _set_top_level(document: TOMLDocument, key: str, value: str) -> None:
    """Set a top-level key: in place when it is there, else before the first table (a key
    written after ``[keys]`` would belong to that table)."""
    if key in document:
        document[key] = value
        return
    tables = [name for name, item in document.items() if isinstance(item, Table)]
    if not tables:
        document[key] = value
        return
    rest = {name: document[name] for name in tables}
    for name in tables:
        document.remove(name)
    document[key] = value
    for name, table in rest.items():
        document[name] = table
