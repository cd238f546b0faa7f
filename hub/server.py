"""Start and stop the HTTP API around a :class:`Hub`, with errors a person can read.

The listening socket is bound before anything else starts, so a port in use fails at once
with one line, before the hub has opened its database or loaded a model.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from hub.api.app import create_app
from hub.api.connection import HubRunner
from hub.lan.address import is_loopback_host, lan_address, lan_url
from hub.lan.advertise import Advertiser, hub_id, hub_name
from hub.runtime import Hub

log = logging.getLogger(__name__)


class StartError(Exception):
    """The hub cannot start; the message is one line saying why and what to do."""


@dataclass
class RunningServer:
    hub: Hub
    runner: web.AppRunner
    host: str
    port: int
    maintenance: asyncio.Task[None] | None = None
    sweeper: asyncio.Task[None] | None = None
    advertiser: Advertiser | None = None

    @property
    def url(self) -> str:
        """Where local clients (the TUI, ``chat``) call: plain HTTP on loopback under TLS."""
        if self.hub.lan.loopback_url:
            return self.hub.lan.loopback_url
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"http://{host}:{self.port}"

    @property
    def public_url(self) -> str:
        """The main listener as bound (https when lan.tls is on)."""
        scheme = "https" if self.hub.lan.fingerprint else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def lan_url(self) -> str | None:
        return self.hub.lan.url

    async def stop(self) -> None:
        if self.hub.cloud is not None:
            await self.hub.cloud.stop()
        if self.hub.memory_sync is not None:
            await self.hub.memory_sync.stop()
        if self.advertiser is not None:  # goodbyes first: phones stop dialling a closing hub
            await self.advertiser.stop()
        await self.hub.drivers.stop()
        if self.sweeper is not None:
            self.sweeper.cancel()
        if self.maintenance is not None:
            await self.maintenance  # a thread cannot be interrupted; it finishes its batch
        await self.runner.cleanup()


def bind_socket(host: str, port: int) -> socket.socket:
    """Listen on host:port (0 picks a free port); StartError when that is impossible."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartError(
                f"port {port} on {host} is already in use (is another tiny-hub running? "
                "choose another with --port or TINY_HUB_PORT, or 0 for any free port)"
            ) from None
        raise StartError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


async def start_server(
    hub: Hub, host: str, port: int, sock: socket.socket | None = None
) -> RunningServer:
    """Serve the API on ``sock`` if given (see :func:`bind_socket`), else bind host:port."""
    sock = sock or bind_socket(host, port)
    runner = HubRunner(
        create_app(hub),
        header_timeout_s=hub.settings.header_timeout_s,
        handler_cancellation=True,
        access_log=None,
    )
    await runner.setup()
    await web.SockSite(runner, sock, ssl_context=_tls_context(hub)).start()
    if hub.lan.fingerprint is not None:  # the local TUI keeps plain HTTP, on loopback only
        loopback = bind_socket("127.0.0.1", 0)
        await web.SockSite(runner, loopback).start()
        hub.lan.loopback_url = f"http://127.0.0.1:{loopback.getsockname()[1]}"
        log.info("TLS on; plain HTTP for local clients at %s", hub.lan.loopback_url)
    server = RunningServer(hub, runner, host, int(sock.getsockname()[1]))
    server.maintenance = asyncio.create_task(_index_missing_vectors(hub))
    server.sweeper = asyncio.create_task(_sweep_mailbox(hub))
    _start_lan(server)
    await hub.drivers.start()
    await _start_cloud(hub)
    await _start_memory_sync(hub)
    return server


