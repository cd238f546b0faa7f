"""A call as a small model writes it: offered in the model's own chat template, the reply read
leniently and checked strictly.

A 1.5B model asked through its native template picks the right tool most of the time but wraps
the call in code fences, writes bare JSON, invents tools that were never offered and keeps
calling after the result has come back. So:

- a call is read from ``<tool_call>`` tags, a code fence or bare JSON, whichever is there;
- a call counts only if it names an offered tool and its arguments are valid for that tool's
  JSON schema; anything else is "no tool";
- each tool is offered with its plain arguments only: an optional argument that takes objects
  is left out, and so are null defaults and the arguments the tool withholds from a small
  model, so the block stays short and the model does not invent structure;
- one more function is offered, ``answer`` (reply in plain words): a small model shown only
  tools calls one of them even for "good morning"; given a way to answer that has the shape of
  a call, it takes it, and the hub shows the text as the reply.

Written here rather than taken from a library because the libraries that parse tool calls
(llama.cpp's server, Ollama's templates) parse one model family's exact format strictly; the
leniency and the checks against the mounted tools are the point.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from strands.types.tools import ToolSpec

from drivers.base import SmallModelHints
from hub.agent.small.context import NO_HINTS, SmallTurn
from hub.agent.small.offer import short_description

# <tool_call> is the template's; small models also write <tools>, <function_call> and the like.
TAGGED = re.compile(
    r"<(tool_calls?|tools?|function_calls?|functions?)>\s*(.*?)\s*(?:</\1>|$)", re.DOTALL
)
FENCED = re.compile(r"```[a-zA-Z_]*\s*(.*?)\s*(?:```|$)", re.DOTALL)
NAME_KEYS = ("name", "tool", "function", "tool_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")

ANSWER = "answer"
ANSWER_SPEC: ToolSpec = {
    "name": ANSWER,
    "description": "Reply to the user in plain words: small talk, questions you can answer "
    "yourself, writing, and requests that no other tool here can do.",
    "inputSchema": {
        "json": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "your reply"}},
            "required": ["text"],
        }
    },
}
# The reply inside an ``answer`` call, also when the call was cut off by the token limit.
ANSWER_TEXT = re.compile(r'"name":\s*"answer".*?"text":\s*"((?:[^"\\]|\\.)*)', re.DOTALL)
YES_OR_NO = 'root ::= "yes" | "no"'
# An answer in words with the tools still in the prompt: anything that does not begin a call
# (a tag, JSON, a fence or space before one).
IN_WORDS = "root ::= [^<{\\[` \\t\\n\\r] [^\\x00]*"


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Parsed:
    """A reply read: the call (if one passed the checks), the text around it, and why a reply
    that looked like a call was not taken."""

    call: Call | None
    text: str
    refused: str = ""


def schema_of(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.get("inputSchema", {}).get("json", {})
    return dict(schema) if isinstance(schema, Mapping) else {}


def plain(schema: Mapping[str, Any]) -> bool:
    """Whether an argument's schema is a plain value (or a list of plain values)."""
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return not isinstance(items, Mapping) or plain(items)
    return kind != "object" and "properties" not in schema


