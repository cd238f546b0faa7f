"""What each pending action does once the person confirms it, and the confirming itself.

One table from an action's name to the function that carries it out: the tools that propose
(``hub.agent.tools``) and the route that confirms (``hub.api.confirmations``) both name actions
from it, so a proposal can only ever be for something this table knows how to do. Each function
runs in a worker thread (forgetting touches Chroma) and raises ``Refused`` when the thing is
gone meanwhile; that refusal becomes the proposal's outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hub.confirmations.store import Pending, PendingActions
from hub.core.errors import Refused
from hub.forge.store import ForgeStore
from hub.memory.forgetting import Scope, plural
from hub.people.identity import User
from hub.scheduler.store import ScheduleStore
from hub.telegram.bots import Bots

if TYPE_CHECKING:
    from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

FORGET = "forget"
DELETE_JOB = "delete_job"
CANCEL_ALERTS = "cancel_alerts"
REMOVE_TOOL = "remove_tool"
REMOVE_BOT = "remove_telegram_bot"


@dataclass(frozen=True)
class Done:
    """What a confirmed action did: words for the person, and JSON for clients."""

    text: str
    data: dict[str, Any]


def pending_of(hub: Hub) -> PendingActions:
    return PendingActions(hub.db, hub.devices.clock)


def forget(hub: Hub, user: User, params: dict[str, Any]) -> Done:
    """Exactly the facts the person was shown (all of them, for everything) that are still
    current: a fact learned after the proposal was never shown, so it stays."""
    memory = hub.memory
    ids = [str(i) for i in params.get("ids", [])]
    still = [fact.id for fact in memory.still_current(user.id, ids)]
    if not still:
        raise Refused("nothing left to forget: those facts were already closed")
    scope: Scope = "all" if params.get("scope") == "all" else "about"
    made = memory.forget(user.id, still, scope=scope, about=str(params.get("about", "")))
    return Done(f"{made.describe()} {made.undo_note()}", {"forgetting": made.as_json()})


def delete_job(hub: Hub, user: User, params: dict[str, Any]) -> Done:
    gone = _schedule(hub).delete(user.id, str(params.get("id", "")), "job")
    return Done(f"Deleted job [{gone.id}] {gone.label}.", {"job": gone.as_json()})


def cancel_alerts(hub: Hub, user: User, params: dict[str, Any]) -> Done:
    """The alerts shown, those of them still pending."""
    store, cancelled = _schedule(hub), []
    for alert_id in params.get("ids", []):
        try:
            cancelled.append(store.delete(user.id, str(alert_id), "alert"))
        except Refused:
            continue  # fired or cancelled meanwhile
    if not cancelled:
        raise Refused("nothing left to cancel: those alerts fired or were cancelled already")
    names = ", ".join(f"[{a.id}] {a.title!r}" for a in cancelled)
    said = f"Cancelled {plural(len(cancelled), 'alert')}: {names}."
    return Done(said, {"cancelled": len(cancelled)})


def remove_tool(hub: Hub, user: User, params: dict[str, Any]) -> Done:
    store = ForgeStore(hub.db)
    name = str(params.get("name", ""))
    found = store.named(user.id, name)
    if found is None or not store.remove(user.id, name):
        raise Refused(f"you have no forged tool named {name} any more")
    return Done(f"Removed {found.tool_name}.", {"removed": found.tool_name})


def remove_bot(hub: Hub, user: User, params: dict[str, Any]) -> Done:
    Bots(hub.db, hub.settings.home).remove(user.id)
    return Done("The Telegram bot is removed, its token deleted from this hub.", {})


ACTIONS: dict[str, Callable[[Hub, User, dict[str, Any]], Done]] = {
    FORGET: forget,
    DELETE_JOB: delete_job,
    CANCEL_ALERTS: cancel_alerts,
    REMOVE_TOOL: remove_tool,
    REMOVE_BOT: remove_bot,
}


def _schedule(hub: Hub) -> ScheduleStore:
    return ScheduleStore(hub.db, hub.devices.clock)


@dataclass(frozen=True)
class Confirmed:
    """A confirmation's answer: the proposal (with its outcome), whether this call carried it
    out, and what the action returned for clients (empty on a repeat or a refusal)."""

    pending: Pending
    carried_out: bool
    data: dict[str, Any]


async def confirm(hub: Hub, user: User, pending_id: Any) -> Confirmed:
    """Carry out the person's pending action, once. Only a client calls this, with the
    person's own token; no tool does."""
    store = pending_of(hub)
    pending, taken = store.take(user.id, pending_id, "confirmed")
    if not taken:
        return Confirmed(pending, False, {})
    run = ACTIONS.get(pending.action)
    data: dict[str, Any] = {}
    try:
        if run is None:
            raise Refused(f"this hub does not know the action {pending.action!r}")
        done = await asyncio.to_thread(run, hub, user, pending.params)
        outcome, data = done.text, done.data
    except Refused as exc:
        outcome, taken = f"Not done: {exc}", False
    store.settle(pending.id, outcome)
    log.info("pending action %s (%s) confirmed: %s", pending.id, pending.action, outcome[:80])
    return Confirmed(store.get(user.id, pending.id), taken, data)


def decline(hub: Hub, user: User, pending_id: Any) -> Pending:
    store = pending_of(hub)
    pending, _ = store.take(user.id, pending_id, "declined")
    return pending
