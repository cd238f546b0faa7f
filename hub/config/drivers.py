"""The drivers' settings: the ``[drivers.<section>]`` tables of config.toml and the variables of
every setting an installed driver declares (``drivers.base.Setting``).

The hub declares none of them: the installed drivers do (``Driver.declared_settings``), so a
package that adds a driver adds its settings too, checked as the hub's own are, shown by
``tiny-hub config`` with where each value comes from. A key a driver does not declare is
refused with the keys it does; a table no installed driver reads is kept as written, and the
hub says so when it starts (a package uninstalled for a while must not stop the hub).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from drivers.base import Driver, Setting
from hub.config.settings import ConfigError
from hub.config.values import checked, kind_of_value, parse_env

TABLE: Final = "drivers"
MOVED: Final = {"camera": "camera", "microphone": "microphone"}
"""Sections of the hub's own that became drivers' (the machine's camera and microphone): a
file that still has them is read as the drivers' sections, with a sentence saying so."""

Declared = dict[str, dict[str, Setting]]
"""Each section's settings, by key."""
Values = dict[str, dict[str, Any]]
"""Each section's values, by key."""


def declared_sections(installed: Sequence[type[Driver]]) -> Declared:
    """What the installed drivers read, section by section, in the order they are installed;
    drivers that share a section (``settings_section``) share its keys."""
    found: Declared = {}
    for cls in installed:
        keys = found.setdefault(cls.section(), {})
        for setting in cls.declared_settings():
            keys.setdefault(setting.key, setting)
    return found


def checked_value(where: str, setting: Setting, value: Any) -> Any:
    """``value`` held to the setting's type and choices, or ConfigError naming ``where``."""
    kept = checked(where, kind_of_value(setting.default), value)
    if setting.choices and kept not in setting.choices:
        raise ConfigError(f"{where}: {kept!r} is not one of: {', '.join(setting.choices)}")
    return kept


def table_values(
    section: str, table: Mapping[str, Any], declared: Declared, where: Callable[[str], str]
) -> dict[str, Any]:
    """One section's table (``where(key)`` names a key's place for an error), checked against
    what its drivers declare; a section no installed driver reads is kept as it is."""
    keys = declared.get(section)
    if keys is None:
        return dict(table)
    values: dict[str, Any] = {}
    for key, value in table.items():
        setting = keys.get(key)
        if setting is None:
            valid = ", ".join(keys)
            raise ConfigError(
                f"{where(key)}: unknown setting (keys of [{TABLE}.{section}]: {valid})"
            )
        values[key] = checked_value(where(key), setting, value)
    return values


def env_values(env: Mapping[str, str], declared: Declared) -> Values:
    """The values the environment sets (``Setting.variable``); empty variables set nothing."""
    found: Values = {}
    for section, keys in declared.items():
        for key, setting in keys.items():
            variable = setting.variable(section)
            raw = env.get(variable)
            if raw:
                parsed = parse_env(raw, kind_of_value(setting.default))
                where = f"environment variable {variable}"
                found.setdefault(section, {})[key] = checked_value(where, setting, parsed)
    return found


def flag_values(given: Mapping[str, Any], declared: Declared) -> Values:
    """Values set from code (``overrides={"drivers": {section: {key: value}}}``)."""
    found: Values = {}
    for section, table in given.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"setting {TABLE}.{section}: expected a table of its settings")

        def where(key: str, section: str = section) -> str:
            return f"setting {TABLE}.{section}.{key}"

        found[section] = table_values(section, table, declared, where)
    return found


def resolved(declared: Declared, *layers: Values) -> Values:
    """Every declared setting at its default, then each layer over the ones before it."""
    found: Values = {
        section: {key: setting.default for key, setting in keys.items()}
        for section, keys in declared.items()
    }
    for layer in layers:
        for section, values in layer.items():
            found.setdefault(section, {}).update(values)
    return found


def section_of(name: str) -> str | None:
    """The driver section a file's dotted section is (``drivers.lamp`` → ``lamp``, and
    the sections in :data:`MOVED`), or None for one of the hub's own."""
    if name.startswith(f"{TABLE}."):
        return name.removeprefix(f"{TABLE}.")
    return MOVED.get(name)


def moved_note(name: str) -> str:
    return f"[{name}] in config.toml is now [{TABLE}.{MOVED[name]}]: it was read as that"
