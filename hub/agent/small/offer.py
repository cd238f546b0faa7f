"""The offer: which of the mounted tools a small model is shown for one message.

A 1.5B model shown sixty tools calls the wrong one; shown a few, the right one. So only the
tools nearest the message are offered: by the hub's embedder (the message against each tool's
name, description and the requests it declares it serves), plus a share for the words they
have in common (a small embedder misses that "is my board charged?" is about the board's
battery more often than the words do). A family of tools is offered whole, so the offers of
messages about one thing repeat and the model's runner reads each once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from strands.types.tools import ToolSpec

from hub.agent.small.context import SmallTurn
from hub.memory.model import Fact

Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]

OFFERED_AT_MOST = 6
NEAREST = 3
# A tool less related than this is not offered (measured on requests kept apart from the
# evaluation: chit-chat stays below it, requests for a tool reach above it), so small talk
# meets only the tools always offered and has nothing to call by mistake.
RELATED_AT_LEAST = 0.4
WORDS_WEIGHT = 0.5
STEM = 6
SHARED_AT_LEAST = 3  # letters of a word a fact shares with a message
# Every tool's description speaks of the hub; the word tells them apart not at all.
STOP_WORDS = frozenset(
    {"a", "an", "the", "is", "are", "was", "be", "my", "me", "i", "you", "your", "it", "its"}
    | {"of", "to", "in", "on", "for", "and", "or", "with", "what", "whats", "that", "this"}
    | {"do", "does", "can", "please", "tell", "about", "how", "hub"}
)
DESCRIPTION_CHARS = 240
# A message in a conversation often leaves its subject out ("and now?", "what's in its subghz
# folder?"): the person's message before it counts too, this much less.
EARLIER_LESS = 0.15
# A family of tools is offered whole: the family of the most related tool, and a second one
# whose best tool is within this of it ("list the tinys I can talk to": the tinys' and the
# universe's tools score 0.93 alike).
SECOND_FAMILY_WITHIN = 0.1
# A family larger than this offers only its members related to the message.
FAMILY_AT_MOST = 6


# Requests for words alone, which any model can answer: a message this near one of them asks
# for writing, not for an act (measured on messages kept apart from the evaluations: a haiku
# 0.61, a recipe 0.74, a limerick 0.50; "book me a flight" 0.33, "order me a pizza" 0.32,
# "unlock the front door" 0.17 — and, below the bar too, "explain how rainbows form" 0.31: the
# small embedder tells the two kinds apart only this far).
FOR_WORDS = (
    "write me a poem",
    "tell me a story",
    "explain how something works",
    "give me a recipe",
    "tell me a joke",
    "translate this sentence",
    "summarise this text",
    "give me some ideas",
)
FOR_WORDS_AT_LEAST = 0.45


@dataclass(frozen=True)
class Offer:
    """The tools offered for one message, in mount order, and the few nearest to it, with how
    related each offered tool is to the message; ``for_words``: the message asks for words
    alone (writing, a recipe, an explanation)."""

    tools: list[ToolSpec]
    nearest: tuple[str, ...]
    scores: Mapping[str, float] = field(default_factory=dict)
    for_words: bool = False

    @property
    def names(self) -> list[str]:
        return [spec["name"] for spec in self.tools]


NOTHING = Offer([], ())


def short_description(spec: ToolSpec) -> str:
    """The description's first paragraph, cut to keep the prompt small."""
    first = spec.get("description", "").strip().split("\n\n", 1)[0]
    flat = " ".join(first.split())
    return flat if len(flat) <= DESCRIPTION_CHARS else flat[: DESCRIPTION_CHARS - 1] + "…"


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


def relevance(
    specs: Sequence[ToolSpec], message: str, embed: Embed, turn: SmallTurn | None = None
) -> npt.NDArray[np.float32]:
    """Each tool's closeness to the message: the embedder's cosine with its description or
    the nearest request it declares it serves, plus a share for the message's words found in
    its name and description (not the requests: their other words, "sister", "day", drew
    the tool to messages that shared them)."""
    turn = turn or SmallTurn()
    described = [f"{s['name'].replace('_', ' ')}: {short_description(s)}" for s in specs]
    asked = [turn.of(s["name"]).asked_like for s in specs]
    texts = [text for d, a in zip(described, asked, strict=True) for text in (d, *a)]
    vectors = embed([message, *dict.fromkeys(texts)])
    index = {text: i + 1 for i, text in enumerate(dict.fromkeys(texts))}
    cosine = vectors @ vectors[0]
    said = words(message)
    scores = []
    for description, examples in zip(described, asked, strict=True):
        meaning = max(float(cosine[index[t]]) for t in (description, *examples))
        told = words(description)
        scores.append(meaning + WORDS_WEIGHT * len(said & told) / max(len(said), 1))
    return np.asarray(scores, dtype=np.float32)