async def _start_cloud(hub: Hub) -> None:
    """Dial in to the cloud when this hub has joined one (``tiny-hub cloud join``)."""
    from hub.cloud.account import load_token
    from hub.cloud.client import CloudClient
    from hub.cloud.link import CloudLink
    from hub.cloud.notify import DesktopNotifier
    from hub.cloud.outbox import Outbox

    settings = hub.settings
    if not (settings.cloud_url and settings.cloud_device_id):
        return
    token = load_token(settings.cloud_token_path)
    if token is None:
        log.warning(
            "cloud.url is set but %s holds no token: run tiny-hub cloud join (or adopt)",
            settings.cloud_token_path,
        )
        return
    client = CloudClient(settings.cloud_url, settings.cloud_device_id, token)
    notifier = DesktopNotifier() if settings.cloud_desktop_notifications else None
    hub.cloud = CloudLink(hub, client, Outbox(hub.db, hub.devices.clock), notifier=notifier)
    await hub.cloud.start()
    log.info("dialling in to the cloud at %s as %s", settings.cloud_url, settings.cloud_device_id)


async def _start_memory_sync(hub: Hub) -> None:
    """Sync the owner's memory with the cloud when a user token is saved (tiny-hub cloud
    memory); independent of the device link, which needs no memory and vice versa."""
    from hub.cloud.account import load_token
    from hub.cloud.memory_sync import MemoryCloud, MemorySync

    settings = hub.settings
    token = load_token(settings.cloud_user_token_path) if settings.cloud_url else None
    if token is None:
        return
    cloud = MemoryCloud(settings.cloud_url, token)
    hub.memory_sync = MemorySync(hub, cloud, interval_s=settings.cloud_memory_interval_s)
    await hub.memory_sync.start()
    log.info("syncing the owner's memory with %s", settings.cloud_url)


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


def _start_lan(server: RunningServer) -> None:
    """Work out the lanUrl and, once HTTP is up, advertise the hub over mDNS (unless told not
    to, or unless it listens on loopback only, where nothing on the LAN could reach it)."""
    settings, lan = server.hub.settings, server.hub.lan

    def compute() -> str | None:
        return lan_url(settings.lan_url, server.host, server.port, tls=lan.fingerprint is not None)

    lan.url = compute()
    if lan.url:
        log.info("reachable on the LAN at %s", lan.url)
    else:
        log.info("no LAN address (listening on %s; set lan.url to name one)", server.host)
    if not settings.lan_advertise:
        log.info("not advertising on the LAN: lan.advertise is false")
        return
    if is_loopback_host(server.host):
        log.info("not advertising on the LAN: listening on %s only", server.host)
        return
    server.advertiser = Advertiser(
        name=hub_name(settings.lan_name),
        port=server.port,
        hub_id=hub_id(settings.home),
        version=server.hub.version,
        lan=lan,
        compute_url=compute,
    )
    server.advertiser.start()


SWEEP_EVERY_S = 60.0


async def _sweep_mailbox(hub: Hub) -> None:
    """Dead-letter envelopes nobody pulled within an hour; forget replies after a day."""
    while True:
        try:
            dead, forgotten = hub.devices.mailbox.sweep()
            hub.audit.trim()
            if dead or forgotten:
                log.info("relay sweep: %d dead-lettered, %d old replies dropped", dead, forgotten)
        except Exception:
            log.warning("relay sweep failed", exc_info=True)
        await asyncio.sleep(SWEEP_EVERY_S)


async def _index_missing_vectors(hub: Hub) -> None:
    """Public tinys missing from the universe get their vector, and private or deleted ones
    leave it; facts whose vector was never written (a crash between the two writes) get one."""
    await _catch_up(
        hub.universe.index_missing,
        "bring the universe in step with the tinys",
        "universe: %d tiny(s) indexed or removed",
    )
    await _catch_up(
        hub.memory.index_missing,
        "index facts missing from Chroma",
        "indexed %d fact(s) that had no vector",
    )


async def _catch_up(work: Callable[[], int], what: str, done: str) -> None:
    """One start-up repair in a thread; a failure is logged (the next start tries again)."""
    try:
        count = await asyncio.to_thread(work)
    except Exception:
        log.warning("could not %s", what, exc_info=True)
        return
    if count:
        log.info(done, count)
