"""The running hub: its settings, database, identities and model router, opened once at start."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import sqlite_utils

from hub import __version__
from hub.agent.models import ModelRouter
from hub.config import Settings
from hub.devices.endpoint import EndpointPolicy
from hub.devices.service import Devices
from hub.drivers import DriverManager
from hub.hardware import AuditLog, build_manager
from hub.identity import Identity, User
from hub.memory.graph import MemoryStore
from hub.memory.vectors import VectorIndex
from hub.store.migrations import open_database
from hub.tinys.records import TinyStore


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
    version: str = __version__
    started_at: float = field(default_factory=time.monotonic)

    @classmethod
    def open(cls, settings: Settings) -> Hub:
        """Create the data dir, migrate the database and make sure the owner exists."""
        settings.home.mkdir(parents=True, exist_ok=True)
        db = open_database(settings.db_path)
        identity = Identity(db)
        owner = identity.ensure_owner(settings.owner_token_path)
        tinys = TinyStore(db)
        tinys.ensure_default(owner)
        vectors = VectorIndex(settings.chroma_path, settings.memory_chroma_url)
        memory = MemoryStore(settings.db_path, vectors)
        devices = Devices(
            db,
            settings.media_path,
            EndpointPolicy(allow_private=settings.devices_allow_private),
            hub_hosts=(settings.host,),
        )
        audit = AuditLog(db)
        drivers = build_manager(settings, audit)
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
        )

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self.started_at

    def close(self) -> None:
        self.memory.close()
        self.db.conn.close()
