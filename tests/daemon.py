"""A dial-in device played by a test: enrollment through the API and the contract's daemon loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from hub.api.server import RunningServer
from tests.conftest import owner_headers


async def send(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    async with http.request(method, url, json=body, headers=headers or {}) as response:
        text = await response.text()
        return response.status, (json.loads(text) if text.startswith(("{", "[")) else text)


async def enroll(
    http: aiohttp.ClientSession, server: RunningServer, name: str = "laptop", **extra: Any
) -> dict[str, Any]:
    body = {"name": name, "kind": "daemon", "capabilities": ["shell", "screenshot"], **extra}
    status, answer = await send(
        http, "POST", f"{server.url}/api/devices", body, owner_headers(server)
    )
    assert status == 200, answer
    return dict(answer)


class PythonDaemon:
    """The contract's daemon loop, in Python: heartbeat, pull, handle, reply."""

    def __init__(
        self,
        url: str,
        device_id: str,
        token: str,
        handle: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
        capabilities: tuple[str, ...] = ("shell",),
        wait: float | None = None,
    ) -> None:
        self.url, self.device_id, self.token, self.handle = url, device_id, token, handle
        self.capabilities = list(capabilities)
        self.wait = wait  # seconds to hold each pull open (long-poll); None: plain polling
        self.pulls = 0  # pulls answered, so a test can count the round trips a reply took
        self.task: asyncio.Task[None] | None = None

    async def call(self, http: aiohttp.ClientSession, method: str, path: str, **body: Any) -> Any:
        payload = {"deviceId": self.device_id, "token": self.token, **body}
        async with http.request(method, self.url + path, json=payload) as response:
            return await response.json()

    async def loop(self) -> None:
        async with aiohttp.ClientSession() as http:
            await self.call(http, "POST", "/api/devices/heartbeat", capabilities=self.capabilities)
            while True:
                held = {} if self.wait is None else {"wait": self.wait}
                pulled = await self.call(http, "PUT", "/api/devices/relay", max=10, **held)
                self.pulls += 1
                for message in pulled["messages"]:
                    reply = await self.handle(json.loads(message["payload"]))
                    await self.call(
                        http,
                        "PATCH",
                        "/api/devices/relay",
                        inReplyTo=message["id"],
                        payload=json.dumps(reply),
                    )
                idle = pulled["messages"] or self.wait is not None
                await asyncio.sleep(0 if idle else 0.05)

    def __enter__(self) -> PythonDaemon:
        self.task = asyncio.create_task(self.loop())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()
