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
- each tool is offered with its plain arguments only: an optional argument that takes objects
  (a list of links, say) is left out, and so are null defaults, so the block stays short and
  the model does not invent structure;
- where the runner can, the reply is decoded under a grammar that allows plain text or one
  well-formed call to an offered tool (``runner/call_grammar.py``); a reply that describes a
  call in words ("use the `camera_photo` function") instead of making it, naming one of the
  three tools nearest the message, is asked again as that call;
- one more function is offered, ``answer`` (reply in plain words): a small model shown only
  tools calls one of them even for "good morning"; given a way to answer that has the shape of
  a call, it takes it, and the hub shows the text as the reply;
- the answer after a result is written in a turn without the tools block, the result given as
  plain text, so the model answers instead of calling again.

Written here rather than taken from a library because the libraries that parse tool calls
(llama.cpp's server, Ollama's templates) parse one model family's exact format strictly; the
leniency and the checks against the mounted tools are the point. It is one module, over 500
lines, because each rule above works on the same offer (the tools shown, their trimmed schemas,
the confirmations asked about them): apart, each piece would import all the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
from strands.types.tools import ToolSpec

from hub.memory.model import Fact

OFFERED_AT_MOST = 6
# Memory is what makes the companion personal: what the person tells it can always be learned.
ALWAYS_OFFERED = frozenset({"learn"})
# Searching memory is offered at a lower bar than other tools: the facts the prompt already
# holds answer most questions about the person, and offered on every turn, a small model
# "recalls" the capital of France (measured on requests kept apart from the evaluation: asking
# about one's memory scores 0.32 and above, small talk 0.16 and below).
RELATED_AT_LEAST_FOR = {"recall": 0.3}
NEAREST = 3
# A tool less related than this is not offered (measured on requests kept apart from the
# evaluation: chit-chat stays below it, requests for a tool reach above it), so small talk
# meets only the memory tools and has nothing to call by mistake.
RELATED_AT_LEAST = 0.4
WORDS_WEIGHT = 0.5
STEM = 6
SHARED_AT_LEAST = 3  # letters of a word a fact shares with a message
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
        # Every tool's description speaks of the hub; the word tells them apart not at all.
        "hub",
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

ANSWER = "answer"
ANSWER_SPEC: ToolSpec = {
    "name": ANSWER,
    "description": "Reply to the user in plain words: small talk, questions you can answer "
    "yourself, and requests that no other tool here can do.",
    "inputSchema": {
        "json": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "your reply"}},
            "required": ["text"],
        }
    },
}


@dataclass(frozen=True)
class Confirmation:
    """A yes/no question about the user's message alone (and, where one is named, the tool
    called for it), asked after example messages answered the same way."""

    question: str
    # (message, the tool called as "name — description" or "", the answer)
    examples: tuple[tuple[str, str, str], ...] = ()

    def asked(self, message: str, tool: str = "") -> str:
        quoted = json.dumps(message, ensure_ascii=False)
        called = f"Tool: {tool}\n" if tool else ""
        return f"Message: {quoted}\n{called}\n{self.question} Answer yes or no."

    def chat(self, message: str, tool: str = "") -> list[dict[str, str]]:
        chat: list[dict[str, str]] = []
        for example, example_tool, verdict in self.examples:
            chat += [
                {"role": "user", "content": self.asked(example, example_tool)},
                {"role": "assistant", "content": verdict},
            ]
        return [*chat, {"role": "user", "content": self.asked(message, tool)}]