def offered_schema(schema: Mapping[str, Any], hints: SmallModelHints = NO_HINTS) -> dict[str, Any]:
    """The arguments a small model is offered: the required ones and the plain optional ones
    (but not those the tool withholds), without null defaults, shaped as the tool asks."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(schema)
    withheld = hints.withheld
    required = list(schema.get("required", ()))
    kept = {
        name: {k: v for k, v in prop.items() if not (k == "default" and v is None)}
        for name, prop in properties.items()
        if isinstance(prop, Mapping)
        and (name in required or (plain(prop) and name not in withheld))
    }
    if withheld and len(kept) == 1 and not required:
        # Withholding left one argument: it is what the call says, never nothing (a forget's
        # "about": the 1.5B sent "" for "forget everything you know about me").
        [(name, prop)] = kept.items()
        required = [name]
        if prop.get("type") == "string":
            kept[name] = {**prop, "minLength": 1}
    for name, shape in hints.shaped.items():
        if name in kept:
            kept[name] = {**kept[name], **shape}
    return {**schema, "properties": kept, "required": required}


def as_function(spec: ToolSpec, turn: SmallTurn | None = None) -> dict[str, Any]:
    """A strands tool spec in the OpenAI function shape that chat templates render."""
    hints = (turn or SmallTurn()).of(spec["name"])
    return {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": short_description(spec),
            "parameters": offered_schema(schema_of(spec), hints),
        },
    }


def tools_prompt(functions: Sequence[Mapping[str, Any]]) -> str:
    """The tools block for a model whose template has no place for tools (the Hermes wording,
    which small instruct models are most often trained on)."""
    lines = "\n".join(json.dumps(f, ensure_ascii=False) for f in functions)
    return (
        "# Tools\n\nYou may call one of these functions to help with the user's message. "
        f"The function signatures are within <tools></tools> tags:\n<tools>\n{lines}\n</tools>\n\n"
        "To call one, reply with only a JSON object with the function's name and arguments "
        'within <tool_call></tool_call> tags:\n<tool_call>\n{"name": <function-name>, '
        '"arguments": <args-json-object>}\n</tool_call>'
    )


def with_answer(offered: Sequence[ToolSpec], turn: SmallTurn | None = None) -> list[ToolSpec]:
    """The offered tools with ``answer`` last (unless a mounted tool already has that name),
    the tools always offered first: the tools blocks for different messages begin the same, so
    the runner reads only where they differ. Offered second, ``answer`` drew replies in words
    for requests a device's tool serves ("is my board charged?" answered with a made-up
    battery)."""
    turn = turn or SmallTurn()
    first = [spec for spec in offered if turn.of(spec["name"]).always_offered]
    rest = [spec for spec in offered if spec not in first]
    tools = [*first, *rest]
    if any(spec["name"] == ANSWER for spec in tools):
        return tools
    return [*tools, ANSWER_SPEC]


def json_objects(text: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every JSON object that starts somewhere in ``text`` (outermost first), with its text."""
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            yield value, text[position:end]
        position = text.find("{", end)


