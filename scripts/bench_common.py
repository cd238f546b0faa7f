"""What the benchmark modules share: a figure (median, its runs, how it was measured), ports,
a throwaway hub, and percentiles. Nothing here times anything."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    how: str
    runs: list[float]

    @property
    def spread(self) -> str:
        return f"{min(self.runs):.3g}-{max(self.runs):.3g}"


class BenchmarkFailed(RuntimeError):
    """An operation a benchmark timed did not succeed: its figure would be a lie."""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hub_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINY_HUB_", "OLLAMA_"))}
    env.update(TINY_HUB_HOME=str(home), OLLAMA_HOST=f"http://127.0.0.1:{closed_port()}")
    return env


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@contextlib.asynccontextmanager
async def running_hub(**overrides: Any) -> AsyncIterator[Any]:
    """An in-process hub on a free loopback port, in a throwaway data dir."""
    from hub.config import load_settings
    from hub.runtime import Hub
    from hub.server import start_server

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            home=Path(tmp) / "home", environ=hub_env(Path(tmp) / "home"), overrides=overrides
        )
        hub = Hub.open(settings)
        server = await start_server(hub, "127.0.0.1", 0)
        try:
            yield server
        finally:
            await server.stop()
            hub.close()


def owner_headers(server: Any) -> dict[str, str]:
    token = server.hub.settings.owner_token_path.read_text().strip()
    return {"Authorization": f"Bearer {token}"}
