"""What the commands share: the one-line error, settings from the flags, where the local hub
answers and with which token."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import TextIO

from hub.cli.parser import TOKEN_ENV
from hub.config import Settings, load_settings
from hub.lan.address import dialable

EXIT_USAGE = 2


class CliError(Exception):
    """Stops the command with a one-line message."""


def settings_of(args: argparse.Namespace) -> Settings:
    """Settings from the data dir, the environment and the command's --host/--port."""
    return load_settings(
        home=getattr(args, "home", None),
        overrides={"host": getattr(args, "host", None), "port": getattr(args, "port", None)},
    )


def local_url(settings: Settings, url: str | None) -> str:
    if url:
        return url.rstrip("/")
    scheme = "https" if settings.lan_tls else "http"
    return f"{scheme}://{dialable(settings.host)}:{settings.port}"


def pin(settings: Settings, url: str) -> str | None:
    """For an https hub on this machine, its own certificate's fingerprint (from the data dir)."""
    from hub.lan.tls import local_fingerprint

    return local_fingerprint(settings.home) if url.startswith("https://") else None


def token(settings: Settings, given: str | None) -> str | None:
    if given:
        return given
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    with contextlib.suppress(OSError):
        return settings.owner_token_path.read_text(encoding="utf-8").strip() or None
    return None


def is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal (a person reads it and types into it)."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed, or no file behind it
        return False
