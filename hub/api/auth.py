"""Who is calling: one middleware resolves the caller, each route states who may call it.

The caller comes from ``Authorization: Bearer <token>`` or the ``tiny_session`` cookie, or is
anonymous. A token that resolves to nobody is a 401, never a quiet downgrade to anonymous: a
client with a stale token must find out, not lose its account's tools silently. A route that
does not state its access needs a signed-in user, so forgetting is the safe mistake.

A route marked :func:`loopback_anonymous` (chat: the owner's model and tools) is open to an
anonymous caller only on this machine: a caller from the LAN needs a token unless the owner
opened it (``access.lan_anonymous_chat``). "This machine" is decided from the connection's peer
address alone (:func:`is_loopback_peer`), never from a header a caller writes.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from hub.api.errors import Handler, json_error
from hub.api.keys import HUB
from hub.contracts import SESSION_COOKIE
from hub.mcp_server.clients import McpClients
from hub.people.identity import User

_CALLER: web.RequestKey[User | None] = web.RequestKey("caller")
# The presented token and who it names, resolved once: the rate limiter needs it before this
# middleware runs, and resolving twice would also stamp the token's last use twice.
_PRESENTED: web.RequestKey[tuple[str | None, User | None]] = web.RequestKey("presented caller")
_ACCESS_ATTR = "__tiny_hub_access__"
_LOOPBACK_ANONYMOUS_ATTR = "__tiny_hub_loopback_anonymous__"
_CLIENT_TOKENS_ATTR = "__tiny_hub_client_tokens__"

F = TypeVar("F", bound=Callable[..., Any])


class Access(enum.Enum):
    ANONYMOUS = "anonymous"
    USER = "user"
    OWNER = "owner"
    # A dial-in device: anonymous to this middleware, authenticated by ``{deviceId, token}``
    # in the body by the route itself (hub/api/devices.py ``_dial_in``).
    DEVICE = "device"
    # An MCP client: the owner's token or a token the owner issued to a named client, which
    # opens this kind of route only; the route checks it itself (hub/mcp_server/http.py).
    CLIENT = "client"


def access(level: Access) -> Callable[[F], F]:
    """Declare who may call a route handler."""

    def mark(handler: F) -> F:
        setattr(handler, _ACCESS_ATTR, level)
        return handler

    return mark


def client_tokens(handler: F) -> F:
    """Mark a route that also takes a token the owner issued to a named client (``tiny-hub mcp
    token add NAME``): the client acts for the owner, as it does on ``/mcp``, and removing the
    client revokes it. The OpenAI-compatible routes take them, so an editor or a chat app gets a
    token of its own instead of the owner's."""
    setattr(handler, _CLIENT_TOKENS_ATTR, True)
    return handler


def loopback_anonymous(handler: F) -> F:
    """Mark an anonymous route whose anonymous callers must be on this machine (see above)."""
    setattr(handler, _LOOPBACK_ANONYMOUS_ATTR, True)
    return handler


def is_loopback_peer(remote: str | None) -> bool:
    """Whether a connection's peer address is this machine (127.0.0.0/8, ::1, and IPv4
    loopback carried in IPv6); an unknown peer is not."""
    if not remote:
        return False
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def undecodable_header(request: web.Request) -> str | None:
    """The name of the first header whose value is not UTF-8, or None. Every header is judged
    on its raw bytes before anything reads it, so no handler meets a half-decoded value."""
    for name, value in request.raw_headers:
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return name.decode("latin-1")
    return None


def caller(request: web.Request) -> User | None:
    return request.get(_CALLER)


def signed_in(request: web.Request) -> User:
    """The caller of a route whose access rule needs a signed-in caller: the middleware answers
    401 before such a handler runs without one."""
    user = caller(request)
    assert user is not None
    return user


def _presented_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    return request.cookies.get(SESSION_COOKIE)


def presented_caller(request: web.Request) -> tuple[str | None, User | None]:
    """The token the request presents (None: none; "": an unusable one) and the user it
    names, if any; resolved once per request."""
    presented = request.get(_PRESENTED)
    if presented is None:
        token = _presented_token(request)
        user = request.app[HUB].identity.resolve(token) if token else None
        presented = request[_PRESENTED] = (token, user)
    return presented


def declared_access(handler: Callable[..., Any]) -> Access:
    """What a route handler declared; a handler that declared nothing needs a user."""
    level = getattr(handler, _ACCESS_ATTR, Access.USER)
    return level if isinstance(level, Access) else Access.USER


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.match_info.http_exception is None and (
        declared_access(request.match_info.handler) is Access.CLIENT
    ):
        return await handler(request)
    token, user = presented_caller(request)
    if token and user is None and _takes_client_tokens(request):
        user = _client_owner(request, token)
    if token is not None and user is None:
        return json_error(401, "invalid token: sign in again or use the token in owner.token")
    request[_CALLER] = user
    if request.match_info.http_exception is not None:  # no such route: let it 404 / 405
        return await handler(request)
    # The route's own handler, not ``handler``: that is the next middleware when one follows.
    route = request.match_info.handler
    needed = declared_access(route)
    if needed in (Access.USER, Access.OWNER) and user is None:
        return json_error(401, "sign in required: send Authorization: Bearer <token>")
    if user is None and _refuses_lan_anonymous(request, route):
        return json_error(
            401,
            "sign in required from the LAN: send Authorization: Bearer <token> (pair the "
            "device with the hub), or the owner sets access.lan_anonymous_chat = true",
        )
    if needed is Access.OWNER and not user.is_owner:  # type: ignore[union-attr]
        return json_error(403, "only the hub's owner may do this")
    return await handler(request)


def _takes_client_tokens(request: web.Request) -> bool:
    route = request.match_info.handler
    return request.match_info.http_exception is None and getattr(route, _CLIENT_TOKENS_ATTR, False)


def _client_owner(request: web.Request, token: str) -> User | None:
    """The owner, when ``token`` is a named client's (the client acts for them); else None."""
    hub = request.app[HUB]
    return hub.owner if McpClients(hub.db).resolve(token) is not None else None


def _refuses_lan_anonymous(request: web.Request, route: Callable[..., Any]) -> bool:
    if not getattr(route, _LOOPBACK_ANONYMOUS_ATTR, False):
        return False
    if request.app[HUB].settings.lan_anonymous_chat:
        return False
    return not is_loopback_peer(request.remote)
