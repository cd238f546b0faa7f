"""Reading the settings: config.toml, then the environment, then values from code, each checked
as it is read; a bad value stops the hub with a message naming the file, the line and the key,
because a traceback tells a person nothing about what to fix.

Precedence, highest first: command-line flags, environment variables, config.toml, defaults.
The drivers' sections are read here too, against what the installed drivers declare
(``drivers.py``).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import hub.config.drivers as driver_settings
from drivers.base import Driver, load_drivers
from hub.config.settings import (
    CONFIG_FILE_NAME,
    EMBEDDED_MODELS,
    HOME_ENV,
    LOG_LEVELS,
    MCP_SERVER_GROUPS,
    MODEL_PROVIDERS,
    ConfigError,
    Settings,
    default_home,
    setting_fields,
)
from hub.config.values import (
    checked,
    describe_syntax_error,
    kind_of_field,
    line_of,
    parse_env,
)


def load_settings(
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    read_file: bool = True,
    installed: Sequence[type[Driver]] | None = None,
) -> Settings:
    """Read config.toml and the environment; raise ConfigError with file, line and key.
    ``read_file=False`` leaves config.toml out (doctor, when the file itself is broken);
    ``installed``: the drivers whose settings are read (default: every installed one)."""
    env = os.environ if environ is None else environ
    home = Path(home or env.get(HOME_ENV) or default_home()).expanduser()
    path = home / CONFIG_FILE_NAME
    declared = driver_settings.declared_sections(load_drivers() if installed is None else installed)
    given = dict(overrides or {})
    values: dict[str, Any] = {}
    in_file = FileValues()
    if read_file and path.exists():
        in_file = read_config(path, declared)
        values.update(in_file.hub)
    env, deprecated = upgraded_environ(env)
    values.update(_read_environ(env))
    flags = driver_settings.flag_values(given.pop("drivers", None) or {}, declared)
    values.update(_checked_overrides(given))
    drivers = driver_settings.resolved(
        declared, in_file.drivers, driver_settings.env_values(env, declared), flags
    )
    notes = (*deprecated, *in_file.notes)
    settings = Settings(home=home, drivers=drivers, deprecated=notes, **values)
    _validate(settings, path if read_file else home / "(not read)", env)
    return settings


MODEL_ENV: Final = "TINY_HUB_EMBEDDED_MODEL"
MODEL_PATH_ENV: Final = "TINY_HUB_EMBEDDED_MODEL_PATH"
OLD_MODEL_NAME_ENV: Final = "TINY_HUB_EMBEDDED_MODEL_NAME"


def upgraded_environ(env: Mapping[str, str]) -> tuple[Mapping[str, str], tuple[str, ...]]:
    """The environment with the embedded settings' old spellings read as the new ones, and a
    sentence for each. ``TINY_HUB_EMBEDDED_MODEL`` once held a GGUF file's path (now
    ``TINY_HUB_EMBEDDED_MODEL_PATH``) and the model's name was ``TINY_HUB_EMBEDDED_MODEL_NAME``:
    a value that is no model name but looks like a file is still taken as the path."""
    model, old_name = env.get(MODEL_ENV, ""), env.get(OLD_MODEL_NAME_ENV, "")
    looks_like_a_file = model not in EMBEDDED_MODELS and (
        "/" in model or "\\" in model or model.lower().endswith(".gguf")
    )
    if not old_name and not looks_like_a_file:
        return env, ()
    upgraded, said = dict(env), []
    if looks_like_a_file:
        del upgraded[MODEL_ENV]
        upgraded.setdefault(MODEL_PATH_ENV, model)
        said.append(
            f"{MODEL_ENV} now names the embedded model ({', '.join(EMBEDDED_MODELS)}); "
            f"its file path was read as {MODEL_PATH_ENV}, the name to use from now on"
        )
    if old_name:
        del upgraded[OLD_MODEL_NAME_ENV]
        upgraded.setdefault(MODEL_ENV, old_name)
        said.append(f"{OLD_MODEL_NAME_ENV} is deprecated: it was read as {MODEL_ENV}, its new name")
    return upgraded, tuple(said)


def _checked_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Values from code (command-line flags, tests) held to the file's types: a list becomes
    the tuple a setting holds, a wrong type is the same ConfigError."""
    fields = {f.name: f for f in setting_fields()}
    return {
        name: checked(f"setting {name}", kind_of_field(fields[name]), value)
        if name in fields
        else value
        for name, value in overrides.items()
        if value is not None
    }


