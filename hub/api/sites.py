"""Which web pages may reach the hub: the Host a request names, the page it came from, its body.

The hub listens on loopback and on the LAN with no cookie-less CORS to lean on, and a browser
the owner uses is on that same machine or network. Three rules keep a web page from using it:

- **Host** (every request): DNS rebinding points a page's own name (``evil.example``) at the
  hub, which then reads as same-origin to the browser. A rebound request still names that host,
  so only names that cannot be rebound from the internet are answered: IP addresses,
  ``localhost``, one-word names, the home network's own (``.local``, ``.home.arpa``,
  ``.internal``, ``.lan``), the machine's own name, ``lan.url``'s host, and what the owner lists
  in ``access.allowed_hosts`` (a reverse proxy, a tunnel).
- **Origin** (every request that carries one): a browser names the page a request comes from;
  one from another site (or ``null``, a sandboxed frame) is a 403, unless the owner lists that
  origin in ``access.allowed_origins``. The hub's own clients (the TUI, the CLI, phones, MCP
  clients, the cloud) send no Origin.
- **JSON only** (POST, PUT, PATCH, DELETE with a body): a page may send a form or plain text to
  any site without a preflight, but never ``application/json``; so a body must be labelled
  ``application/json`` (or ``+json``), else 415.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from urllib.parse import urlsplit

from aiohttp import web

from hub.api.body import content_type_problem
from hub.api.errors import Handler, json_error
from hub.api.keys import HUB
from hub.config import Settings

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Names nobody can register on the internet, so nobody can rebind them: mDNS, the home network's
# own DNS (RFC 8375 home.arpa, ICANN's .internal, and the routers' .lan and .localdomain).
LOCAL_SUFFIXES = (".localhost", ".local", ".home.arpa", ".internal", ".lan", ".localdomain")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@web.middleware
async def site_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    settings = request.app[HUB].settings
    host_header = request.headers.get("Host", "")
    host = _host_name(host_header)
    if host is not None and not host_allowed(host, settings):
        return json_error(
            403,
            f"this hub does not answer to the host name {host[:80]!r} (a page that rebinds its "
            "own name to the hub); the owner can add it to access.allowed_hosts",
        )
    origin = request.headers.get("Origin")
    if origin is not None and not _origin_allowed(origin, request.scheme, host_header, settings):
        return json_error(
            403,
            f"requests from the web page {origin[:80]!r} are refused; the owner can add it to "
            "access.allowed_origins",
        )
    problem = content_type_problem(request) if request.method in STATE_CHANGING else None
    if problem is not None and request.body_exists:
        return json_error(415, problem)
    return await handler(request)


def host_allowed(host: str, settings: Settings) -> bool:
    """Whether a request naming ``host`` (lower case, no port) is answered."""
    if "*" in settings.allowed_hosts or _is_address(host):
        return True
    name = host.rstrip(".")
    if "." not in name or name == "localhost" or name.endswith(LOCAL_SUFFIXES):
        return True
    return name in _own_names(settings)


def _own_names(settings: Settings) -> frozenset[str]:
    configured = {h.strip().lower().rstrip(".") for h in settings.allowed_hosts if h.strip()}
    lan_host = urlsplit(settings.lan_url).hostname if settings.lan_url else None
    return frozenset({*configured, _machine_name(), *((lan_host.lower(),) if lan_host else ())})


@functools.cache
def _machine_name() -> str:
    return socket.gethostname().lower().rstrip(".")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _host_name(header: str) -> str | None:
    """The host a ``Host`` header names, without its port; None when there is none (HTTP/1.0)."""
    header = header.strip().lower()
    if not header:
        return None
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _origin_allowed(origin: str, scheme: str, host_header: str, settings: Settings) -> bool:
    """Same origin as the request (the page the hub would serve itself), or one the owner
    allowed; ``null`` and anything malformed are not."""
    normal = _origin_key(origin)
    if normal is None:
        return False
    allowed = {_origin_key(o) for o in settings.allowed_origins}
    if normal in allowed:
        return True
    own = _origin_key(f"{scheme}://{host_header}") if host_header else None
    return own is not None and normal == own


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme]
