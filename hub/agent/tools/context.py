"""What a tool knows about the turn it runs in: the hub, the caller, the tiny, the client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import HOST_STATE_KEY
from hub import contracts as c
from hub.agent.tools.client_caps import SILENT, ClientCaps
from hub.agent.tools.host import HubHost
from hub.agent.tools.results import failed, ok, with_image
from hub.people.identity import User
from hub.runtime.hub import Hub
from hub.tinys.records import Tiny

__all__ = [
    "STATE_KEY",
    "ToolContext",
    "failed",
    "login_required",
    "ok",
    "owner_only",
    "owner_turn",
    "sent_to_client",
    "turn_context",
    "with_image",
]


@dataclass(frozen=True)
class ToolContext(HubHost):
    """A turn; as a ``drivers.base.DriverHost`` it is what the drivers' tools see of the hub."""

    hub: Hub
    caller: User | None
    tiny: Tiny
    session: str = ""
    # The turn's strands model, for tools that run agents of their own (spawn_agents).
    model: Any = None
    # What the tinys the turn found in the universe lend it (their skills): mounted after the
    # tiny's own tools (docs/protocol.md, turn step 5; see agent/tools/universe.py).
    related: tuple[AgentTool, ...] = ()
    # The tiny's own OpenAPI operations, fetched before the (synchronous) mount: see
    # agent/tools/operations.py.
    operations: tuple[AgentTool, ...] = ()
    # What the client said it can do (x-tiny-client, x-tiny-client-can): see client_caps.py.
    client: ClientCaps = SILENT

    @property
    def native_app(self) -> bool:
        return self.session in (c.SESSION_IOS, c.SESSION_ANDROID)

    @property
    def ios(self) -> bool:
        return self.session == c.SESSION_IOS

    @property
    def owns_tiny(self) -> bool:
        return self.caller is not None and self.caller.id == self.tiny.owner_id


STATE_KEY = HOST_STATE_KEY


def turn_context(tool_context: StrandsToolContext) -> ToolContext:
    """The turn a tool runs in. Tools are built once (their schemas are costly to derive) and
    find their turn in strands' invocation state, which the turn fills."""
    found: ToolContext = tool_context.invocation_state[STATE_KEY]
    return found


def sent_to_client(action: str, said: str = "", /, **request: Any) -> dict[str, Any]:
    """The result of a tool the client runs: the client acts on the request it sees in the
    stream (the phone apps on beforeToolCallEvent; the TUI on afterToolCallEvent, once the hub
    has checked the input); the model learns the request went out, after ``said``: what the
    person should hear of it comes first, as a small model answers from the first sentence."""
    return ok(
        (f"{said} " if said else "")
        + f"Sent to the app: it runs {action} on the device and shows the result in the chat.",
        clientAction=action,
        request=request,
    )


def login_required() -> dict[str, Any]:
    return failed(c.LOGIN_REQUIRED)


def owner_only(ctx: ToolContext, what: str) -> dict[str, Any] | None:
    """The refusal for anyone but the hub's owner (its camera, its microphone, its boards),
    or None when the caller is the owner."""
    return ctx.owner_refusal(what)


def owner_turn(
    tool_context: StrandsToolContext, what: str
) -> tuple[ToolContext, dict[str, Any] | None]:
    """The turn, and the refusal to return when the caller is not the hub's owner."""
    ctx = turn_context(tool_context)
    return ctx, owner_only(ctx, what)
