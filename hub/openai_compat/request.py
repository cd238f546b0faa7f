"""An OpenAI chat-completions body → what the hub's turn takes, or a 400 that names the field.

Honoured: ``model``, ``messages`` (roles system, developer, user, assistant with ``tool_calls``,
tool), ``stream``, ``stream_options.include_usage``, ``temperature``, ``top_p``, ``max_tokens``
(or ``max_completion_tokens``), ``stop``, ``tools`` (functions) and ``tool_choice: "none"``.
Refused: ``n`` other than 1 (one answer per turn). Every other field OpenAI defines is accepted
and ignored (docs/openai.md lists them): a client written for OpenAI sends many of them, and
refusing a penalty the model cannot apply would only break that client.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from hub.agent.attachments import Attachment, BlockError, content_block
from hub.agent.sampling import Sampling
from hub.agent.turn import ChatMessage, ToolAnswer, ToolCall
from hub.core.errors import Refused
from hub.core.json_text import JsonRefused, parse_json_text
from hub.openai_compat.client_tools import EMPTY_PARAMETERS, ClientToolSpec

MAX_TOOLS = 128  # OpenAI's own limit on ``tools``
MAX_STOPS = 4  # and on ``stop``
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SYSTEM_ROLES = ("system", "developer")
ROLES = (*SYSTEM_ROLES, "user", "assistant", "tool")


class BadCompletionRequest(Refused):
    """A body the hub cannot run; ``param`` names the field, as OpenAI's errors do."""

    status = 400

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class CompletionRequest:
    model: str
    messages: list[ChatMessage]
    stream: bool
    include_usage: bool
    sampling: Sampling
    tools: tuple[ClientToolSpec, ...]


def parse_completion(body: Any) -> CompletionRequest:
    if not isinstance(body, dict):
        raise BadCompletionRequest("body must be a JSON object: {model, messages, ...}")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise BadCompletionRequest("model must be a string: tiny or tiny/<name>", "model")
    n = body.get("n")
    # true == 1 in Python (bool is an int): without the isinstance, true would pass as 1.
    if n is not None and (isinstance(n, bool) or n != 1):
        raise BadCompletionRequest("n must be 1: the hub gives one answer per turn", "n")
    stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadCompletionRequest("stream_options must be an object", "stream_options")
    include_usage = _flag(options or {}, "include_usage", "stream_options.include_usage")
    choice = body.get("tool_choice")
    tools = _tools(body.get("tools"))
    return CompletionRequest(
        model=model.strip(),
        messages=_messages(body.get("messages")),
        stream=stream,
        include_usage=include_usage,
        sampling=_sampling(body),
        tools=() if choice == "none" else tools,
    )


def _flag(body: dict[str, Any], name: str, where: str | None = None) -> bool:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise BadCompletionRequest(f"{where or name} must be true or false", where or name)
    return bool(value)


def _sampling(body: dict[str, Any]) -> Sampling:
    temperature = _number(body, "temperature", 0.0, 2.0)
    top_p = _number(body, "top_p", 0.0, 1.0)
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    where = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)  # 256.0 is a whole number in JSON
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise BadCompletionRequest(f"{where} must be a whole number of at least 1", where)
    return Sampling(temperature, top_p, limit, _stops(body.get("stop")))


def _number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadCompletionRequest(f"{name} must be a number from {low:g} to {high:g}", name)
    if not low <= value <= high:
        raise BadCompletionRequest(f"{name} must be a number from {low:g} to {high:g}", name)
    return float(value)