# A memory write is confirmed by asking about the message alone: asked in the conversation
# right after its own call, the 1.5B said "yes" to "book me a flight" and "set the thermostat
# to 21 degrees" alike. Measured on requests kept apart from the evaluation: for learn, 7 to
# remember and 13 not, 19 right with the three examples, 18 without (the thermostat), 10 for
# the old question; for unlearn, 5 to forget and 7 not, 11 right without examples, 9 with
# them, and "… delete facts from your memory?" said no to "forget that my sister is called Ana".
CONFIRMED = {
    "learn": Confirmation(
        "Is the writer of this message asking you to store a fact in your memory?",
        (
            ("please remember that my flat is on the 3rd floor", "", "yes"),
            ("switch the radio on", "", "no"),
            ("what is my flat number?", "", "no"),
        ),
    ),
    "unlearn": Confirmation(
        "Is the writer of this message asking you to forget something you know about them?"
    ),
}
YES_OR_NO = 'root ::= "yes" | "no"'
# An answer in words with the tools still in the prompt: anything that does not begin a call
# (a tag, JSON, a fence or space before one).
IN_WORDS = "root ::= [^<{\\[` \\t\\n\\r] [^\\x00]*"


# Any other call is checked against what its tool is made for: a request for something the hub
# cannot do reaches for the tool that sounds alike ("switch on the kitchen lamp" → the phone's
# flashlight). Chosen on 20 held-apart pairs (12 right calls, 8 wrong): with these examples
# all 12 right calls pass and 3 wrong ones stop (both lamps, "rent me a car" → send_message);
# without examples the model says yes to all 20, and other wordings refused a right call.
TOOL_CHECK = Confirmation(
    "Is this tool made for what the message asks?",
    (
        (
            "book a table for two tonight",
            "send_message — Send a direct message to another person of this hub; it lands in "
            "their inbox and on their phones.",
            "no",
        ),
        (
            "show me the tinys here",
            "list_tiny — List tinys: public ones and the user's own.",
            "yes",
        ),
        (
            "turn up the heating",
            "set_brightness — Set the screen brightness of the user's device.",
            "no",
        ),
        (
            "remind me in 5 minutes to stretch",
            "schedule_alert — An alert at a time: a notification on the user's devices and "
            "screens.",
            "yes",
        ),
    ),
)


# A request with no tool near it (only the memory tools offered) that asks the model to act on
# the world: told in the guide to say it cannot, the 1.5B still answered "unlock the front door"
# with "The front door is unlocked." The examples are none of the measured requests.
ACTS_OUTSIDE = Confirmation(
    "Does this message ask you to change something in the physical world, such as a device, "
    "a door or a light?",
    (
        ("open the garage door", "", "yes"),
        ("write me a limerick about cats", "", "no"),
        ("dim the bedroom lamp", "", "yes"),
        ("explain how tides work", "", "no"),
        ("start the washing machine", "", "yes"),
        ("tell me a story about a fox", "", "no"),
        ("give me two ideas for a birthday party", "", "no"),
    ),
)


# Requests for words alone and small talk, which need no asking: asked, the 1.5B said "give me
# three tips for sleeping better" changes the physical world.
ASKS_FOR_WORDS = re.compile(
    r"^\W*(please\s+)?(tell|write|give me|explain|translate|summari[sz]e|describe|suggest|"
    r"recommend|list|compose|draft|define|compare|teach|say|help me (write|think|understand)|"
    r"hi|hello|hey|good (morning|afternoon|evening|night)|thanks|thank you|ok|okay|bye|"
    r"goodbye|yes|no|sure|great|nice|cool)\b",
    re.IGNORECASE,
)


def may_ask_to_act(message: str, offered: Collection[str]) -> bool:
    """Whether to ask :data:`ACTS_OUTSIDE` before answering ``message``: a request (not a
    question, not one for words) that no tool is near (only the ones always offered are) and
    that does not ask for a memory write."""
    asks = (
        message.strip() and not message.rstrip().endswith("?") and not ASKS_FOR_WORDS.match(message)
    )
    return (
        bool(asks)
        and set(offered) <= ALWAYS_OFFERED
        and not (
            asks_in_so_many_words("learn", message) or asks_in_so_many_words("unlearn", message)
        )
    )


