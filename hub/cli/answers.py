"""The person's answer to a proposal, from the terminal: the yes/no question ``tiny-hub chat``
asks after a turn proposed something only the person may do (forget facts, delete a job, a
forged tool, a bot), and the answer ``tiny-hub confirm`` sends.

Both go through the hub's routes with the person's own token, as the TUI and a phone do
(``POST /api/confirmations/confirm`` or ``.../decline``); the turn itself never can. No answer
(Enter, Ctrl+D, Ctrl+C) is a no.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

ASK = "Confirm? [y/N] "
YES = ("y", "yes")


def read_yes(read: Callable[[str], str] = input) -> bool:
    """A yes typed at the question; anything else, and no answer at all, is a no. Ctrl+C
    answers no here, also inside an event loop whose own SIGINT handler would only cancel
    its task (and leave the question waiting)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return read(ASK).strip().lower() in YES
    except (EOFError, KeyboardInterrupt):
        print()
        return False
    finally:
        signal.signal(signal.SIGINT, previous)


async def answer(client: Any, proposal: Mapping[str, Any], yes: bool) -> str:
    """Send the person's answer; what the hub did, in words (its refusal too)."""
    from hub.client.http import HubError
    from hub.client.proposals import VERBS, answered_text

    try:
        answered = await client.call("POST", VERBS[yes], body={"id": proposal["id"]})
    except HubError as exc:
        return f"(not answered: {exc})"
    return answered_text(answered)


async def ask_each(
    client: Any,
    proposals: Sequence[Mapping[str, Any]],
    out: TextIO,
    read: Callable[[str], str] | None = None,
) -> None:
    """Ask about each proposal in turn and send the answer. ``read`` None: no one can answer
    here (standard input is not a terminal), so say how to answer later instead."""
    from hub.client.proposals import question

    for proposal in proposals:
        out.write(f"\n{question(proposal)}\n")
        if read is None:
            out.write(f"(waiting for you: tiny-hub confirm {proposal['id']}, or --decline)\n")
            continue
        out.flush()
        yes = read_yes(read)  # in the loop's own thread: signals reach it only there
        out.write(await answer(client, proposal, yes) + "\n")
    out.flush()
