"""The running hub: its settings, database, identities and model router, opened once at start."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlite_utils

from hub import __version__
from hub.agent.models import ModelRouter
from hub.config import Settings
from hub.devices.endpoint import EndpointPolicy
from hub.devices.service import Devices
from hub.devices.transcripts import TranscriptStore
from hub.drivers import DriverManager
from hub.hardware import AuditLog, build_manager
from hub.identity import Identity, User
from hub.lan.address import LanInfo
from hub.memory.graph import MemoryStore
from hub.memory.vectors import VectorIndex
from hub.senses import Senses

if TYPE_CHECKING:
    from hub.cloud.link import CloudLink
    from hub.cloud.memory_sync import MemorySync
from hub.store.migrations import open_database
from hub.tinys.records import TinyStore
from hub.tinys.universe import COLLECTION, Universe


@dataclass
class Hub:
    settings: Settings
    db: sqlite_utils.Database
    identity: Identity
    owner: User
    models: ModelRouter
    tinys: TinyStore
    memory: MemoryStore
    devices: Devices
    audit: AuditLog
    drivers: DriverManager
    senses: Senses
    transcripts: TranscriptStore
    universe: Universe
    version: str = __version__
    started_at: float = field(default_factory=time.monotonic)
    lan: LanInfo = field(default_factory=LanInfo)  # set by start_server
    cloud: CloudLink | None = None  # set by start_server when the hub has joined a cloud
    memory_sync: MemorySync | None = None  # set by start_server when a user token is saved

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        hardware: Mapping[str, Any] | None = None,
        senses: Senses | None = None,
    ) -> Hub:
        """Create the data dir, migrate the database and make sure the owner exists.

        ``hardware`` overrides parts of the driver manager (``drivers``: per-driver config
        merged over the settings'; anything else: manager options) and ``senses`` the machine's
        camera/microphone: the seams through which emulated hardware enters, the same ones the
        real hardware uses.
        """
        settings.home.mkdir(parents=True, exist_ok=True)
        db = open_database(settings.db_path)
        identity = Identity(db)
        owner = identity.ensure_owner(settings.owner_token_path)
        tinys = TinyStore(db)
        tinys.ensure_default(owner)
        vectors = VectorIndex(settings.chroma_path, settings.memory_chroma_url)
        memory = MemoryStore(db, vectors)
        universe = Universe(tinys, db, vectors, _universe_collection(settings))
        tinys.on_change.append(universe.changed)
        devices = Devices(
            db,
            settings.media_path,
            EndpointPolicy(allow_private=settings.devices_allow_private),
            hub_hosts=(settings.host,),
        )
        audit = AuditLog(db)
        transcripts = TranscriptStore(db, devices.events, devices.clock)

        def on_event(kind: str, detail: dict[str, Any], device_id: str | None) -> None:
            devices.events.publish(owner.id, kind, device_id, detail)

        drivers = build_manager(settings, audit, on_event, **dict(hardware or {}))
        return cls(
            settings,
            db,
            identity,
            owner,
            ModelRouter(settings),
            tinys,
            memory,
            devices,
            audit,
            drivers,
            senses or Senses.from_settings(settings),
            transcripts,
            universe,
        )

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self.started_at

    def capabilities(self) -> list[str]:
        """What this hub can do now with its own hardware and its drivers' devices."""
        return sorted({*self.senses.capabilities(), *self.drivers.capabilities()})

    def close(self) -> None:
        self.senses.close()
        self.universe.close()
        self.memory.close()
        self.db.conn.close()


def _universe_collection(settings: Settings) -> str:
    """The universe's Chroma collection: on a Chroma server a household shares, one per hub
    (another hub's tinys are not this hub's to offer), named by the hub's stable id."""

    if not settings.memory_chroma_url:
        return COLLECTION
    from hub.lan.advertise import hub_id

    return f"{COLLECTION}_{hub_id(settings.home)}"
