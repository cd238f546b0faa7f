"""The long-lived parts of a running hub, started and stopped in one order: the model runner,
the start-up repairs and the housekeeping, the drivers, the LAN advertiser, the cloud link,
memory sync, the Telegram bots, the scheduler — and they stop in the reverse order (no job
starts while the rest stop, the bots and the cloud next, goodbyes on the LAN before the drivers
let go of their ports, the model runner last).

:func:`running` is the whole process as one context: the HTTP app enters it in its
``cleanup_ctx`` (``hub/api/app.py``), so the API sits on top of the process and never the other
way round. Each part that may be absent (no cloud joined, no user token, a loopback-only hub) is
held in :class:`Parts`, so handlers read what runs, never a field patched onto
:class:`~hub.runtime.hub.Hub` after it was opened. If a part fails to start, the parts before
it are stopped again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from hub.agent.warmup import warm_up
from hub.cloud.link import CloudLink
from hub.cloud.memory_sync import MemorySync
from hub.core.tasks import cancel_all
from hub.lan.address import is_loopback_host, lan_url
from hub.lan.advertise import Advertiser, hub_name
from hub.lan.hub_id import hub_id
from hub.process.housekeeping import Repairs, housekeeping, repair_at_start
from hub.runtime.hub import Hub
from hub.scheduler.runner import Scheduler
from hub.telegram.poller import TelegramPoller

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listening:
    """Where the app is served, known before it starts (the socket is bound first)."""

    host: str
    port: int


class Reporting(Protocol):
    """What /api/health reads of a part: its state, as a JSON object."""

    def status(self) -> dict[str, Any]: ...


@dataclass
class Parts:
    cloud: Reporting | None = None
    memory_sync: Reporting | None = None
    advertiser: Advertiser | None = None
    scheduler: Scheduler | None = None
    telegram: Reporting | None = None
    repairs: Repairs = field(default_factory=Repairs)

    def show_on_desktop(self, title: str, body: str) -> None:
        """The owner's desktop notification for one of the hub's own notices (a finished task),
        through the scheduler's notifier, which its setting turns off; nothing when there is
        none."""
        desktop = self.scheduler.desktop if self.scheduler is not None else None
        if desktop is not None:
            desktop.show(title, body)


@contextlib.asynccontextmanager
async def running(hub: Hub, parts: Parts, listening: Listening | None) -> AsyncIterator[Parts]:
    """Every part, started in order (``parts`` filled as they start), for as long as the
    context lasts; stopped in the reverse order."""
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(model_runner(hub))
        await stack.enter_async_context(background_work(hub, parts.repairs))
        await stack.enter_async_context(drivers(hub))
        parts.advertiser = await stack.enter_async_context(lan_advertiser(hub, listening))
        parts.cloud = await stack.enter_async_context(running_loop(open_cloud_link(hub)))
        parts.memory_sync = await stack.enter_async_context(running_loop(open_memory_sync(hub)))
        parts.telegram = await stack.enter_async_context(running_loop(TelegramPoller(hub)))
        # Jobs and alerts: started last, so a job's turn finds every part it may use; stopped
        # first, so no run starts while the others stop.
        parts.scheduler = await stack.enter_async_context(running_loop(open_scheduler(hub)))
        yield parts


@contextlib.asynccontextmanager
async def model_runner(hub: Hub) -> AsyncIterator[None]:
    """The embedded model's runner, made ready as the hub starts when it is the default model
    (else on its first turn); it ends with the hub."""
    warming = asyncio.create_task(warm_up(hub)) if hub.settings.embedded_warm_at_start else None
    try:
        yield
    finally:
        await cancel_all([warming])
        await hub.models.close()


@contextlib.asynccontextmanager
async def background_work(hub: Hub, repairs: Repairs) -> AsyncIterator[None]:
    maintenance = asyncio.create_task(repair_at_start(hub, repairs))
    sweeper = asyncio.create_task(housekeeping(hub))
    try:
        yield
    finally:
        await cancel_all([sweeper])
        if repairs.state == "pending":
            await cancel_all([maintenance])  # still waiting: the next start repairs
        else:
            await maintenance  # a thread cannot be interrupted; it finishes its batch


@contextlib.asynccontextmanager
async def drivers(hub: Hub) -> AsyncIterator[None]:
    await hub.drivers.start()
    try:
        yield
    finally:
        await hub.drivers.stop()


@contextlib.asynccontextmanager
async def lan_advertiser(hub: Hub, listening: Listening | None) -> AsyncIterator[Advertiser | None]:
    """Work out the lanUrl and advertise the hub over mDNS (unless told not to, or unless it
    listens on loopback only, where nothing on the LAN could reach it)."""
    advertiser = start_lan(hub, listening) if listening is not None else None
    try:
        yield advertiser
    finally:
        if advertiser is not None:  # goodbyes first: phones stop dialling a closing hub
            await advertiser.stop()


class Loop(Reporting, Protocol):
    """A part with its own loop: the cloud link, memory sync."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


