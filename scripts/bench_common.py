"""What the benchmark modules share: a figure (median, its runs, how it was measured), ports,
a throwaway hub, and percentiles. Nothing here times anything."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import sys
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


BENCH_DAILY_CHATS = 10_000_000


def hub_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINY_HUB_", "OLLAMA_"))}
    env.update(TINY_HUB_HOME=str(home), OLLAMA_HOST=f"http://127.0.0.1:{closed_port()}")
    # The figures are SmolLM2's unless a benchmark names the model: with the agent-model extra
    # installed, embedded.model = auto would measure the 1.5B instead.
    env.update(TINY_HUB_EMBEDDED_MODEL="smollm2")
    # Benchmarks send thousands of anonymous turns from this machine: the daily allowance that
    # would answer them 429 after a few dozen is measured on its own (the community benchmark).
    env.update(TINY_HUB_ANONYMOUS_DAILY_CHATS=str(BENCH_DAILY_CHATS))
    env.update(TINY_HUB_MEMBER_DAILY_CHATS=str(BENCH_DAILY_CHATS))
    return env


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@contextlib.asynccontextmanager
async def running_hub(**overrides: Any) -> AsyncIterator[Any]:
    """An in-process hub on a free loopback port, in a throwaway data dir."""
    from hub.api.server import start_server
    from hub.config import load_settings
    from hub.runtime.hub import Hub

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


SCRIPT = Path(sys.executable).with_name("tiny-hub")


@dataclass(frozen=True)
class ServedHub:
    url: str
    token: str
    pid: int

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@contextlib.asynccontextmanager
async def served_hub(
    ollama_url: str | None = None, settings: dict[str, str] | None = None
) -> AsyncIterator[ServedHub]:
    """A real ``tiny-hub serve`` process on a free loopback port, in a throwaway data dir, so the
    load a benchmark makes does not share its CPU time (and its memory can be read apart).
    ``settings``: more ``TINY_HUB_*`` variables for it."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = hub_env(home)
        if ollama_url:
            env["OLLAMA_HOST"] = ollama_url
        env.update(settings or {})
        process = await asyncio.create_subprocess_exec(
            *(str(SCRIPT), "serve", "--host", "127.0.0.1", "--port", "0"),
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert process.stdout is not None
        line = (await process.stdout.readline()).decode()
        match = re.search(r":(\d+) \(model", line)
        if not match:
            process.terminate()
            await process.wait()
            raise BenchmarkFailed(f"the hub did not start: {line!r}")
        token = (home / "owner.token").read_text().strip()
        try:
            yield ServedHub(f"http://127.0.0.1:{match.group(1)}", token, process.pid)
        finally:
            process.terminate()
            await process.wait()


def owner_headers(server: Any) -> dict[str, str]:
    token = server.hub.settings.owner_token_path.read_text().strip()
    return {"Authorization": f"Bearer {token}"}
