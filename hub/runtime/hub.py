"""The running hub: its settings, database, stores, drivers and model router, opened once at
start and held by every part that runs (``hub/process/``) and every request (``hub/api/``)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from drivers.base import load_drivers
from hub import __version__
from hub.agent.models import ModelRouter
from hub.community.allowance import ChatAllowance
from hub.community.service import Community
from hub.config import Settings
from hub.core.netguard import Allowance
from hub.devices.endpoint import EndpointPolicy
from hub.devices.service import Devices
from hub.devices.transcripts import TranscriptStore
from hub.drivers.audit import AuditLog
from hub.drivers.catalog import DriverCatalog
from hub.drivers.host import HubDeviceHost, as_device_host
from hub.drivers.manager import DriverManager, open_manager
from hub.forge.sandbox import Limits, Sandbox
from hub.lan.address import LanInfo
from hub.memory.graph import DAY_S, MemoryStore
from hub.memory.vectors import VectorIndex
from hub.people.identity import Identity, User
from hub.runtime.data_dir import restrict_data_dir
from hub.store.db import Database
from hub.store.migrations import open_database
from hub.tinys.records import TinyStore
from hub.tinys.universe import COLLECTION, Universe
from media.speech import SpeechEngine


@dataclass
class Hub:
    settings: Settings
    db: Database
    identity: Identity
    owner: User
    models: ModelRouter
    tinys: TinyStore
    memory: MemoryStore
    devices: Devices
    audit: AuditLog
    drivers: DriverManager
    speech: SpeechEngine
    transcripts: TranscriptStore
    universe: Universe
    community: Community
    version: str = __version__
    started_at: float = field(default_factory=time.monotonic)
    lan: LanInfo = field(default_factory=LanInfo)  # set by start_server
    sandbox: Sandbox = field(default_factory=Sandbox)  # where forged tools run

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        hardware: Mapping[str, Any] | None = None,
    ) -> Hub:
        """Create the data dir, migrate the database and make sure the owner exists.

        ``hardware`` overrides parts of the driver manager (``drivers``: per-driver config
        merged over the settings', such as an emulated radio or camera; anything else: manager
        options): the seams through which emulated hardware enters, the same ones the real
        hardware uses.
        """
        # What the hub makes while it runs (Chroma's segments, SQLite's -wal and -shm, media)
        # is its own, whatever umask it was started with: restrict_data_dir repairs only what
        # exists at start.
        os.umask(os.umask(0o077) | 0o077)
        # Made private before anything writes in them (chroma only when it is embedded).
        embedded_chroma = () if settings.memory_chroma_url else (settings.chroma_path,)
        for private in (settings.home, settings.media_path, *embedded_chroma):
            private.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = open_database(settings.db_path)
        identity = Identity(db)
        owner = identity.ensure_owner(settings.owner_token_path)
        tinys = TinyStore(db, Allowance.of_hosts(settings.http_allow_hosts))
        tinys.ensure_default(owner)
        vectors = VectorIndex(settings.chroma_path, settings.memory_chroma_url)
        memory = MemoryStore(
            db,
            vectors,
            settings.memory_forget_grace_days * DAY_S,
            capacity=settings.memory_max_facts,
        )
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
        host = as_device_host(HubDeviceHost(audit, devices.events, owner.id))
        catalog = DriverCatalog(load_drivers())
        drivers = open_manager(settings, catalog, host, **dict(hardware or {}))
        clock = devices.clock  # one clock for the hub: tests move it for every part at once
        allowance = ChatAllowance(
            db, settings.anonymous_daily_chats, settings.member_daily_chats, clock
        )
        community = Community(db, identity, tinys, devices, allowance, clock)
        restrict_data_dir(settings.home)
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
            speech_engine(settings),
            transcripts,
            universe,
            community,
            sandbox=Sandbox(tool_limits(settings)),
        )

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self.started_at

    def capabilities(self) -> list[str]:
        """What this hub can do now with its drivers' devices, the machine's own included."""
        return self.drivers.capabilities()

    def close(self) -> None:
        self.sandbox.close()
        self.universe.close()
        self.memory.close()
        self.db.conn.close()


def speech_engine(settings: Settings) -> SpeechEngine:
    """Speech-to-text as the settings choose it (loaded at its first recording)."""
    return SpeechEngine(
        settings.speech_model,
        cache_dir=settings.home / "models",
        threads=settings.speech_threads,
        language=settings.speech_language or None,
    )


def tool_limits(settings: Settings) -> Limits:
    """What one call of a forged tool may use, from the settings."""
    return Limits(cpu_s=settings.tool_cpu_limit_s, heap_bytes=settings.tool_memory_mb << 20)


def _universe_collection(settings: Settings) -> str:
    """The universe's Chroma collection: on a Chroma server a household shares, one per hub
    (another hub's tinys are not this hub's to offer), named by the hub's stable id."""

    if not settings.memory_chroma_url:
        return COLLECTION
    from hub.lan.hub_id import hub_id

    return f"{COLLECTION}_{hub_id(settings.home)}"