def related_enough(name: str, score: float, turn: SmallTurn) -> bool:
    bar = turn.of(name).offered_at_least
    return score >= (RELATED_AT_LEAST if bar is None else bar)


def always(turn: SmallTurn, specs: Sequence[ToolSpec]) -> set[int]:
    return {i for i, s in enumerate(specs) if turn.of(s["name"]).always_offered}


def choose(
    specs: Sequence[ToolSpec],
    message: str,
    embed: Embed,
    turn: SmallTurn | None = None,
    at_most: int = OFFERED_AT_MOST,
    earlier: str = "",
) -> Offer:
    """The tools always offered and the families nearest ``message`` (or, a little less,
    ``earlier``: the person's message before it) that are related enough, in mount order; all
    of them when few."""
    if not specs:
        return NOTHING
    turn = turn or SmallTurn()
    own = relevance(specs, message, embed, turn)
    scores = own
    if earlier.strip():
        before = relevance(specs, earlier, embed, turn) - EARLIER_LESS
        scores = np.maximum(own, before)
    ranked = np.argsort(-scores).tolist()
    nearest = tuple(specs[i]["name"] for i in np.argsort(-own).tolist()[:NEAREST])
    keep = set(range(len(specs)))
    if len(specs) > at_most:
        keep = by_family(specs, scores, ranked, turn)
    kept = [i for i in range(len(specs)) if i in keep]
    # How related each offered tool is to this message itself: a tool offered for the message
    # before it is checked before it runs ("my sister is visiting" after a question about a
    # device reached for that device's tool to find it).
    return Offer(
        [specs[i] for i in kept],
        nearest,
        {specs[i]["name"]: float(own[i]) for i in kept},
        asks_for_words(message, embed),
    )


def asks_for_words(message: str, embed: Embed) -> bool:
    """Whether ``message`` asks for words alone (see :data:`FOR_WORDS`)."""
    vectors = embed([message, *FOR_WORDS])
    return bool(message.strip()) and float((vectors[1:] @ vectors[0]).max()) >= FOR_WORDS_AT_LEAST


def by_family(
    specs: Sequence[ToolSpec],
    scores: npt.NDArray[np.float32],
    ranked: Sequence[int],
    turn: SmallTurn,
) -> set[int]:
    """The tools always offered, and the whole families of the tools most related to the
    message (one, or two when the second is about as near)."""
    keep = always(turn, specs)
    related = [
        i
        for i in ranked
        if i not in keep and related_enough(specs[i]["name"], float(scores[i]), turn)
    ]
    if not related:
        return keep
    first = related[0]
    chosen = [turn.family(specs[first]["name"])]
    for i in related[1:]:
        near = float(scores[i]) >= float(scores[first]) - SECOND_FAMILY_WITHIN
        other = turn.family(specs[i]["name"])
        if near and other not in chosen:
            chosen.append(other)
            break
    for name in chosen:
        members = [i for i, s in enumerate(specs) if turn.family(s["name"]) == name]
        if len(members) > FAMILY_AT_MOST:
            members = [i for i in members if i in related][:FAMILY_AT_MOST]
        keep.update(members)
    return keep


def family_offers(specs: Sequence[ToolSpec], turn: SmallTurn) -> list[list[ToolSpec]]:
    """The offers a message about one family gets, one per family small enough to be offered
    whole, in mount order: what the hub reads ahead."""
    first = always(turn, specs)
    shared = [specs[i] for i in sorted(first)]
    grouped: dict[str, list[ToolSpec]] = {}
    for i, spec in enumerate(specs):
        if i not in first:
            grouped.setdefault(turn.family(spec["name"]), []).append(spec)
    return [[*shared, *members] for members in grouped.values() if len(members) <= FAMILY_AT_MOST]
