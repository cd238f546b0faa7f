"""learn, recall, unlearn, memory_graph, memory_conflicts: the person's memory, for the model.

All are account tools: memory belongs to a person, so an anonymous caller gets ``Login required``.

``unlearn`` acts alone only on one fact named by its id, and that can be undone. Forgetting the
facts about something (found by meaning: the hub's guess) or everything is a proposal the
person confirms in their app (``hub.agent.tools.confirming``): one misread sentence, or an
instruction planted in a tool result, never wipes a person's memory.
"""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.confirming import proposed
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.community.feed import DEFAULT_FEED, MAX_FEED
from hub.confirmations.actions import FORGET
from hub.confirmations.store import Item
from hub.contracts import MAX_ENTRIES
from hub.core.errors import Refused
from hub.memory.forgetting import plural
from hub.memory.graph import DAY_S, Fact, MemoryRefused, parse_ids, parse_links
from hub.memory.wording import third_person

# What a model writes as "about" when it means the whole memory.
EVERYTHING = frozenset(
    {
        "all",
        "all facts",
        "all of it",
        "all my facts",
        "anything",
        "everything",
        "everything about me",
        "everything you know",
        "everything you know about me",
        "me",
        "my memory",
        "the user",
    }
)


def _lines(facts: list[Fact]) -> str:
    return "\n".join(f"[{f.id}] {f.text}" for f in facts) or "(nothing)"


@tool(name="learn", context=True)
def learn(
    fact: str,
    tool_context: StrandsToolContext,
    supersedes: list[str] | None = None,
    links: list[dict[str, str]] | None = None,
    visibility: str = "private",
) -> dict[str, Any]:
    """Store one self-contained fact about the user in their memory, readable on its own
    later: who they are, the people in their life, what they like, what they plan. Use it
    whenever they ask you to remember, note, not forget or keep in mind something about
    themselves.

    Args:
        fact: the fact, a full sentence about the user in the third person ("The user's
            ...", "The user ...").
        supersedes: ids of facts this one replaces; they are closed and linked to it.
        links: connections to existing facts: [{"rel": "part_of|authored|relates_to|about",
            "dst": "<fact id>", "scope": "<context, optional>"}].
        visibility: private (default), or public: shared with everyone who follows the person
            (their feed). Public only when the person explicitly asked to share this fact.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    try:
        stored = ctx.hub.memory.learn(
            ctx.caller.id,
            third_person(fact) if isinstance(fact, str) else fact,
            supersedes=parse_ids(supersedes, "supersedes"),
            links=parse_links(links),
            visibility=visibility,
        )
    except MemoryRefused as exc:
        return failed(str(exc))
    return ok(f"Saved to memory [{stored.id}]: {stored.text}", fact=stored.as_json())


@tool(name="recall", context=True)
def recall(
    query: str, tool_context: StrandsToolContext, limit: int = 5, hops: int = 0
) -> dict[str, Any]:
    """Search everything learned about the user by meaning.

    Args:
        query: what to look for, in plain words.
        limit: how many facts, 1-20.
        hops: 1 also returns facts linked to the matches.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    if not 1 <= limit <= 20 or hops not in (0, 1):
        return failed("limit must be 1-20 and hops 0 or 1")
    facts = ctx.hub.memory.recall(ctx.caller.id, query, limit=limit, hops=hops)
    return ok(_lines(facts), facts=[f.as_json() for f in facts])


