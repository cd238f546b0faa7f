"""The answer of a tool that would lose a person's data: a proposal the person answers.

Such a tool never acts in the turn. It proposes (``hub.confirmations``), and its result tells
the model that nothing has happened and carries the proposal for clients: a successful result
whose JSON holds ``needsConfirmation: true`` and ``confirmation`` ({id, action, title, items,
total, expiresAt, state}), which the TUI shows as a card, ``tiny-hub chat`` as a yes/no question
and a phone as its own prompt; each answers with the person's token on
``POST /api/confirmations/confirm`` or ``.../decline``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hub.agent.tools.context import ToolContext, ok
from hub.confirmations.actions import pending_of
from hub.confirmations.store import Item

NOT_YET = (
    "Nothing has been done yet: it waits for the person to confirm it in their app, and only "
    "they can."
)


def proposed(
    ctx: ToolContext,
    action: str,
    title: str,
    items: Sequence[Item],
    params: dict[str, Any],
    note: str = "",
) -> dict[str, Any]:
    """Propose ``action`` to the caller and answer the model and the clients with it."""
    assert ctx.caller is not None
    store = pending_of(ctx.hub)
    pending = store.propose(ctx.caller.id, action, title, items, params)
    text = (
        f"{NOT_YET} Asked: {title}:\n{pending.listing()}\n{note}Tell them it waits for their "
        f'answer: "Confirm it in your app to {title}."'
    )
    return ok(text, needsConfirmation=True, confirmation=pending.as_json(store.now()))
