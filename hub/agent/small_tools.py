"""Tool calling for small on-device models: offered in the model's own chat template, the reply
parsed leniently and checked strictly.

A 1.5B model asked through its native template picks the right tool most of the time but wraps
the call in code fences, writes bare JSON, invents tools that were never offered and keeps
calling after the result has come back. So the hub, not the model, draws the lines:

- only the tools that matter are offered: with many mounted, the ones nearest the user's message
  by the hub's embedder, and the prompt says how many of how many;
- a call is read from ``<tool_call>`` tags, a code fence or bare JSON, whichever is there;
- a call counts only if it names an offered tool and its arguments are valid for that tool's
  JSON schema; anything else is "no tool";
- the answer after a result is written in a turn without the tools block, the result given as
  plain text, so the model answers instead of calling again.

Written here rather than taken from a library because the libraries that parse tool calls
(llama.cpp's server, Ollama's templates) parse one model family's exact format strictly; the
leniency and the checks against the mounted tools are the point.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
from strands.types.tools import ToolSpec

OFFERED_AT_MOST = 6
# Memory is what makes the companion personal: its two tools are offered on every turn.
ALWAYS_OFFERED = frozenset({"learn", "recall"})
WORDS_WEIGHT = 0.5
STEM = 6
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "be",
        "my",
        "me",
        "i",
        "you",
        "your",
        "it",
        "its",
        "of",
        "to",
        "in",
        "on",
        "for",
        "and",
        "or",
        "with",
        "what",
        "whats",
        "that",
        "this",
        "do",
        "does",
        "can",
        "please",
        "tell",
        "about",
        "how",
    ]
)
DESCRIPTION_CHARS = 240

# <tool_call> is the template's; small models also write <tools>, <function_call> and the like.
TAGGED = re.compile(
    r"<(tool_calls?|tools?|function_calls?|functions?)>\s*(.*?)\s*(?:</\1>|$)", re.DOTALL
)
FENCED = re.compile(r"```[a-zA-Z_]*\s*(.*?)\s*(?:```|$)", re.DOTALL)
NAME_KEYS = ("name", "tool", "function", "tool_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")

Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]


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


def short_description(spec: ToolSpec) -> str:
    """The description's first paragraph, cut to keep the prompt small."""
    first = spec.get("description", "").strip().split("\n\n", 1)[0]
    flat = " ".join(first.split())
    return flat if len(flat) <= DESCRIPTION_CHARS else flat[: DESCRIPTION_CHARS - 1] + "…"


def schema_of(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.get("inputSchema", {}).get("json", {})
    return dict(schema) if isinstance(schema, Mapping) else {}


def as_function(spec: ToolSpec) -> dict[str, Any]:
    """A strands tool spec in the OpenAI function shape that chat templates render."""
    return {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": short_description(spec),
            "parameters": schema_of(spec),
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


def offer_note(offered: int, mounted: int) -> str:
    """What the system prompt says about the tools offered."""
    which = (
        f"You have {offered} tools."
        if offered == mounted
        else f"Of the hub's {mounted} tools, the {offered} most related to this message are "
        "offered here."
    )
    return (
        f"{which} When what you remember about the user (above) already answers the message, "
        "answer from it. Call a tool only when the message needs one; otherwise answer in "
        "plain words."
    )


def words(text: str) -> set[str]:
    """Content words, cut to a common stem length so "charged" meets "charge"."""
    return {w[:STEM] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS}


def relevance(specs: Sequence[ToolSpec], message: str, embed: Embed) -> npt.NDArray[np.float32]:
    """Each tool's closeness to the message: the embedder's cosine (meaning) plus a share for
    the message's words found in the tool's name and description (a small embedder misses
    that "is my Flipper charged?" is about the Flipper's battery more often than the words do)."""
    texts = [f"{s['name'].replace('_', ' ')}: {short_description(s)}" for s in specs]
    vectors = embed([message, *texts])
    meaning = vectors[1:] @ vectors[0]
    asked = words(message)
    shared = [len(asked & words(t)) / max(len(asked), 1) for t in texts]
    return np.asarray(meaning + WORDS_WEIGHT * np.asarray(shared), dtype=np.float32)


def choose(
    specs: Sequence[ToolSpec], message: str, embed: Embed, at_most: int = OFFERED_AT_MOST
) -> list[ToolSpec]:
    """The always-offered memory tools and the ones nearest ``message``, in mount order; all
    of them when few."""
    if len(specs) <= at_most:
        return list(specs)
    keep = {i for i, s in enumerate(specs) if s["name"] in ALWAYS_OFFERED}
    for i in np.argsort(-relevance(specs, message, embed)).tolist():
        if len(keep) >= at_most:
            break
        keep.add(i)
    return [spec for i, spec in enumerate(specs) if i in keep]


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


def parse_reply(reply: str, offered: Mapping[str, ToolSpec]) -> Parsed:
    """The first call in ``reply`` that names an offered tool with valid arguments."""
    refused = ""
    for value, span in candidates(reply):
        name, arguments = read_call(value)
        if name in offered and isinstance(arguments, dict):
            arguments = tidy(arguments, schema_of(offered[name]))
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


def looks_like_call(start: str) -> bool:
    """Whether a reply's first characters may begin a call (so it must be read whole before
    anything is shown)."""
    head = start.lstrip()
    return head.startswith(("<", "`", "{", "["))