@tool(name="unlearn", context=True)
def unlearn(
    tool_context: StrandsToolContext, id: str = "", about: str = "", scope: str = ""
) -> dict[str, Any]:
    """Forget what was learned about the user: one fact by its id, the facts about something
    ("about": "my bicycle"), or with scope "all" everything. Forgotten facts can be brought
    back for a while; forgetting by "about" or everything waits for the person to confirm it
    in their app.

    Args:
        id: the one fact to forget.
        about: what to forget, in the user's words ("my bicycle"): the facts about it are found
            by meaning and shown to the person, who confirms them.
        scope: "all" to forget everything; only when the person asked for exactly that (they
            confirm it in their app).
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    asked = [given for given in (id.strip(), about.strip(), scope) if given]
    if scope not in ("", "all") or len(asked) != 1:
        return failed(
            "give one of: id (the one fact to forget), about (what to forget, in words) or "
            'scope "all" (everything)'
        )
    if scope == "all" or _everything(about):
        return _propose_all(ctx, ctx.caller.id)
    if about.strip():
        return _propose_about(ctx, ctx.caller.id, about.strip())
    try:
        made = ctx.hub.memory.forget(ctx.caller.id, [id.strip()])
    except MemoryRefused as exc:
        return failed(str(exc))
    return ok(f"{made.describe()} {made.undo_note()}", forgetting=made.as_json())


def _everything(about: str) -> bool:
    return " ".join(about.lower().strip(" .!?").split()) in EVERYTHING


def _propose_about(ctx: ToolContext, owner: str, about: str) -> dict[str, Any]:
    facts = ctx.hub.memory.about(owner, third_person(about))
    if not facts:
        return ok(f"No fact in the memory is about {about}; nothing was forgotten.", forgot=0)
    return proposed(
        ctx,
        FORGET,
        f"forget {plural(len(facts), 'fact')} about “{about}”",
        [Item(fact.id, fact.text) for fact in facts],
        {"ids": [fact.id for fact in facts], "about": about},
        _undo_note(ctx),
    )


def _propose_all(ctx: ToolContext, owner: str) -> dict[str, Any]:
    facts = ctx.hub.memory.recent(owner, MAX_ENTRIES)
    if not facts:
        return ok("The memory holds no facts; there is nothing to forget.", forgot=0)
    return proposed(
        ctx,
        FORGET,
        f"forget everything: all {plural(len(facts), 'fact')}",
        [Item(fact.id, fact.text) for fact in facts],
        {"scope": "all", "ids": [fact.id for fact in facts]},
        _undo_note(ctx),
    )


def _undo_note(ctx: ToolContext) -> str:
    days = ctx.hub.memory.grace_s / DAY_S
    return f"Once confirmed, the facts can still be brought back for {days:g} days. "


@tool(name="memory_graph", context=True)
def memory_graph(
    tool_context: StrandsToolContext,
    id: str = "",
    mode: str = "neighbors",
    depth: int = 1,
    relations: list[str] | None = None,
    limit: int = DEFAULT_FEED,
) -> dict[str, Any]:
    """The graph around a fact, the community around a person or tiny, or the feed.

    Args:
        id: neighbors: the fact at the centre. social: @login, user:<id> or tiny:<name>, or
            empty for the trust ranking of tinys.
        mode: neighbors (the user's facts linked to one), social (who follows and consults
            whom, in public), or feed (what the people the user follows have published).
        depth: neighbors only: 1 or 2 steps out.
        relations: neighbors only: just these relations (e.g. ["part_of", "supersedes"]).
        limit: social ranking and feed: how many, 1-100.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    if mode == "social":
        return _social(ctx, id.strip(), limit)
    if mode == "feed":
        return _feed(ctx, limit)
    if mode != "neighbors":
        return failed("mode must be neighbors, social or feed")
    if not id:
        return failed("neighbors needs the id of a fact")
    try:
        facts, edges = ctx.hub.memory.neighbors(ctx.caller.id, id, depth, relations or ())
    except MemoryRefused as exc:
        return failed(str(exc))
    text = _lines(facts) + "\n" + "\n".join(f"{e.src} -{e.rel}-> {e.dst}" for e in edges)
    return ok(text, nodes=[f.as_json() for f in facts], edges=[e.as_json() for e in edges])


