"""What the TUI keeps on this machine: its data dir (conversations, notes) and its settings file.

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
        """Keep the theme for next time, leaving the rest of tui.toml as the person wrote it."""
        self.theme = theme
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lines = []
        if self.settings_path.exists():
            lines = [
                line
                for line in self.settings_path.read_text(encoding="utf-8").splitlines()
                if not line.strip().startswith("theme")
            ]
        self.settings_path.write_text(
            "\n".join([f'theme = "{theme}"', *lines]) + "\n", encoding="utf-8"
        )