def candidates(reply: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Objects that may be calls, each with the span of text it came from: tags first, then
    fences, then bare JSON."""
    for pattern in (TAGGED, FENCED):
        for match in pattern.finditer(reply):
            for value, _ in json_objects(match.group(match.lastindex or 1)):
                yield value, match.group(0)
    yield from json_objects(reply)


def read_call(value: Mapping[str, Any]) -> tuple[str, Any]:
    """The name and arguments, under whichever keys the model used; OpenAI's nesting too."""
    if isinstance(value.get("function"), Mapping):
        value = value["function"]
    name = next((value[k] for k in NAME_KEYS if isinstance(value.get(k), str)), "")
    arguments: Any = next((value[k] for k in ARGUMENT_KEYS if k in value), {})
    if isinstance(arguments, str):
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(arguments) if arguments.strip() else {}
    return name, arguments


def check(name: str, arguments: Any, offered: Mapping[str, ToolSpec]) -> str:
    """Why this call cannot be made; empty when it can."""
    if not name:
        return "no tool name"
    if name not in offered:
        return f"{name!r} is not an offered tool"
    if not isinstance(arguments, dict):
        return f"the arguments for {name} are not a JSON object"
    errors = sorted(
        jsonschema.Draft202012Validator(schema_of(offered[name])).iter_errors(arguments),
        key=lambda e: list(e.path),
    )
    if errors:
        return f"the arguments for {name} are not valid: {errors[0].message}"
    return ""


def tidy(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Drop what a small model adds that the tool never asked for: null for an optional
    argument, and names the schema does not list (the schema decides what stays)."""
    properties = schema.get("properties")
    required = set(schema.get("required", ()))
    kept = {k: v for k, v in arguments.items() if v is not None or k in required}
    if isinstance(properties, Mapping) and schema.get("additionalProperties") is not True:
        kept = {k: v for k, v in kept.items() if k in properties}
    return kept


def parse_reply(
    reply: str, offered: Mapping[str, ToolSpec], turn: SmallTurn | None = None
) -> Parsed:
    """The first call in ``reply`` that names an offered tool with valid arguments."""
    turn = turn or SmallTurn()
    refused = ""
    for value, span in candidates(reply):
        name, arguments = read_call(value)
        if name in offered and isinstance(arguments, dict):
            arguments = tidy(arguments, offered_schema(schema_of(offered[name]), turn.of(name)))
        problem = check(name, arguments, offered)
        if not problem:
            return Parsed(Call(name, arguments), leftover(reply.replace(span, "")))
        refused = refused or problem
    return Parsed(None, leftover(reply) if refused else reply.strip(), refused)


def leftover(text: str) -> str:
    """Text around a call, without empty tags, fences or stray JSON."""
    text = TAGGED.sub("", text)
    text = FENCED.sub("", text)
    for _, span in list(json_objects(text)):
        text = text.replace(span, "")
    return text.strip()


def answer_text(reply: str, call: Call | None) -> str | None:
    """The reply's text when the model answered through ``answer`` (whole or cut off)."""
    if call is not None:
        return str(call.arguments.get("text", "")) if call.name == ANSWER else None
    match = ANSWER_TEXT.search(reply)
    if match is None:
        return None
    with contextlib.suppress(json.JSONDecodeError):
        return str(json.loads(f'"{match.group(1)}"'))
    return None


def looks_like_call(start: str, offered: Iterable[str] = ()) -> bool:
    """Whether a reply's first characters may begin a call, or the name of an ``offered`` tool
    written instead of a call (so it must be read whole before anything is shown)."""
    head = start.lstrip()
    if head.startswith(("<", "`", "{", "[")):
        return True
    word = head.rstrip().rstrip("().")
    return bool(word) and any(name.startswith(word) for name in offered)


def tools_named(text: str, offered: Iterable[str]) -> set[str]:
    """The offered tools words name as tools (in backticks or quotes, as "the X function/tool",
    or as the whole reply), as a small model does when it describes a call instead of making
    it: such words are never an answer for a person."""
    names = set(offered)
    bare = text.strip().strip("`'\".()").strip()
    if bare in names:
        return {bare}
    return {
        name
        for name in names
        if re.search(
            rf"[`'\"]{re.escape(name)}[`'\"(]|\b{re.escape(name)}\s+(?:function|tool)\b", text
        )
    }


def named_in_words(text: str, offered: Sequence[str]) -> str:
    """The one offered tool a reply names as a tool; empty when it names none or several."""
    named = tools_named(text, offered)
    return named.pop() if len(named) == 1 else ""


# Where the first sentence of a reply in words ends; what it says decides whether the reply is
# shown as it comes.
SENTENCE_END = re.compile(r"[.!?:;]\s|\n")
FIRST_SENTENCE_CHARS = 160


# Where a call begins inside a reply that began in words (a code fence only when JSON follows:
# the coder model fences the code it is asked for).
CALL_BEGINS = re.compile(
    r"<(?:tool_call|tools?|function)|```(?:json)?\s*\{|\{\s*\"(?:name|function|tool)\""
)
CALL_MARKERS = ("<tool_call", "<tools", "<function", "```json", '{"name"', '{"function"', '{"tool"')


def words_before_a_call(text: str) -> str:
    """A reply's words up to where a call begins in it (all of it when none does), less an
    end that may be the start of one ("<too")."""
    begins = CALL_BEGINS.search(text)
    if begins:
        return text[: begins.start()]
    for start in range(max(len(text) - len(max(CALL_MARKERS, key=len)), 0), len(text)):
        if any(marker.startswith(text[start:]) for marker in CALL_MARKERS):
            return text[:start]
    return text


def first_sentence_done(text: str) -> bool:
    return len(text) >= FIRST_SENTENCE_CHARS or SENTENCE_END.search(text) is not None


def first_sentence(text: str) -> str:
    """The reply's first sentence, with the space or line break that ends it."""
    end = SENTENCE_END.search(text)
    return text[: end.end()] if end else text[:FIRST_SENTENCE_CHARS]


# A function's name in backticks, offered or not: "use the `camera_photo` function", "call
# `flashlight()`".
CODE_NAME = re.compile(r"`[a-z][a-z0-9]*(?:(?:_[a-z0-9]+)+(?:\(\))?|\(\))`")


def describes_a_call(text: str, offered: Iterable[str]) -> bool:
    """Whether words describe a call instead of answering: they name an offered tool as a
    tool, or a function by its code name."""
    return bool(tools_named(text, offered)) or CODE_NAME.search(text) is not None