def _stops(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if (
        not isinstance(stops, list)
        or len(stops) > MAX_STOPS
        or not all(isinstance(s, str) and s for s in stops)
    ):
        raise BadCompletionRequest(
            f"stop must be a non-empty string or an array of at most {MAX_STOPS} of them", "stop"
        )
    return tuple(stops)


def _tools(value: Any) -> tuple[ClientToolSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_TOOLS:
        raise BadCompletionRequest(f"tools must be an array of at most {MAX_TOOLS}", "tools")
    specs = tuple(_tool(f"tools[{i}]", item) for i, item in enumerate(value))
    keys = [spec.name.replace("-", "_") for spec in specs]  # one name to the model's SDK
    if twice := sorted({s.name for s, k in zip(specs, keys, strict=True) if keys.count(k) > 1}):
        raise BadCompletionRequest(
            f"tools name {', '.join(twice)} more than once ('-' and '_' count as one)", "tools"
        )
    return specs


def _tool(where: str, item: Any) -> ClientToolSpec:
    if not isinstance(item, dict) or item.get("type", "function") != "function":
        raise BadCompletionRequest(
            f'{where} must be {{"type": "function", "function": ...}}', where
        )
    function = item.get("function")
    if not isinstance(function, dict):
        raise BadCompletionRequest(f"{where}.function must be an object", f"{where}.function")
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise BadCompletionRequest(
            f"{where}.function.name must be 1-64 letters, digits, _ or -", f"{where}.function.name"
        )
    description = function.get("description", "")
    if not isinstance(description, str):
        raise BadCompletionRequest(
            f"{where}.function.description must be a string", f"{where}.function.description"
        )
    parameters = function.get("parameters", EMPTY_PARAMETERS)
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise BadCompletionRequest(
            f"{where}.function.parameters must be a JSON Schema object "
            '({"type": "object", "properties": ...})',
            f"{where}.function.parameters",
        )
    return ClientToolSpec(name, description, {"type": "object", **parameters})


def _messages(value: Any) -> list[ChatMessage]:
    if not isinstance(value, list) or not value:
        raise BadCompletionRequest("messages must be a non-empty array", "messages")
    messages: list[ChatMessage] = []
    calls: dict[str, str] = {}  # the calls of the last assistant message still to be answered
    for index, item in enumerate(value):
        where = f"messages[{index}]"
        if not isinstance(item, dict) or item.get("role") not in ROLES:
            raise BadCompletionRequest(
                f"{where} must be an object whose role is one of {', '.join(ROLES)}", where
            )
        role = item["role"]
        if role == "tool":
            answer = _answer(where, item, calls)
            calls.pop(answer.id)
            messages = _with_answer(messages, answer)
            continue
        if calls:
            raise _unanswered(where, calls)
        message = _message(where, role, item)
        calls = {call.id: call.name for call in message.tool_calls}
        if message.role == "user" or message.texts or message.tool_calls:
            # an empty system prompt or reply, which some apps send, is left out
            messages.append(message)
    if calls:
        raise _unanswered(f"messages[{len(value)}]", calls)
    dialogue = [m for m in messages if m.role != "system"]
    if not dialogue or dialogue[-1].role != "user":
        raise BadCompletionRequest("the last message must have role user or tool", "messages")
    return messages


def _unanswered(where: str, calls: dict[str, str]) -> BadCompletionRequest:
    named = ", ".join(f"{name} ({call_id})" for call_id, name in calls.items())
    return BadCompletionRequest(
        f"{where}: each of an assistant message's tool_calls needs its tool message right "
        f"after it; not answered: {named}",
        "messages",
    )


def _message(where: str, role: str, item: dict[str, Any]) -> ChatMessage:
    calls = _calls(where, item.get("tool_calls")) if role == "assistant" else ()
    texts, attachments = _content(where, item.get("content"))
    empty = not any(t.strip() for t in texts) and not attachments and not calls
    if empty and role == "user":
        raise BadCompletionRequest(f"{where}.content has no text, image or audio", where)
    if role in SYSTEM_ROLES:
        return ChatMessage("system", texts)
    return ChatMessage(role, texts, attachments, tool_calls=calls)  # type: ignore[arg-type]


def _content(where: str, content: Any) -> tuple[tuple[str, ...], tuple[Attachment, ...]]:
    if content is None:
        return (), ()
    if isinstance(content, str):
        return ((content,) if content else ()), ()
    if not isinstance(content, list):
        raise BadCompletionRequest(
            f"{where}.content must be a string or an array", f"{where}.content"
        )
    try:
        blocks = [content_block(f"{where}.content[{i}]", b) for i, b in enumerate(content)]
    except BlockError as exc:
        raise BadCompletionRequest(str(exc), f"{where}.content") from None
    texts = tuple(b for b in blocks if isinstance(b, str) and b)
    return texts, tuple(b for b in blocks if isinstance(b, Attachment))


def _calls(where: str, value: Any) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadCompletionRequest(f"{where}.tool_calls must be an array", f"{where}.tool_calls")
    return tuple(_call(f"{where}.tool_calls[{i}]", item) for i, item in enumerate(value))


def _call(where: str, item: Any) -> ToolCall:
    function = item.get("function") if isinstance(item, dict) else None
    call_id = item.get("id") if isinstance(item, dict) else None
    if not isinstance(function, dict) or not isinstance(call_id, str) or not call_id:
        raise BadCompletionRequest(
            f'{where} must be {{"id", "type": "function", "function": {{"name", "arguments"}}}}',
            where,
        )
    name, arguments = function.get("name"), function.get("arguments", "{}")
    if not isinstance(name, str) or not name:
        raise BadCompletionRequest(f"{where}.function.name must be a string", where)
    field = f"{where}.function.arguments"
    try:
        parsed = parse_json_text(arguments, field) if isinstance(arguments, str) else None
    except JsonRefused as exc:
        raise BadCompletionRequest(
            f"{exc}; it must be a JSON object written as a string", field
        ) from None
    if not isinstance(parsed, dict):
        raise BadCompletionRequest(f"{field} must be a JSON object written as a string", field)
    return ToolCall(call_id, name, parsed)


def _answer(where: str, item: dict[str, Any], calls: dict[str, str]) -> ToolAnswer:
    call_id = item.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in calls:
        raise BadCompletionRequest(
            f"{where}.tool_call_id must name a call of the assistant message before it "
            f"({', '.join(calls) or 'it made none'})",
            f"{where}.tool_call_id",
        )
    texts, _ = _content(where, item.get("content"))
    return ToolAnswer(call_id, "\n".join(texts))


def _with_answer(messages: list[ChatMessage], answer: ToolAnswer) -> list[ChatMessage]:
    """The answers to one assistant message's calls go into one user message, as providers
    want them."""
    last = messages[-1]
    if last.role == "user" and last.tool_answers:
        merged = ChatMessage("user", (), tool_answers=(*last.tool_answers, answer))
        return [*messages[:-1], merged]
    return [*messages, ChatMessage("user", (), tool_answers=(answer,))]
