"""One person cannot take what everyone shares: media bytes a minute, open streams, messages a
minute are each counted per person, and the one over the limit gets a 429 with Retry-After
while everyone else carries on. The limits are settings (``[quotas]``); 0 turns one off.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator

import aiohttp

from harness.waits import until
from hub.api.limits import GUARD
from hub.api.quotas import QUOTAS
from hub.api.server import RunningServer
from hub.config import Settings
from tests.conftest import StartHub, owner_headers
from tests.test_forge import member
from tests.test_hardening import ROOMY


async def started(start_hub: StartHub, **quotas: int) -> RunningServer:
    server = await start_hub(**quotas)
    server.runner.app[GUARD].limits = ROOMY  # the request-rate limiter is not what is tested
    return server


def test_every_quota_is_on_by_default() -> None:
    defaults = Settings.__dataclass_fields__
    for name in ("quota_media_mb_per_minute", "quota_open_streams", "quota_messages_per_minute"):
        assert defaults[name].default > 0, name


async def enroll(http: aiohttp.ClientSession, server: RunningServer, name: str) -> dict[str, str]:
    async with http.post(
        f"{server.url}/api/devices",
        json={"name": name, "kind": "daemon"},
        headers=owner_headers(server),
    ) as response:
        made = await response.json()
    return {"deviceId": made["device_id"], "token": made["device_token"]}


async def test_media_bytes_are_capped_per_person(start_hub: StartHub) -> None:
    server = await started(start_hub, quota_media_mb_per_minute=1)
    photo = base64.b64encode(bytes(400 * 1024)).decode()  # 546 KB of base64
    async with aiohttp.ClientSession() as http:
        phone, glasses = await enroll(http, server, "phone"), await enroll(http, server, "glasses")
        statuses, retry = [], None
        for device in (phone, glasses, phone):
            async with http.post(
                f"{server.url}/api/media",
                json={**device, "data": photo, "contentType": "image/jpeg"},
            ) as response:
                statuses.append(response.status)
                if response.status == 429:
                    retry = response.headers["Retry-After"]
                    assert "quota" in (await response.json())["error"]
    # the owner's two devices share the owner's megabyte: the second upload is over it
    assert statuses == [200, 429, 429]
    assert retry is not None and int(retry) >= 1


@contextlib.asynccontextmanager
async def event_stream(
    http: aiohttp.ClientSession, server: RunningServer, headers: dict[str, str]
) -> AsyncIterator[aiohttp.ClientResponse]:
    async with http.get(f"{server.url}/api/events", headers=headers) as response:
        yield response


async def test_open_streams_are_capped_per_person(start_hub: StartHub) -> None:
    server = await started(start_hub, quota_open_streams=2)
    _, bea = member(server, "bea")
    async with aiohttp.ClientSession() as http, contextlib.AsyncExitStack() as held:
        first = await held.enter_async_context(event_stream(http, server, bea))
        second = await held.enter_async_context(event_stream(http, server, bea))
        assert (first.status, second.status) == (200, 200)
        async with event_stream(http, server, bea) as third:
            assert third.status == 429
            assert int(third.headers["Retry-After"]) >= 1
            assert "open streams" in (await third.json())["error"]
        async with event_stream(http, server, owner_headers(server)) as owners:
            assert owners.status == 200  # someone else's streams are their own
        second.close()
        bea_id = server.hub.identity.by_login("bea").id
        quotas = server.runner.app[QUOTAS]
        await until(lambda: quotas.held(f"user:{bea_id}") < 2, what="the closed stream's slot")
        async with event_stream(http, server, bea) as again:
            assert again.status == 200


async def test_messages_a_minute_are_capped_per_person(start_hub: StartHub) -> None:
    server = await started(start_hub, quota_messages_per_minute=3)
    member(server, "cy")
    _, bea = member(server, "bea")
    statuses = []
    async with aiohttp.ClientSession() as http:
        for i in range(5):
            async with http.post(
                f"{server.url}/api/messages", json={"to": "@cy", "text": f"hi {i}"}, headers=bea
            ) as response:
                statuses.append(response.status)
                retry = response.headers.get("Retry-After")
        async with http.post(
            f"{server.url}/api/messages",
            json={"to": "@cy", "text": "from the owner"},
            headers=owner_headers(server),
        ) as owners:
            assert owners.status == 201
    assert statuses == [201, 201, 201, 429, 429]
    assert retry is not None and int(retry) >= 1


async def test_zero_turns_a_quota_off(start_hub: StartHub) -> None:
    server = await started(start_hub, quota_open_streams=0, quota_messages_per_minute=0)
    member(server, "cy")
    _, bea = member(server, "bea")
    async with aiohttp.ClientSession() as http, contextlib.AsyncExitStack() as held:
        for i in range(40):
            async with http.post(
                f"{server.url}/api/messages", json={"to": "@cy", "text": f"hi {i}"}, headers=bea
            ) as response:
                assert response.status == 201
        for _ in range(20):
            stream = await held.enter_async_context(event_stream(http, server, bea))
            assert stream.status == 200
