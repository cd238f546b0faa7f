"""The hub's OpenAPI document: built from the route table, served to anyone, and fuzzed.

schemathesis reads ``GET /api/openapi.json`` from a real hub on 127.0.0.1 (chat on the fake
Ollama, the rate limiter relaxed by ``access.rate_limit_scale``) and sends each operation a
bounded number of generated requests, valid and invalid, as the owner. harness/openapi_fuzz.py
judges each answer: no 500, no schema-valid request refused for its shape, no schema-violating
request accepted, every status one the document lists, every answer its documented type and
shape (errors: JSON ``{"error": ...}``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings

from fakes.ollama import FakeOllama
from harness import openapi_fuzz
from harness.openapi_fuzz import Tally
from hub.api.app import create_app
from hub.api.server import RunningServer, start_server
from hub.api.spec import declared_operation
from hub.runtime.hub import Hub
from tests.conftest import StartHub, owner_headers, settings_for
from tests.test_route_policy import app_routes, declared_who

T = TypeVar("T")

# A few examples per operation, valid and invalid, with a fixed seed: a bounded run for the
# suite; scripts/bench openapi_fuzz runs many more.
EXAMPLES_PER_OPERATION = int(os.environ.get("TINY_HUB_FUZZ_EXAMPLES", "10"))
# Generous, so the fuzzing exercises the routes rather than the rate limiter (tested elsewhere).
RATE_LIMIT_SCALE = 1e6


# --- the document ------------------------------------------------------------------------------


@pytest.fixture
def app(home: Path) -> Iterator[Any]:
    hub = Hub.open(settings_for(home))
    try:
        yield create_app(hub)
    finally:
        hub.close()


def test_every_route_declares_its_shape(app: Any) -> None:
    undeclared = sorted(
        f"{method} {path}"
        for (method, path), handler in app_routes(app).items()
        if declared_operation(handler) is None
    )
    assert not undeclared, f"routes without @documented: {undeclared}"


async def test_the_document_lists_every_route_with_who_may_call_it(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    async with http.get(f"{server.url}/api/openapi.json") as response:
        assert response.status == 200  # no token: anyone may read it
        document = await response.json()
    assert document["openapi"] == "3.1.0"
    listed = {
        (method.upper(), path): operation["x-tiny-access"]
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    routes = app_routes(server.runner.app)
    assert listed == {route: declared_who(handler) for route, handler in routes.items()}
    learn = document["paths"]["/learnings"]["post"]
    assert learn["requestBody"]["content"]["application/json"]["schema"]["required"] == ["fact"]
    assert {"200", "400", "401", "503"} <= set(learn["responses"])
    assert learn["security"] == [{"bearer": []}]


# --- fuzzing a live hub ------------------------------------------------------------------------


class ThreadedHub:
    """A real hub and the fake Ollama on an event loop of their own, in a thread: schemathesis
    calls synchronously (requests), and the hub must keep serving while it waits."""

    def __init__(self, home: Path) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.ollama = FakeOllama()
        self._run(self.ollama.start())
        self.hub = Hub.open(
            settings_for(home, ollama_host=self.ollama.url, rate_limit_scale=RATE_LIMIT_SCALE)
        )
        self.server: RunningServer = self._run(start_server(self.hub, "127.0.0.1", 0))
        self.token = self.hub.settings.owner_token_path.read_text().strip()

    @property
    def url(self) -> str:
        return self.server.url

    def up(self) -> bool:
        return requests.get(f"{self.url}/api/health", timeout=10).status_code == 200

    def close(self) -> None:
        self._run(self.server.stop())
        self.hub.close()
        self._run(self.ollama.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()


TALLY = Tally()


@pytest.fixture(scope="module")
def live_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedHub]:
    live = ThreadedHub(tmp_path_factory.mktemp("fuzzed") / "home")
    yield live
    live.close()
    print(f"\nschemathesis: {TALLY.summary()}")


@pytest.fixture(scope="module")
def hub_schema(live_hub: ThreadedHub) -> Any:
    schema = openapi_fuzz.hub_schema(live_hub.url)
    TALLY.operations |= openapi_fuzz.operations_of(schema)
    return schema


fuzzed = schemathesis.pytest.from_fixture("hub_schema").exclude(path=openapi_fuzz.NOT_FUZZED)


# Every operation's examples run inside this one test: on a busy machine that takes minutes,
# past the suite's 60 s per test.
@pytest.mark.timeout(900)
@fuzzed.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_the_hub_answers_generated_requests_as_documented(
    case: schemathesis.Case, live_hub: ThreadedHub
) -> None:
    response = case.call(
        base_url=live_hub.url,
        headers={"Authorization": f"Bearer {live_hub.token}"},
        timeout=60,
    )
    problems = openapi_fuzz.judge(case, response, TALLY)
    assert not problems, "\n".join(problems)
    assert live_hub.up(), "the hub must stay up"


# --- the known mismatches, one by one ------------------------------------------------------------


async def test_a_query_parameter_the_document_does_not_list_is_refused(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    auth = owner_headers(server)
    async with http.get(f"{server.url}/learnings?limt=5", headers=auth) as response:
        assert response.status == 400
        assert "'limt'" in (await response.json())["error"]
    async with http.get(f"{server.url}/learnings?limit=5", headers=auth) as response:
        assert response.status == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/api/model", {"provider": "ollama", "colour": "red"}),
        ("PATCH", "/api/people/owner", {"name": "x" * 65}),
        ("PATCH", "/api/people/owner", {"name": "bad\u0001name"}),
        ("POST", "/api/jobs", {"prompt": "tea?", "runInMinutes": 5, "title": "t" * 121}),
    ],
)
async def test_bodies_the_document_refuses_are_refused(
    start_hub: StartHub, http: aiohttp.ClientSession, method: str, path: str, body: Any
) -> None:
    server = await start_hub()
    async with http.request(
        method, f"{server.url}{path}", json=body, headers=owner_headers(server)
    ) as response:
        assert response.status == 400, await response.text()


async def test_a_name_taken_is_a_conflict_and_an_expired_code_is_documented(
    start_hub: StartHub, http: aiohttp.ClientSession
) -> None:
    server = await start_hub()
    auth = owner_headers(server)
    for _ in range(2):
        async with http.post(f"{server.url}/api/tinys", json={"name": "twin"}, headers=auth) as r:
            status = r.status
    assert status == 409
    async with http.get(f"{server.url}/api/openapi.json") as response:
        document = await response.json()
    assert "410" in document["paths"]["/api/pair"]["post"]["responses"]
    mcp_400 = document["paths"]["/mcp"]["post"]["responses"]["400"]
    assert mcp_400["content"]["application/json"]["schema"]["$ref"].endswith("/McpError")