Looping = TypeVar("Looping", bound=Loop)


@contextlib.asynccontextmanager
async def running_loop(part: Looping | None) -> AsyncIterator[Looping | None]:
    """Run ``part``'s loop (when there is one) for as long as the context lasts."""
    if part is not None:
        await part.start()
    try:
        yield part
    finally:
        if part is not None:
            await part.stop()


def open_scheduler(hub: Hub) -> Scheduler:
    from hub.cloud.notify import DesktopNotifier

    settings = hub.settings
    desktop = (
        DesktopNotifier(about="job results and alerts", setting="scheduler.desktop_notifications")
        if settings.scheduler_desktop_notifications
        else None
    )
    return Scheduler(hub, desktop, tick_s=settings.scheduler_tick_s)


def start_lan(hub: Hub, listening: Listening) -> Advertiser | None:
    settings, lan = hub.settings, hub.lan

    def compute() -> str | None:
        return lan_url(
            settings.lan_url, listening.host, listening.port, tls=lan.fingerprint is not None
        )

    lan.url = compute()
    if lan.url:
        log.info("reachable on the LAN at %s", lan.url)
    else:
        log.info("no LAN address (listening on %s; set lan.url to name one)", listening.host)
    if not settings.lan_advertise:
        log.info("not advertising on the LAN: lan.advertise is false")
        return None
    if is_loopback_host(listening.host):
        log.info("not advertising on the LAN: listening on %s only", listening.host)
        return None
    advertiser = Advertiser(
        name=hub_name(settings.lan_name),
        port=listening.port,
        hub_id=hub_id(settings.home),
        version=hub.version,
        lan=lan,
        compute_url=compute,
    )
    advertiser.start()
    return advertiser


def open_cloud_link(hub: Hub) -> CloudLink | None:
    """The link to the cloud when this hub has joined one (``tiny-hub cloud join``)."""
    from hub.cloud.account import load_token
    from hub.cloud.client import CloudClient
    from hub.cloud.notify import DesktopNotifier
    from hub.cloud.outbox import Outbox

    settings = hub.settings
    if not (settings.cloud_url and settings.cloud_device_id):
        return None
    token = load_token(settings.cloud_token_path)
    if token is None:
        log.warning(
            "cloud.url is set but %s holds no token: run tiny-hub cloud join (or adopt)",
            settings.cloud_token_path,
        )
        return None
    client = CloudClient(settings.cloud_url, settings.cloud_device_id, token)
    notifier = DesktopNotifier() if settings.cloud_desktop_notifications else None
    log.info("dialling in to the cloud at %s as %s", settings.cloud_url, settings.cloud_device_id)
    return CloudLink(hub, client, Outbox(hub.db, hub.devices.clock), notifier=notifier)


def open_memory_sync(hub: Hub) -> MemorySync | None:
    """Sync the owner's memory with the cloud when a user token is saved (tiny-hub cloud
    memory); independent of the device link, which needs no memory and vice versa."""
    from hub.cloud.account import load_token
    from hub.cloud.memory_sync import MemoryCloud

    settings = hub.settings
    token = load_token(settings.cloud_user_token_path) if settings.cloud_url else None
    if token is None:
        return None
    log.info("syncing the owner's memory with %s", settings.cloud_url)
    cloud = MemoryCloud(settings.cloud_url, token)
    return MemorySync(hub, cloud, interval_s=settings.cloud_memory_interval_s)