class FileValues:
    """What config.toml sets: the hub's settings by field name, the drivers' by section, and
    sentences on old spellings it still has."""

    def __init__(self) -> None:
        self.hub: dict[str, Any] = {}
        self.drivers: driver_settings.Values = {}
        self.notes: list[str] = []


def read_config(path: Path, declared: driver_settings.Declared) -> FileValues:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(describe_syntax_error(path, text, exc)) from None

    by_place = {(f.metadata["section"], f.metadata["key"]): f for f in setting_fields()}
    known_sections = sorted({section for section, _ in by_place})
    found = FileValues()
    for section, table in sections(document, set(known_sections)):
        if not isinstance(table, dict) or section == driver_settings.TABLE:
            line = line_of(text, None, section)
            raise ConfigError(
                f"{path}, line {line}, key '{section}': settings belong in a section "
                f"([{'], ['.join(known_sections)}], [{driver_settings.TABLE}.<driver>]), "
                "not at the top level"
            )

        def where(key: str, section: str = section) -> str:
            return f"{path}, line {line_of(text, section, key)}, key '{section}.{key}'"

        driver = driver_settings.section_of(section)
        if driver is not None:
            if section in driver_settings.MOVED:
                found.notes.append(driver_settings.moved_note(section))
            found.drivers[driver] = {
                **found.drivers.get(driver, {}),
                **driver_settings.table_values(driver, table, declared, where),
            }
            continue
        for key, value in table.items():
            declared_field = by_place.get((section, key))
            if declared_field is None:
                valid = ", ".join(k for s, k in by_place if s == section) or "none"
                raise ConfigError(f"{where(key)}: unknown setting (keys of [{section}]: {valid})")
            found.hub[declared_field.name] = checked(
                where(key), kind_of_field(declared_field), value
            )
    return found


def sections(document: dict[str, Any], known: set[str]) -> list[tuple[str, Any]]:
    """Top-level tables, with nested ones (``[drivers.lamp]``) as dotted sections. A known
    section holds keys, even when they are tables themselves (``[mcp.servers.files]``)."""
    found: list[tuple[str, Any]] = []
    for name, table in document.items():
        nested = (
            isinstance(table, dict) and table and all(isinstance(v, dict) for v in table.values())
        )
        if nested and name not in known:
            found += [(f"{name}.{inner}", value) for inner, value in table.items()]
        else:
            found.append((name, table))
    return found


