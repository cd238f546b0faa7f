"""The long-lived parts of a running hub, started and stopped by the application's
``cleanup_ctx`` in one order: start-up repairs and the housekeeping, the drivers, the LAN
advertiser, the cloud link, memory sync, the Telegram bots, the scheduler — and they stop in the
reverse order (no job starts while the rest stop, the bots and the cloud next, goodbyes on the
LAN before the drivers let go of their ports). The model runner, made ready at start when the
embedded model answers by default, is the last to stop.

Each part that may be absent (no cloud joined, no user token, a loopback-only hub) is held in
:class:`Parts` under the typed key :data:`PARTS`, so handlers read what runs, never a field
patched onto :class:`~hub.runtime.Hub` after it was opened. If a part fails to start, the
parts before it are stopped again (aiohttp runs the cleanup of every context that started).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from hub.agent.warmup import warm_up
from hub.api.keys import HUB
from hub.cloud.link import CloudLink
from hub.cloud.memory_sync import MemorySync
from hub.confirmations.actions import pending_of
from hub.lan.address import is_loopback_host, lan_url
from hub.lan.advertise import Advertiser, hub_name
from hub.lan.hub_id import hub_id
from hub.runtime import Hub
from hub.scheduler.runner import Scheduler
from hub.tasks import cancel_all
from hub.telegram.poller import TelegramPoller

log = logging.getLogger(__name__)

SWEEP_EVERY_S = 60.0


@dataclass(frozen=True)
class Listening:
    """Where the app is served, known before it starts (the socket is bound first)."""

    host: str
    port: int


@dataclass
class Repairs:
    """The start-up repairs (vectors a crash left unwritten, the universe's drift), for
    /api/health: a client can say why the first minutes are slower."""

    state: str = "pending"
    doing: str = ""
    fixed: int = 0

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "doing": self.doing, "fixed": self.fixed}


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


PARTS = web.AppKey("parts", Parts)
LISTENING = web.AppKey("listening", Listening)


def add_parts(app: web.Application) -> None:
    """Register every part's context, in start order."""
    app[PARTS] = Parts()
    app.cleanup_ctx.extend(
        [
            model_runner,
            background_work,
            drivers,
            lan_advertiser,
            cloud_link,
            memory_sync,
            telegram_bots,
            scheduler,
        ]
    )


async def model_runner(app: web.Application) -> AsyncIterator[None]:
    """The embedded model's runner, made ready as the hub starts when it is the default model
    (else on its first turn); it ends with the app."""
    hub = app[HUB]
    warming = asyncio.create_task(warm_up(hub)) if hub.settings.embedded_warm_at_start else None
    yield
    await cancel_all([warming])
    await hub.models.close()


async def background_work(app: web.Application) -> AsyncIterator[None]:
    hub, repairs = app[HUB], app[PARTS].repairs
    maintenance = asyncio.create_task(repair_at_start(hub, repairs))
    sweeper = asyncio.create_task(housekeeping(hub))
    yield
    await cancel_all([sweeper])
    if repairs.state == "pending":
        await cancel_all([maintenance])  # still waiting: the next start repairs
    else:
        await maintenance  # a thread cannot be interrupted; it finishes its batch


async def drivers(app: web.Application) -> AsyncIterator[None]:
    hub = app[HUB]
    await hub.drivers.start()
    yield
    await hub.drivers.stop()


async def lan_advertiser(app: web.Application) -> AsyncIterator[None]:
    """Work out the lanUrl and advertise the hub over mDNS (unless told not to, or unless it
    listens on loopback only, where nothing on the LAN could reach it)."""
    listening = app.get(LISTENING)
    advertiser = start_lan(app[HUB], listening) if listening is not None else None
    app[PARTS].advertiser = advertiser
    yield
    if advertiser is not None:  # goodbyes first: phones stop dialling a closing hub
        await advertiser.stop()


class Loop(Reporting, Protocol):
    """A part with its own loop: the cloud link, memory sync."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@contextlib.asynccontextmanager
async def running(part: Loop | None) -> AsyncIterator[None]:
    """Run ``part``'s loop (when there is one) for as long as the context lasts."""
    if part is not None:
        await part.start()
    try:
        yield
    finally:
        if part is not None:
            await part.stop()


async def cloud_link(app: web.Application) -> AsyncIterator[None]:
    link = app[PARTS].cloud = open_cloud_link(app[HUB])
    async with running(link):
        yield


async def memory_sync(app: web.Application) -> AsyncIterator[None]:
    sync = app[PARTS].memory_sync = open_memory_sync(app[HUB])
    async with running(sync):
        yield


async def telegram_bots(app: web.Application) -> AsyncIterator[None]:
    """The people's Telegram bots: each enabled one long-polled, its allowed chats answered."""
    poller = app[PARTS].telegram = TelegramPoller(app[HUB])
    async with running(poller):
        yield


async def scheduler(app: web.Application) -> AsyncIterator[None]:
    """Jobs and alerts: started last, so a job's turn finds every part it may use; stopped
    first, so no run starts while the others stop."""
    part = app[PARTS].scheduler = open_scheduler(app[HUB])
    async with running(part):
        yield


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


async def housekeeping(hub: Hub) -> None:
    """Every minute: dead-letter envelopes nobody pulled within an hour and drop replies after
    a day, trim the audit log, delete for good what was forgotten past its grace period, and
    drop old answered proposals."""
    while True:
        try:
            dead, forgotten = hub.devices.mailbox.sweep()
            hub.audit.trim()
            if dead or forgotten:
                log.info("relay sweep: %d dead-lettered, %d old replies dropped", dead, forgotten)
        except Exception:
            log.warning("relay sweep failed", exc_info=True)
        await delete_forgotten(hub)
        await asyncio.sleep(SWEEP_EVERY_S)


async def delete_forgotten(hub: Hub) -> None:
    """Forgotten facts past the grace period go for good; old proposals are dropped."""
    try:
        deleted = await asyncio.to_thread(hub.memory.delete_forgotten)
        pending_of(hub).sweep()
        if deleted:
            log.info("deleted %d forgotten fact(s) for good: their grace period ended", deleted)
    except Exception:
        log.warning("deleting forgotten facts failed (the next round tries again)", exc_info=True)


async def repair_at_start(hub: Hub, repairs: Repairs) -> None:
    """Public tinys missing from the universe get their vector, and private or deleted ones
    leave it; facts whose vector was never written (a crash between the two writes) get one.

    They wait ``repairs_after_s`` first: opening Chroma and loading the embedder take a second
    or more on a small machine, which the first requests of a starting hub (or a hub started
    for one command) should not queue behind. A universe search meanwhile catches up itself.
    """
    await asyncio.sleep(hub.settings.repairs_after_s)
    repairs.state = "running"
    await catch_up(
        repairs,
        hub.universe.index_missing,
        "bring the universe in step with the tinys",
        "universe: %d tiny(s) indexed or removed",
    )
    await catch_up(
        repairs,
        hub.memory.index_missing,
        "index facts missing from Chroma",
        "indexed %d fact(s) that had no vector",
    )
    repairs.state, repairs.doing = "done", ""


async def catch_up(repairs: Repairs, work: Callable[[], int], what: str, done: str) -> None:
    """One start-up repair in a thread; a failure is logged (the next start tries again)."""
    repairs.doing = what
    try:
        count = await asyncio.to_thread(work)
    except Exception:
        log.warning("could not %s", what, exc_info=True)
        return
    repairs.fixed += count
    if count:
        log.info(done, count)
