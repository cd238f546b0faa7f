"""The yes/no questions the small model answers about a message before the hub acts on what it
wrote: was this memory write asked for, is this tool made for the request, and does this reply
say what only a tool could know or claim what no tool did.

Each is asked about the message (or the reply) alone, after examples answered the same way,
under a grammar that allows only "yes" or "no": asked in the conversation right after its own
call, the 1.5B said "yes" to "book me a flight" and "set the thermostat to 21 degrees" alike.
The question is said once, before the examples, and the message asked about is shown as they
are: asked after every example, the question made up half of what is read ahead at every first
start, and asked again after the message alone (and not after the examples), the 1.5B said
"yes" to "Hi!" (on a tuning set of 16 replies: 12 right asked every time, 7 asked again after
the message, 12 asked once, in a third of the time). The examples are none of the
evaluation's requests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from strands.types.tools import ToolSpec

from hub.agent.small.calls import ANSWER, Call
from hub.agent.small.context import SmallTurn
from hub.agent.small.offer import short_description, words


@dataclass(frozen=True)
class Confirmation:
    """A yes/no question about a message alone (and, where one is named, the tool called for
    it), asked after example messages answered the same way."""

    question: str
    # (message, the tool called as "name — description" or "", the answer)
    examples: tuple[tuple[str, str, str], ...] = ()
    label: str = "Message"

    def asked(self, message: str, tool: str = "") -> str:
        """A message asked about (an example's or the one the check is for)."""
        quoted = json.dumps(message, ensure_ascii=False)
        called = f"\nTool: {tool}" if tool else ""
        return f"{self.label}: {quoted}{called}"

    def chat(self, message: str, tool: str = "") -> list[dict[str, str]]:
        chat = [{"role": "system", "content": f"{self.question} Answer yes or no."}]
        for example, example_tool, verdict in self.examples:
            chat += [
                {"role": "user", "content": self.asked(example, example_tool)},
                {"role": "assistant", "content": verdict},
            ]
        return [*chat, {"role": "user", "content": self.asked(message, tool)}]


# Any call to a tool that declares no question of its own is checked against what its tool is
# made for: a request for something the hub cannot do reaches for the tool that sounds alike
# ("switch on the kitchen lamp" → the phone's flashlight). The examples pair requests with tools
# no hub has, two made for them and two that only sound alike (with none, the model says yes to
# every call).
TOOL_CHECK = Confirmation(
    "Is this tool made for what the message asks?",
    (
        (
            "book a table for two tonight",
            "send_postcard — Mail a printed postcard to a street address.",
            "no",
        ),
        ("show me my saved recipes", "list_recipes — List the recipes the user saved.", "yes"),
        (
            "turn up the heating",
            "set_volume — Set the speaker volume of the user's device.",
            "no",
        ),
        (
            "water the plants at 6 pm",
            "garden_timer — Start the garden's sprinklers at a time of day.",
            "yes",
        ),
    ),
)

# Words in a reply that only a tool's result could back: a device's state or reading, what
# memory or the jobs hold now, or an act done ("saved", "forgotten", "scheduled", "it beeped").
# Measured failure without it: a conversation's history of plain answers taught the 1.5B to
# answer "Its battery level is 80%." with no call, and "I have forgotten that." with none.
CLAIM_CHECK = Confirmation(
    "Does this reply say that something was just done, changed, saved, deleted or set up, or "
    "give a device's current state or reading?",
    (
        ("The porch light is now on.", "", "yes"),
        ("Here is a short poem about autumn leaves: Red and gold they fall...", "", "no"),
        ("I've made a note that you prefer green tea.", "", "yes"),
        ("Twelve times eight is 96.", "", "no"),
        ("Your phone's battery is at 64%.", "", "yes"),
        ("Good evening! How was your day?", "", "no"),
        ("I'll wake you at 6:30 tomorrow.", "", "yes"),
        ("A quick pancake recipe: mix flour, milk and two eggs, then fry.", "", "no"),
        ("Done, the old address is gone.", "", "yes"),
        ("Tides come from the pull of the moon on the oceans.", "", "no"),
        ("Your brother lives in Lisbon, as you told me.", "", "no"),
        ("So your aunt's train gets in on Friday evening.", "", "no"),
    ),
    label="Reply",
)


def confirmation(
    call: Call, message: str, turn: SmallTurn, spec: ToolSpec | None, sure: bool
) -> list[dict[str, str]]:
    """The chat that asks whether ``message`` asked for ``call``: the tool's own question
    (a memory write), or whether the tool is made for it; empty when it needs no asking (a
    tool well above any a wrong call reached for: ``sure``)."""
    hints = turn.of(call.name)
    if hints.confirm:
        return own_check(turn, call.name).chat(message)
    if spec is not None and call.name != ANSWER and not sure:
        return TOOL_CHECK.chat(message, f"{call.name} — {short_description(spec)}")
    return []


def own_check(turn: SmallTurn, name: str) -> Confirmation:
    hints = turn.of(name)
    return Confirmation(hints.confirm, tuple((m, "", v) for m, v in hints.confirm_examples))


def confirmation_beginnings(turn: SmallTurn) -> list[list[dict[str, str]]]:
    """The yes/no checks' chats as far as every check of that kind reads the same (their
    examples): what the runner can read before the first turn asks."""
    own = {hints.confirm: name for name, hints in turn.hints.items() if hints.confirm}
    checks = [own_check(turn, name) for name in own.values()]
    return [check.chat("") for check in (*checks, TOOL_CHECK, CLAIM_CHECK)]


def already_known(call: Call, fact_argument: str, known: Sequence[str]) -> bool:
    """Whether ``call`` writes a fact (its ``fact_argument``) whose every word one of the
    ``known`` facts already has ("Ana is the user's sister" beside "The user's sister is
    called Ana"): asked about a fact it was shown, a small model learns it again. A fact with
    one new word ("Monday" for "Friday") is news."""
    said = words(str(call.arguments.get(fact_argument, ""))) if fact_argument else set()
    return bool(said) and any(said <= words(fact) for fact in known)


def restates(reply: str, known: Sequence[str]) -> bool:
    """Whether every word of ``reply`` is in the facts memory holds (``known``): said back from
    memory, it states nothing only a tool could know and claims no act. Asked, the 1.5B called
    "You drive an old Volvo." a claim (the fact: "The user drives an old Volvo."), and the
    answer became the hub's "cannot"."""
    said = words(reply) - {"user"}
    held: set[str] = set().union(*(words(fact) for fact in known)) if known else set()
    return bool(said) and said <= held
