"""The HTTP routes the installed drivers add (``Driver.http_routes``), mounted like the hub's own.

Each one sits under the same middlewares (errors as JSON, rate limits, sign-in, body limits)
and carries the access its driver declared, which the auth middleware enforces before the
driver's handler runs; the handler gets the request and the hub as a ``DriverHost`` for the
caller. A route is skipped (and logged) when it would leave its driver's own prefix
``/api/drivers/<name>/``, take a route the hub already has, or declare an unknown method or
access: a driver package adds routes, it never replaces or shadows one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from aiohttp import web

from drivers.base import Driver, DriverRoute, RouteAccess
from hub.agent.tools.host import HubHost, as_driver_host
from hub.api.auth import Access, access, caller
from hub.api.errors import Handler, http_error
from hub.api.keys import HUB
from hub.people.identity import User
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
ACCESS: dict[RouteAccess, Access] = {
    "anyone": Access.ANONYMOUS,
    "user": Access.USER,
    "owner": Access.OWNER,
}


@dataclass(frozen=True)
class RequestHost(HubHost):
    """The hub as a driver's route sees it, for the caller of one request."""

    hub: Hub
    caller: User | None


def prefix(driver: type[Driver]) -> str:
    """Where a driver's routes live: its own corner of the API."""
    return f"/api/drivers/{driver.name}/"


def route_problem(driver: type[Driver], route: DriverRoute, taken: set[tuple[str, str]]) -> str:
    """Why ``route`` may not be mounted, or "" when it may."""
    if route.method not in METHODS:
        return f"method {route.method!r} is not one of {', '.join(sorted(METHODS))}"
    if route.access not in ACCESS:
        return f"access {route.access!r} is not one of {', '.join(ACCESS)}"
    if not route.path.startswith(prefix(driver)) or route.path == prefix(driver):
        return f"the path is not under {prefix(driver)}"
    if (route.method, route.path) in taken:
        return "the hub already has this route"
    return ""


def add_driver_routes(app: web.Application) -> list[tuple[str, str]]:
    """Mount every installed driver's routes on ``app``; the (method, path) of each mounted."""
    taken = {
        (r.method, r.resource.canonical) for r in app.router.routes() if r.resource is not None
    }
    mounted: list[tuple[str, str]] = []
    for driver, route in app[HUB].drivers.catalog.routes():
        problem = route_problem(driver, route, taken)
        if problem:
            log.warning(
                "driver %r: route %s %s skipped: %s", driver.name, route.method, route.path, problem
            )
            continue
        app.router.add_route(route.method, route.path, _handler(driver, route))
        taken.add((route.method, route.path))
        mounted.append((route.method, route.path))
    return mounted


def _handler(driver: type[Driver], route: DriverRoute) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        host = as_driver_host(RequestHost(request.app[HUB], caller(request)))
        try:
            return await route.handler(request, host)
        except web.HTTPException:
            raise
        except Exception:  # the driver's fault: the caller learns which driver, not a 500
            log.exception("driver %r: %s %s failed", driver.name, route.method, route.path)
            raise http_error(
                web.HTTPBadGateway, f"the {driver.name} driver failed (the hub's log has why)"
            ) from None

    handle.__qualname__ = handle.__name__ = f"{driver.name}:{route.method} {route.path}"
    return access(ACCESS[route.access])(handle)