def _read_environ(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for f in setting_fields():
        raw = env.get(f.metadata["env"])
        if raw is None or raw == "":
            continue
        where = f"environment variable {f.metadata['env']}"
        kind = kind_of_field(f)
        values[f.name] = checked(where, kind, parse_env(raw, kind))
    return values


def _validate(settings: Settings, path: Path, env: Mapping[str, str]) -> None:
    def fail(name: str, problem: str) -> None:
        f = next(x for x in setting_fields() if x.name == name)
        section, key, env_name = f.metadata["section"], f.metadata["key"], f.metadata["env"]
        if env.get(env_name):
            where = f"environment variable {env_name}"
        elif path.exists():
            where = f"{path}, line {line_of(path.read_text(), section, key)}, key '{section}.{key}'"
        else:
            where = f"setting {section}.{key}"
        raise ConfigError(f"{where}: {problem}")

    if not 0 <= settings.port <= 65535:
        fail("port", f"port {settings.port} is outside 0-65535")
    if settings.model_provider not in MODEL_PROVIDERS:
        fail(
            "model_provider",
            f"unknown provider {settings.model_provider!r}; one of: " + ", ".join(MODEL_PROVIDERS),
        )
    if settings.log_level not in LOG_LEVELS:
        fail("log_level", f"unknown level {settings.log_level!r}; one of: " + ", ".join(LOG_LEVELS))
    if settings.model_max_tokens < 1:
        fail("model_max_tokens", "must be at least 1")
    if settings.embedded_model not in EMBEDDED_MODELS:
        fail(
            "embedded_model",
            f"unknown embedded model {settings.embedded_model!r}; one of: "
            + ", ".join(EMBEDDED_MODELS)
            + f" (a GGUF file of your own goes in embedded.model_path, {MODEL_PATH_ENV})",
        )
    if settings.embedded_tools not in ("auto", "on", "off"):
        fail("embedded_tools", f"{settings.embedded_tools!r} is not one of: auto, on, off")
    if settings.embedded_call_grammar not in ("on", "off"):
        fail(
            "embedded_call_grammar",
            f"{settings.embedded_call_grammar!r} is not one of: on, off",
        )
    if settings.embedded_context < 256:
        fail("embedded_context", "must be at least 256 tokens")
    if settings.embedded_threads < 0:
        fail("embedded_threads", "must be 0 (the idle cores) or more")
    if not 0 <= settings.embedded_prompt_cache_mb <= 65536:
        fail("embedded_prompt_cache_mb", "must be 0 (off) to 65536 MB")
    if not 0 <= settings.memory_forget_grace_days <= 3650:
        fail("memory_forget_grace_days", "must be between 0 and 3650 days")
    if not 0 <= settings.repairs_after_s <= 3600:
        fail("repairs_after_s", "must be between 0 and 3600 seconds")
    if settings.ping_interval_s <= 0:
        fail("ping_interval_s", "must be more than 0 seconds")
    if settings.turn_timeout_s <= 0:
        fail("turn_timeout_s", "must be more than 0 seconds")
    if settings.header_timeout_s <= 0:
        fail("header_timeout_s", "must be more than 0 seconds")
    if not settings.rate_limit_scale >= 1:
        fail("rate_limit_scale", "must be 1 (the limits in use) or more")
    if not 0.05 <= settings.scheduler_tick_s <= 60:
        fail("scheduler_tick_s", "must be 0.05 to 60 seconds")
    if settings.memory_max_facts < 1:
        fail("memory_max_facts", "must be at least 1 fact")
    for name in ("quota_media_mb_per_minute", "quota_open_streams", "quota_messages_per_minute"):
        if getattr(settings, name) < 0:
            fail(name, "must be 0 (no limit) or more")
    for name in ("anonymous_daily_chats", "member_daily_chats"):
        if getattr(settings, name) < 0:
            fail(name, "must be 0 or more chat requests a day")
    if settings.mcp_start_timeout_s <= 0:
        fail("mcp_start_timeout_s", "must be more than 0 seconds")
    for name, server in settings.mcp_servers.items():
        if not isinstance(server, dict):
            fail("mcp_servers", f"server {name!r} must be a table of its settings")
    unknown = sorted(set(settings.mcp_server_groups) - set(MCP_SERVER_GROUPS))
    if unknown:
        fail(
            "mcp_server_groups",
            f"unknown group(s) {', '.join(unknown)}; the groups are "
            + ", ".join(MCP_SERVER_GROUPS),
        )
    if settings.tool_cpu_limit_s <= 0:
        fail("tool_cpu_limit_s", "must be more than 0 seconds")
    if settings.tool_memory_mb < 8:
        fail("tool_memory_mb", "must be at least 8 MB")
    if not _raw_base_ok(settings.tool_raw_base_url):
        fail(
            "tool_raw_base_url",
            f"{settings.tool_raw_base_url!r} is neither https://raw.githubusercontent.com nor "
            "an http(s) URL on this machine",
        )
    if settings.lan_url and not re.match(r"https?://[^/]+", settings.lan_url):
        fail("lan_url", f"{settings.lan_url!r} is not an http:// or https:// URL")
    if not re.match(r"https?://[^/]+", settings.telegram_api_url):
        fail("telegram_api_url", f"{settings.telegram_api_url!r} is not an http:// or https:// URL")
    if not 1 <= settings.telegram_long_poll_s <= 600:
        fail("telegram_long_poll_s", "must be 1-600 seconds")


def _raw_base_ok(base: str) -> bool:
    """GitHub's raw content, or a loopback URL (a mirror on this machine, or a test's fake)."""
    if base.rstrip("/") == "https://raw.githubusercontent.com":
        return True
    found = re.fullmatch(r"https?://(\[::1\]|127\.\d+\.\d+\.\d+|localhost)(:\d+)?/?", base)
    return found is not None