# How people ask for a memory write in so many words. A message that does needs no yes/no
# check before its call runs (the check said yes to every one of them; it costs a prompt).
ASKED_TO_REMEMBER = re.compile(
    r"\b(remember|note that|note down|make a note|jot down|keep in mind|don'?t forget|"
    r"do not forget|store (that|this)|save (that|this)|from now on)\b",
    re.IGNORECASE,
)
ASKED_TO_FORGET = re.compile(
    r"(?<!don't )(?<!do not )\b(forget|unlearn|delete|erase|wipe|remove)\b.*"
    r"\b(memor\w*|you know|you('ve| have) learn\w*|about me|that)\b",
    re.IGNORECASE,
)
ASKED_IN_WORDS = {"learn": ASKED_TO_REMEMBER, "unlearn": ASKED_TO_FORGET}


def asks_in_so_many_words(tool: str, message: str) -> bool:
    """Whether ``message`` asks for a memory write (``tool``: learn or unlearn) in so many
    words. A question never does ("do you remember my dog's name?")."""
    asked = ASKED_IN_WORDS.get(tool)
    return asked is not None and not message.rstrip().endswith("?") and bool(asked.search(message))


# A call to a tool this related to the message needs no check that the tool is made for it.
# Measured on the offline agent's requests: the right device and tinys tools score 0.56 to
# 1.22 for their messages, the wrong calls the check is there to stop 0.6 to 0.63 ("switch on
# the kitchen lamp" → the phone's flashlight).
SURE_AT_LEAST = 0.75


def confirmation(
    call: Call, message: str, spec: ToolSpec | None = None, score: float = 0.0
) -> list[dict[str, str]]:
    """The chat that asks whether ``message`` asked for ``call`` (a memory write), or whether
    the called tool (``spec``, ``score`` related to the message) is made for it; empty when it
    needs no asking: a memory write the message asked for in so many words, a tool well above
    any a wrong call reached for."""
    confirming = CONFIRMED.get(call.name)
    if confirming is not None:
        return [] if asks_in_so_many_words(call.name, message) else confirming.chat(message)
    if spec is not None and call.name != ANSWER and score < SURE_AT_LEAST:
        return TOOL_CHECK.chat(message, f"{call.name} — {short_description(spec)}")
    return []


def confirmation_beginnings() -> list[list[dict[str, str]]]:
    """The yes/no checks' chats as far as every check of that kind reads the same (their
    examples): what the runner can read before the first turn asks."""
    return [confirming.chat("") for confirming in (*CONFIRMED.values(), TOOL_CHECK, ACTS_OUTSIDE)]


def already_known(call: Call, known: Sequence[str]) -> bool:
    """Whether ``call`` learns a fact whose every word one of the ``known`` facts already has
    ("Ana is the user's sister" beside "The user's sister is called Ana"): asked about a fact
    it was shown, a small model learns it again. A fact with one new word ("Monday" for
    "Friday") is news."""
    if call.name != "learn":
        return False
    said = words(str(call.arguments.get("fact", "")))
    return bool(said) and any(said <= words(fact) for fact in known)


# The reply inside an ``answer`` call, also when the call was cut off by the token limit.
ANSWER_TEXT = re.compile(r'"name":\s*"answer".*?"text":\s*"((?:[^"\\]|\\.)*)', re.DOTALL)


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


def plain(schema: Mapping[str, Any]) -> bool:
    """Whether an argument's schema is a plain value (or a list of plain values)."""
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return not isinstance(items, Mapping) or plain(items)
    return kind != "object" and "properties" not in schema


# Arguments a small model is never offered: making a fact public shares it with everyone who
# follows the person, and a 1.5B model set it unasked ("from now on, know that I prefer tea"
# became public in the evaluation). The person shares through their own words to a larger
# model, or the memory routes.
# Nor are the ids of facts a new one replaces: the prompt shows a small model its facts without
# ids (see ``prompt.remembered_note``); a newer fact is listed later and wins. ``unlearn`` is
# offered by what a fact is about ("my bicycle"), which the hub resolves to the facts by meaning
# and the person confirms; never by id (a 1.5B copies a random id wrongly, and may close another
# fact) nor for everything.
# A new tiny gets a name, a prompt and a tagline from a small model; the rest it made up (the
# 1.5B filled all eleven: example.com URLs for data, worker, hero and logo, "public"), and each
# took seconds to decode. The person sets them by hand (the TUI's tiny form, or PATCH /api/tinys).
WITHHELD = {
    "learn": frozenset({"visibility", "supersedes"}),
    "unlearn": frozenset({"id", "scope"}),
    "create_ai": frozenset(
        {"systemKnowledge", "data", "worker", "hook", "hero", "logo", "theme", "chips"}
        | {"intro_vibe", "visibility"}
    ),
}


