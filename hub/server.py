"""Start and stop the HTTP API around a :class:`Hub`, with errors a person can read.

The listening socket is bound before anything else starts, so a port in use fails at once
with one line, before the hub has opened its database or loaded a model.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from dataclasses import dataclass

from aiohttp import web

from hub.api.app import create_app
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

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
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
    runner = web.AppRunner(create_app(hub), handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    server = RunningServer(hub, runner, host, int(sock.getsockname()[1]))
    server.maintenance = asyncio.create_task(_index_missing_vectors(hub))
    server.sweeper = asyncio.create_task(_sweep_mailbox(hub))
    await hub.drivers.start()
    return server


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
    """Facts whose vector was never written (a crash between the two writes) get one now."""
    try:
        indexed = await asyncio.to_thread(hub.memory.index_missing)
    except Exception:
        log.warning("could not index facts missing from Chroma", exc_info=True)
        return
    if indexed:
        log.info("indexed %d fact(s) that had no vector", indexed)
