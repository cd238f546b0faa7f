"""Reading one value: its type from a declaration, from the text of an environment variable, and
where a key stands in config.toml (so an error names the file, the line and the key)."""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import json
import re
import tomllib
import typing
from pathlib import Path
from typing import Any, cast

from hub.config.settings import ConfigError, Settings


def kind_of_field(f: dataclasses.Field[Any]) -> type:
    """The declared type of a setting, from the evaluated annotation (``tuple[str, ...]`` is
    ``tuple``, ``Mapping[str, Any]`` a table)."""
    declared = _setting_types()[f.name]
    origin = typing.get_origin(declared) or declared
    if origin in (tuple, list):
        return tuple
    if isinstance(origin, type) and issubclass(origin, collections.abc.Mapping):
        return dict
    if origin in (bool, int, float):
        return cast(type, origin)
    return str


def kind_of_value(default: object) -> type:
    """The type of a driver's setting, from its default (``drivers.base.Setting``)."""
    for kind in (bool, int, float, tuple):
        if isinstance(default, kind):
            return kind
    return str


@functools.cache
def _setting_types() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def parse_env(raw: str, kind: type) -> Any:
    """The text of an environment variable as a value of ``kind`` (left as text when it is not
    one: :func:`checked` then says what was expected)."""
    if kind is tuple:
        return [part.strip() for part in raw.split(",") if part.strip()]
    if kind is dict:
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    if kind is bool:
        lowered = raw.strip().lower()
        return {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}.get(
            lowered, raw
        )
    if kind in (int, float):
        try:
            return kind(raw.strip())
        except ValueError:
            return raw
    return raw


_NOUNS = {
    int: "a whole number",
    float: "a number",
    str: "a string",
    tuple: "a list of strings",
    bool: "true or false",
    dict: "a table (a JSON object in the environment variable)",
}


def checked(where: str, kind: type, value: Any) -> Any:
    """``value`` as ``kind`` holds it (a list becomes a tuple, a whole number a float where a
    number is wanted), or ConfigError naming ``where`` and what was expected."""
    ok = (kind is bool and isinstance(value, bool)) or (
        not isinstance(value, bool)
        and (
            isinstance(value, kind)
            or (kind is float and isinstance(value, int))
            or (
                kind is tuple and isinstance(value, list) and all(isinstance(v, str) for v in value)
            )
        )
    )
    if not ok:
        raise ConfigError(f"{where}: expected {_NOUNS[kind]}, got {value!r}")
    if kind is tuple:
        return tuple(value)
    return float(value) if kind is float else value


def describe_syntax_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> str:
    """The TOML parser's complaint as a person reads it: the file, the line and the key."""
    match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
    if not match:
        return f"{path}: not valid TOML: {reason}"
    line_no = int(match.group(1))
    lines = text.splitlines()
    source = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
    key = source.split("=", 1)[0].strip() if "=" in source else source.strip()
    return f"{path}, line {line_no}, key '{key}': not valid TOML: {reason}"


def line_of(text: str, section: str | None, key: str) -> int:
    """The line where ``key`` is set inside ``[section]`` (1-based; 0 when not found)."""
    current: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.fullmatch(r"\[\s*([^\]]+?)\s*\]", stripped)
        if header:
            current = header.group(1).strip('"')
            if section is None and current == key:
                return number
            continue
        if current == section and re.match(rf'^"?{re.escape(key)}"?\s*=', stripped):
            return number
    return 0
