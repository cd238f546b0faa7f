"""A chat turn's proposals, read from the stream: a tool that would lose the person's data
(forgetting facts, deleting a job, a forged tool, a bot) answers with a proposal instead of
acting, and the client asks the person (docs/memory.md, what needs the person).

No Textual here: ``tiny-hub chat`` reads proposals too. The answer goes to
``POST /api/confirmations/confirm`` or ``.../decline`` with the person's own token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONFIRM_PATH = "/api/confirmations/confirm"
DECLINE_PATH = "/api/confirmations/decline"
VERBS = {True: CONFIRM_PATH, False: DECLINE_PATH}


def proposal_of(tool_result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The proposal a successful tool result carries (``needsConfirmation`` and
    ``confirmation`` in its JSON), or None."""
    if tool_result.get("status") != "success":
        return None
    for block in tool_result.get("content") or []:
        data = block.get("json") if isinstance(block, Mapping) else None
        if not isinstance(data, Mapping) or data.get("needsConfirmation") is not True:
            continue
        found = data.get("confirmation")
        if isinstance(found, Mapping) and isinstance(found.get("id"), str):
            return dict(found)
    return None


def item_lines(proposal: Mapping[str, Any]) -> list[str]:
    """What the action would touch, one line each, with how many more there are."""
    items = [i for i in proposal.get("items") or [] if isinstance(i, Mapping)]
    lines = [f"• {i.get('text', '')}" for i in items]
    total = proposal.get("total")
    if isinstance(total, int) and total > len(items):
        lines.append(f"… and {total - len(items)} more")
    return lines


def question(proposal: Mapping[str, Any]) -> str:
    """The proposal as the person reads it: "Confirm: forget 1 fact about …?" and the items."""
    title = str(proposal.get("title") or proposal.get("action") or "this")
    return "\n".join([f"The companion asks to {title}:", *item_lines(proposal)])


def answered_text(answer: Mapping[str, Any]) -> str:
    """The hub's answer to a confirm or a decline, in words."""
    pending = answer.get("confirmation")
    if not isinstance(pending, Mapping):
        return "the hub answered without the proposal"
    if pending.get("state") == "declined":
        return "Declined: nothing was done."
    outcome = str(pending.get("outcome") or "")
    if answer.get("carriedOut") is False and not outcome.startswith("Not done"):
        return f"Already answered. {outcome}".strip()
    return outcome or "Done."