def offered_schema(
    schema: Mapping[str, Any], withheld: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The arguments a small model is offered: the required ones and the plain optional ones
    (but not ``withheld``), without null defaults."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(schema)
    required = list(schema.get("required", ()))
    kept = {
        name: {k: v for k, v in prop.items() if not (k == "default" and v is None)}
        for name, prop in properties.items()
        if isinstance(prop, Mapping)
        and (name in required or (plain(prop) and name not in withheld))
    }
    if withheld and len(kept) == 1 and not required:
        # Withholding left one argument: it is what the call says, never nothing (unlearn's
        # "about": the 1.5B sent "" for "forget everything you know about me").
        [(name, prop)] = kept.items()
        required = [name]
        if prop.get("type") == "string":
            kept[name] = {**prop, "minLength": 1}
    return {**schema, "properties": kept, "required": required}


# Arguments a small model may write only in one shape. The facts it is shown are said to the
# person ("Your sister is Ana", see ``prompt.remembered_note``) and a 1.5B copies that into new
# facts; a fact is stored about "the user", so the call grammar makes it begin that way (and
# keeps it one line without quotes, which the pattern could not escape).
SHAPED = {"learn": {"fact": {"pattern": '^The user[^"\\\\\\n]+$'}}}


def offered_schema_of(spec: ToolSpec) -> dict[str, Any]:
    schema = offered_schema(schema_of(spec), WITHHELD.get(spec["name"], frozenset()))
    shaped = SHAPED.get(spec["name"], {})
    properties = schema.get("properties", {})
    for name, shape in shaped.items():
        if name in properties:
            properties[name] = {**properties[name], **shape}
    return schema


def as_function(spec: ToolSpec) -> dict[str, Any]:
    """A strands tool spec in the OpenAI function shape that chat templates render."""
    return {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": short_description(spec),
            "parameters": offered_schema_of(spec),
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


# Said in the system prompt, before the tools (the remembered facts follow them), when tools
# are offered: the same every turn. Without its last sentence the 1.5B answered "unlock the
# front door" with "The front door is unlocked." and made up Berlin's weather.
TOOLS_GUIDE = (
    "The hub's tools most related to the user's message are offered here. When what you "
    "remember about the user (listed below) already answers the message, answer from it. Call "
    "a tool only when the message needs one; otherwise answer in plain words. You act on "
    "nothing outside this chat except through these tools: when the message asks you to do "
    "something none of them does, or for news of the world right now, say plainly that you "
    "can't do that here, and never that it is done."
)


def words(text: str) -> set[str]:
    """Content words, cut to a common stem length so "charged" meets "charge" (and without a
    plural s, so "tinys" meets "tiny")."""
    found = re.findall(r"[a-z0-9]+", text.lower())
    return {stem(w) for w in found if w not in STOP_WORDS}


def stem(word: str) -> str:
    return (word[:-1] if len(word) > 3 and word.endswith("s") else word)[:STEM]


def sharing_words(message: str, facts: Sequence[Fact]) -> list[Fact]:
    """The facts that share a content word of three letters or more with ``message`` (see
    :func:`words`; shorter ones are the pieces of "what's" and "don't"), in order."""
    asked = {w for w in words(message) if len(w) >= SHARED_AT_LEAST}
    return [f for f in facts if asked & words(f.text)] if asked else []


def relevance(specs: Sequence[ToolSpec], message: str, embed: Embed) -> npt.NDArray[np.float32]:
    """Each tool's closeness to the message: the embedder's cosine (meaning) plus a share for
    the message's words found in the tool's name and description (a small embedder misses
    that "is my board charged?" is about the board's battery more often than the words do)."""
    texts = [f"{s['name'].replace('_', ' ')}: {short_description(s)}" for s in specs]
    vectors = embed([message, *texts])
    meaning = vectors[1:] @ vectors[0]
    asked = words(message)
    shared = [len(asked & words(t)) / max(len(asked), 1) for t in texts]
    return np.asarray(meaning + WORDS_WEIGHT * np.asarray(shared), dtype=np.float32)


@dataclass(frozen=True)
class Offer:
    """The tools offered for one message, in mount order, and the few nearest to it (a tool
    named in words is asked for as a call only when it is one of them), with how related each
    offered tool is to the message."""

    tools: list[ToolSpec]
    nearest: tuple[str, ...]
    scores: Mapping[str, float] = dataclasses.field(default_factory=dict)


def choose(
    specs: Sequence[ToolSpec],
    message: str,
    embed: Embed,
    at_most: int = OFFERED_AT_MOST,
    families: Mapping[str, str] | None = None,
) -> Offer:
    """``learn`` and the tools nearest ``message`` that are related enough, in mount order;
    all of them when few. With ``families`` (each tool's family), whole families instead (see
    :func:`by_family`)."""
    if not specs:
        return Offer([], ())
    scores = relevance(specs, message, embed)
    ranked = np.argsort(-scores).tolist()
    nearest = tuple(specs[i]["name"] for i in ranked[:NEAREST])
    keep = set(range(len(specs)))
    if len(specs) > at_most and families:
        keep = by_family(specs, scores, ranked, families)
    elif len(specs) > at_most:
        keep = {i for i, s in enumerate(specs) if s["name"] in ALWAYS_OFFERED}
        for i in ranked:
            if len(keep) >= at_most:
                break
            if related_enough(specs[i], float(scores[i])):
                keep.add(i)
    kept = [i for i in range(len(specs)) if i in keep]
    return Offer(
        [specs[i] for i in kept], nearest, {specs[i]["name"]: float(scores[i]) for i in kept}
    )


def related_enough(spec: ToolSpec, score: float) -> bool:
    return score >= RELATED_AT_LEAST_FOR.get(spec["name"], RELATED_AT_LEAST)


# A family of tools is offered whole, so the offers for different messages about the same
# thing are the same (the runner reads each once, and the hub reads each family's ahead: see
# ``hub/agent/warmup.py``): the family of the most related tool, and a second one whose best
# tool is within this of it ("list the tinys I can talk to": the tinys' and the universe's
# tools score 0.93 alike).
SECOND_FAMILY_WITHIN = 0.1
# A family larger than this offers only its members related to the message.
FAMILY_AT_MOST = 6


def by_family(
    specs: Sequence[ToolSpec],
    scores: npt.NDArray[np.float32],
    ranked: Sequence[int],
    families: Mapping[str, str],
) -> set[int]:
    """The tools always offered, and the whole families of the tools most related to the
    message (one, or two when the second is about as near)."""
    keep = {i for i, s in enumerate(specs) if s["name"] in ALWAYS_OFFERED}
    related = [i for i in ranked if i not in keep and related_enough(specs[i], float(scores[i]))]
    if not related:
        return keep
    family = families.get
    first = related[0]
    chosen = [family(specs[first]["name"], specs[first]["name"])]
    for i in related[1:]:
        near = float(scores[i]) >= float(scores[first]) - SECOND_FAMILY_WITHIN
        other = family(specs[i]["name"], specs[i]["name"])
        if near and other not in chosen:
            chosen.append(other)
            break
    for name in chosen:
        members = [i for i, s in enumerate(specs) if family(s["name"], s["name"]) == name]
        if len(members) > FAMILY_AT_MOST:
            members = [i for i in members if i in related][:FAMILY_AT_MOST]
        keep.update(members)
    return keep


def families_of(tools: Sequence[Any]) -> dict[str, str]:
    """Each tool's family: the module that defines it (the tools a module defines are about one
    thing: memory, a driver's device, the machine's senses); a tool made at run time (a forged
    tool, an MCP server's) is a family of its own kind."""
    return {
        tool.tool_name: str(getattr(tool, "__module__", "") or type(tool).__module__)
        for tool in tools
    }


def family_offers(specs: Sequence[ToolSpec], families: Mapping[str, str]) -> list[list[ToolSpec]]:
    """The offers a message about one family gets, one per family small enough to be offered
    whole, in mount order: what the hub reads ahead."""
    always = [s for s in specs if s["name"] in ALWAYS_OFFERED]
    grouped: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        grouped.setdefault(families.get(spec["name"], spec["name"]), []).append(spec)
    offers = []
    for members in grouped.values():
        if len(members) <= FAMILY_AT_MOST:
            offers.append([*always, *(s for s in members if s not in always)])
    return offers


def asked_in_so_many_words(message: str, offered: Sequence[str]) -> str:
    """The memory write ``message`` asks for in so many words ("remember that …"), when it is
    offered: a call the hub asks the model for when its reply made none."""
    return "learn" if "learn" in offered and asks_in_so_many_words("learn", message) else ""


def named_in_words(text: str, offered: Sequence[str]) -> str:
    """The one offered tool a reply names as a tool; empty when it names none or several."""
    named = tools_named(text, offered)
    return named.pop() if len(named) == 1 else ""


# Words about calling a function, named or not ("use the `flashlight` function with ..."),
# whether or not the name is one the hub offered.
CALL_WORDS = re.compile(
    r"[`'\"][\w.]+[`'\"]\s+(?:function|tool)\b|\b(?:function|tool) call\b|"
    r"\b(?:use|call)\s+the\s+[\w.]+\s+(?:function|tool)\b",
    re.IGNORECASE,
)


def describes_a_call(text: str, offered: Collection[str]) -> bool:
    """Whether words describe a call instead of answering: they name an offered tool as a
    tool, or speak of using a function."""
    return bool(tools_named(text, offered)) or CALL_WORDS.search(text) is not None


def tools_named(text: str, offered: Collection[str]) -> set[str]:
    """The offered tools words name as tools (in backticks or quotes, as "the X function/tool",
    or as the whole reply), as a small model does when it describes a call instead of making
    it: such words are never an answer for a person."""
    bare = text.strip().strip("`'\".()").strip()
    if bare in offered:
        return {bare}
    return {
        name
        for name in offered
        if re.search(
            rf"[`'\"]{re.escape(name)}[`'\"(]|\b{re.escape(name)}\s+(?:function|tool)\b", text
        )
    }


# Where the first sentence of a reply in words ends; what it says decides whether the reply is
# shown as it comes (see ``EmbeddedModel._with_tools``).
SENTENCE_END = re.compile(r"[.!?:;]\s|\n")
FIRST_SENTENCE_CHARS = 160
# Said right before the message when the model's words named a tool but made no call.
NO_TOOL_FITS = (
    "No tool here does what this message asks. Answer it yourself in plain words, and do not "
    "name any tool or function; when you cannot do what it asks, say so."
)


# What the person reads when the model, told that no tool fits, still only describes a call.
CANNOT_DO = "I can't do that here: none of the tools I have does it."


def first_sentence_done(text: str) -> bool:
    return len(text) >= FIRST_SENTENCE_CHARS or SENTENCE_END.search(text) is not None


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
            arguments = tidy(arguments, offered_schema_of(offered[name]))
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


def with_answer(offered: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The offered tools with ``answer`` last (unless a mounted tool already has that name),
    the tools always offered first: the tools blocks for different messages begin the same, so
    the runner reads only where they differ (see ``runner/prefix_cache.py``). Offered second,
    ``answer`` drew replies in words for requests a device's tool serves ("is my board
    charged?" answered with a made-up battery)."""
    first = [spec for spec in offered if spec["name"] in ALWAYS_OFFERED]
    rest = [spec for spec in offered if spec["name"] not in ALWAYS_OFFERED]
    tools = [*first, *rest]
    if any(spec["name"] == ANSWER for spec in tools):
        return tools
    return [*tools, ANSWER_SPEC]


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