def _social(ctx: ToolContext, node: str, limit: int) -> dict[str, Any]:
    community = ctx.hub.community
    if not 1 <= limit <= MAX_FEED:
        return failed(f"limit must be 1-{MAX_FEED}")
    if not node:
        ranking = community.ranking(limit)
        text = "\n".join(f"{r['tiny']} {r['builder']} {r['trust']}" for r in ranking)
        return ok(text or "(no tiny has consulted another yet)", trust=ranking)
    try:
        edges = community.around(node)
    except Refused as exc:
        return failed(str(exc))
    shown = [
        {**e.as_json(), "src": community.label(e.src), "dst": community.label(e.dst)} for e in edges
    ]
    text = "\n".join(f"{e['src']} -{e['rel']}-> {e['dst']} ({e['weight']:g})" for e in shown)
    return ok(text or f"(nothing public around {node})", edges=shown)


def _feed(ctx: ToolContext, limit: int) -> dict[str, Any]:
    assert ctx.caller is not None
    if not 1 <= limit <= MAX_FEED:
        return failed(f"limit must be 1-{MAX_FEED}")
    items = ctx.hub.community.feed(ctx.caller, limit)
    text = "\n".join(f"{i.at[:16]} {i.by} {i.kind}: {i.text}" for i in items)
    return ok(text or "(nothing new from the people you follow)", feed=[i.as_json() for i in items])


@tool(name="memory_conflicts", context=True)
def memory_conflicts(
    tool_context: StrandsToolContext, action: str = "list", keep: int = 0
) -> dict[str, Any]:
    """Contradiction candidates: the same subject and relation pointing at different facts in
    one scope. Resolve one by keeping a link; the others in its group are closed.

    Args:
        action: list, or resolve.
        keep: with resolve, the id of the link to keep.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    if action == "list":
        groups = ctx.hub.memory.conflicts(ctx.caller.id)
        return ok(f"{len(groups)} conflict group(s).", conflicts=groups)
    if action != "resolve" or not keep:
        return failed("action must be list, or resolve with keep=<link id>")
    try:
        closed = ctx.hub.memory.resolve_conflict(ctx.caller.id, keep)
    except MemoryRefused as exc:
        return failed(str(exc))
    return ok(f"Kept link {keep}; closed {len(closed)}.", closed=closed)


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [learn, recall, unlearn, memory_graph, memory_conflicts]


# What the person tells the companion can always be kept: ``learn`` is offered with every
# message. A small model never makes a fact public (the 1.5B set it unasked: "from now on, know
# that I prefer tea" became public), never names ids (it is shown facts without them, and a
# newer fact listed later wins) and writes a fact about "the user" (shown facts as said to the
# person, it copied "Your sister is Ana"; the pattern also keeps it one line without quotes).
# Its call runs once the model, asked about the message alone, says it told something worth
# keeping (asked after the call in the conversation, the 1.5B said yes to "book me a flight").
hinted(
    "memory",
    learn,
    always_offered=True,
    withheld=frozenset({"visibility", "supersedes"}),
    shaped={"fact": {"pattern": '^The user[^"\\\\\\n]+$'}},
    confirm="Does the writer of this message ask you to remember something, or tell you "
    "something lasting about themselves or the people in their life?",
    confirm_examples=(
        ("please remember that my flat is on the 3rd floor", "yes"),
        ("switch the radio on", "no"),
        ("my brother moved to Lisbon last month", "yes"),
        ("what is my flat number?", "no"),
        ("I'm starving right now", "no"),
        ("write me a haiku about rain", "no"),
    ),
    fact_argument="fact",
)
# Searching memory is offered at a lower bar than other tools: the facts the prompt already
# holds answer most questions about the person, and offered on every turn, a small model
# "recalls" the capital of France (measured on requests kept apart from the evaluation: asking
# about one's memory scores 0.32 and above, small talk 0.16 and below).
hinted("memory", recall, offered_at_least=0.3, read_first=True)
# Forgetting is offered by what a fact is about ("my bicycle"), which the hub resolves to the
# facts by meaning and the person confirms; never by id (a 1.5B copies a random id wrongly, and
# may close another fact) nor for everything.
hinted(
    "memory",
    unlearn,
    withheld=frozenset({"id", "scope"}),
    asked_like=("please forget that", "forget what I told you about it", "you can forget it now"),
    confirm="Is the writer of this message asking you to forget something you know about them?",
)
hinted("memory", memory_graph, memory_conflicts)
