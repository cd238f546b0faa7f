"""``tiny-hub config``: every setting, the hub's and the installed drivers', with its value and
where that value comes from (a flag, the environment, config.toml and its line, the default)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Any

import hub.config.drivers as driver_settings
from drivers.base import Setting, load_drivers
from hub.config.load import load_settings, sections, upgraded_environ
from hub.config.settings import CONFIG_FILE_NAME, ConfigError, Settings, setting_fields
from hub.config.values import line_of

Row = tuple[str, str, str, str, str]
"""(toml key, environment variable, value shown, where it comes from, help)."""


def describe_settings(settings: Settings) -> list[Row]:
    """Every setting, the drivers' after the hub's, with secrets masked."""
    sources = setting_sources(settings)
    rows = []
    for f in setting_fields():
        value = getattr(settings, f.name)
        shown = ("(set)" if value else "(not set)") if f.metadata["secret"] else repr(value)
        toml_key = f"{f.metadata['section']}.{f.metadata['key']}"
        rows.append((toml_key, f.metadata["env"], shown, sources[f.name], f.metadata["help"]))
    declared = driver_settings.declared_sections(load_drivers())
    for section, values in settings.drivers.items():
        for key, value in values.items():
            setting: Setting | None = declared.get(section, {}).get(key)
            name = f"{driver_settings.TABLE}.{section}.{key}"
            if setting is None:
                rows.append(
                    (name, "", repr(value), sources[name], "(no installed driver reads it)")
                )
            else:
                variable = setting.variable(section)
                rows.append((name, variable, repr(value), sources[name], setting.help))
    return rows


def setting_sources(settings: Settings, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each setting's value comes from, in the order that wins: a command-line flag,
    the environment, config.toml (with its line), else the default. The hub's settings are
    named by field, the drivers' by their key in config.toml (``drivers.lamp.port``)."""
    env, _ = upgraded_environ(os.environ if environ is None else environ)
    try:
        without_flags = load_settings(home=settings.home, environ=env)
    except ConfigError:
        without_flags = settings
    path = settings.config_path
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    in_file = _places(text)
    sources = {}
    for f in setting_fields():
        section, key = f.metadata["section"], f.metadata["key"]
        if getattr(settings, f.name) != getattr(without_flags, f.name):
            sources[f.name] = "flag"
        elif env.get(f.metadata["env"]):
            sources[f.name] = f"env {f.metadata['env']}"
        elif (section, key) in in_file:
            sources[f.name] = f"{CONFIG_FILE_NAME}:{line_of(text, section, key)}"
        else:
            sources[f.name] = "default"
    declared = driver_settings.declared_sections(load_drivers())
    for section, values in settings.drivers.items():
        for key, value in values.items():
            setting = declared.get(section, {}).get(key)
            variable = setting.variable(section) if setting is not None else ""
            written = in_file.get(_driver_place(section, key, in_file))
            name = f"{driver_settings.TABLE}.{section}.{key}"
            if value != without_flags.drivers.get(section, {}).get(key, _UNSET):
                sources[name] = "flag"
            elif variable and env.get(variable):
                sources[name] = f"env {variable}"
            elif written is not None:
                sources[name] = f"{CONFIG_FILE_NAME}:{written}"
            else:
                sources[name] = "default"
    return sources


_UNSET = object()


def _places(text: str) -> dict[tuple[str, str], int]:
    """Every (section, key) config.toml sets, with its line."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    return {
        (section, key): line_of(text, section, key)
        for section, table in sections(document, {f.metadata["section"] for f in setting_fields()})
        if isinstance(table, dict)
        for key in table
    }


def _driver_place(
    section: str, key: str, in_file: Mapping[tuple[str, str], Any]
) -> tuple[str, str]:
    """Where a driver's key stands in the file: its section, or the old one it moved from."""
    moved = [old for old, new in driver_settings.MOVED.items() if new == section]
    for name in (f"{driver_settings.TABLE}.{section}", *moved):
        if (name, key) in in_file:
            return (name, key)
    return (f"{driver_settings.TABLE}.{section}", key)
