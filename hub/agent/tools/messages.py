"""send_message, read_messages: direct messages between the people of this hub, for the model.

Both are account tools: an inbox belongs to a person, so an anonymous caller gets
``Login required``.
"""

from __future__ import annotations

from typing import Any

from strands import tool
from strands.types.tools import AgentTool
from strands.types.tools import ToolContext as StrandsToolContext

from drivers.base import hinted
from hub.agent.tools.context import ToolContext, failed, login_required, ok, turn_context
from hub.messages.delivery import peer, send_message
from hub.messages.store import MAX_LIST, Inbox, MessageRefused


@tool(name="send_message", context=True)
def send_message_tool(to: str, text: str, tool_context: StrandsToolContext) -> dict[str, Any]:
    """Send a direct message to another person of this hub; it lands in their inbox and on
    their phones.

    Args:
        to: the person's @login, or the name of one of their tinys (it reaches the tiny's owner).
        text: the message, as the person wants it said (at most 4000 characters).
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    try:
        message = send_message(ctx.hub, ctx.caller, to, text)
    except MessageRefused as exc:
        return failed(str(exc))
    via = f" (via their tiny {message.tiny})" if message.tiny else ""
    return ok(f"Sent to @{message.recipient}{via}.", message=message.as_json())


@tool(name="read_messages", context=True)
def read_messages(
    tool_context: StrandsToolContext, with_login: str = "", limit: int = 20
) -> dict[str, Any]:
    """The person's inbox: every conversation with its unread count, or, with with_login, one
    conversation (its messages are then marked read).

    Args:
        with_login: the @login of the other person, to read that conversation.
        limit: how many conversations or messages, 1-200.
    """
    ctx = turn_context(tool_context)
    if ctx.caller is None:
        return login_required()
    if not 1 <= limit <= MAX_LIST:
        return failed(f"limit must be 1-{MAX_LIST}")
    try:
        if with_login.strip():
            return _conversation(ctx, with_login.strip(), limit)
    except MessageRefused as exc:
        return failed(str(exc))
    return _overview(ctx, limit)


def _overview(ctx: ToolContext, limit: int) -> dict[str, Any]:
    assert ctx.caller is not None
    inbox = Inbox(ctx.hub.db)
    conversations = inbox.overview(ctx.caller.id, limit)
    lines = [
        f"@{c.login} ({c.unread} unread): @{c.last.sender}: {c.last.text[:80]}"
        for c in conversations
    ]
    unread = inbox.unread(ctx.caller.id)
    head = f"{len(conversations)} conversation(s), {unread} unread message(s)."
    return ok(
        "\n".join([head, *lines]),
        unread=unread,
        conversations=[c.as_json() for c in conversations],
    )


def _conversation(ctx: ToolContext, login: str, limit: int) -> dict[str, Any]:
    assert ctx.caller is not None
    other = peer(ctx.hub, login)
    inbox = Inbox(ctx.hub.db)
    messages = inbox.conversation(ctx.caller.id, other.id, limit)
    marked = inbox.mark_read(ctx.caller.id, other.id)
    lines = [f"[{m.id}] @{m.sender}: {m.text}" for m in messages] or ["(no messages yet)"]
    return ok(
        "\n".join([f"Conversation with @{other.login} ({marked} newly read):", *lines]),
        messages=[m.as_json() for m in messages],
        markedRead=marked,
    )


def tools(ctx: ToolContext) -> list[AgentTool]:
    return [send_message_tool, read_messages]


hinted("messages", send_message_tool, read_messages)
