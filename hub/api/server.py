"""Start and stop the HTTP API around a :class:`Hub`, with errors a person can read.

The listening socket is bound before anything else starts, so a port in use fails at once
with one line, before the hub has opened its database or loaded a model.
"""

from __future__ import annotations

import logging
import socket
import ssl
from dataclasses import dataclass

from aiohttp import web

from hub.api.app import create_app
from hub.api.connection import HubRunner
from hub.api.keys import PARTS
from hub.api.listen_socket import StartError, bind_socket
from hub.lan.address import dialable, lan_address
from hub.lan.advertise import hub_name
from hub.process.parts import Listening, Parts
from hub.runtime.hub import Hub

log = logging.getLogger(__name__)


@dataclass
class RunningServer:
    hub: Hub
    runner: web.AppRunner
    host: str
    port: int

    @property
    def parts(self) -> Parts:
        """What runs beside the API (cloud link, memory sync, LAN advertiser, repairs)."""
        return self.runner.app[PARTS]

    @property
    def url(self) -> str:
        """Where local clients (the TUI, ``chat``) call: plain HTTP on loopback under TLS."""
        if self.hub.lan.loopback_url:
            return self.hub.lan.loopback_url
        return f"http://{dialable(self.host)}:{self.port}"

    @property
    def main_url(self) -> str:
        """The main listener as a URL that works when pasted on this machine (a wildcard
        address is not one a client can dial)."""
        scheme = "https" if self.hub.lan.fingerprint else "http"
        return f"{scheme}://{dialable(self.host)}:{self.port}"

    @property
    def lan_url(self) -> str | None:
        return self.hub.lan.url

    async def stop(self) -> None:
        """Stop serving; the parts stop in the reverse of their start order (see hub/process)."""
        await self.runner.cleanup()


async def start_server(
    hub: Hub, host: str, port: int, sock: socket.socket | None = None
) -> RunningServer:
    """Serve the API on ``sock`` if given (see :func:`bind_socket`), else bind host:port. The
    parts start with the app; if anything fails half-way, what started is stopped again."""
    sock = sock or bind_socket(host, port)
    bound_port = int(sock.getsockname()[1])
    tls = _tls_context(hub)
    runner = HubRunner(
        create_app(hub, listening=Listening(host, bound_port)),
        header_timeout_s=hub.settings.header_timeout_s,
        handler_cancellation=True,
        access_log=None,
    )
    try:
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=tls).start()
        if hub.lan.fingerprint is not None:  # the local TUI keeps plain HTTP, on loopback only
            loopback = bind_socket("127.0.0.1", 0)
            await web.SockSite(runner, loopback).start()
            hub.lan.loopback_url = f"http://127.0.0.1:{loopback.getsockname()[1]}"
            log.info("TLS on; plain HTTP for local clients at %s", hub.lan.loopback_url)
    except BaseException:
        await runner.cleanup()
        raise
    return RunningServer(hub, runner, host, bound_port)


def _tls_context(hub: Hub) -> ssl.SSLContext | None:
    """With lan.tls, the hub's own certificate (made once, see hub.lan.tls); else None."""
    if not hub.settings.lan_tls:
        return None
    from hub.lan.tls import ensure_certificate

    settings = hub.settings
    try:
        certificate = ensure_certificate(
            settings.home, hub_name(settings.lan_name), lan_address(), socket.gethostname()
        )
        context = certificate.server_context()
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise StartError(
            f"cannot use the TLS certificate in {settings.home / 'tls'}: {exc} "
            "(delete that folder to make a new one; phones will need pairing again)"
        ) from None
    hub.lan.fingerprint = certificate.fingerprint
    return context
