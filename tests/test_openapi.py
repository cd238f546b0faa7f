"""The hub's OpenAPI document: built from the route table, served to anyone, and fuzzed.

schemathesis reads ``GET /api/openapi.json`` from a real hub on 127.0.0.1 (chat on the fake
Ollama) and sends each operation a bounded number of generated requests, valid and invalid, as
the owner: no answer may be a 5xx, every status must be one the document lists, and every answer
must match its documented content type and schema (errors: JSON ``{"error": ...}``), and a
request the document calls valid is never refused for its shape (400, 413, 415, 422).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
import requests
import schemathesis

# Imported here, before the hub's threads start: schemathesis imports this lazily, and CPython
# 3.11 before 3.11.8 can fail compiling a module while another thread compiles ("AST constructor
# recursion depth mismatch").
import schemathesis.specs.openapi.schemas
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from fakes.ollama import FakeOllama
from hub.api.app import create_app
from hub.api.limits import GUARD, Limits
from hub.api.server import RunningServer, start_server
from hub.api.spec import declared_operation
from hub.runtime.hub import Hub
from tests.conftest import StartHub, settings_for
from tests.test_route_policy import app_routes, declared_who

T = TypeVar("T")

EXAMPLES_PER_OPERATION = 10
# A stream that stays open until the client leaves: a request to it never ends on its own, so
# generated requests cannot wait for an answer; tests/test_devices.py covers it.
NOT_FUZZED = "/api/events"
# Generous, so the fuzzing exercises the routes rather than the rate limiter (tested elsewhere).
NO_RATE_LIMIT = Limits(
    address_rate_per_s=1e6, address_burst=10**6, token_rate_per_s=1e6, token_burst=10**6
)
# The hub's own 5xx (502/503/504) are documented answers: a device or model that failed, a
# camera that is not there, a busy database. A 500 is a bug.
DOCUMENTED_SERVER_ANSWERS = (502, 503, 504)
# The one known exclusion: a request line longer than aiohttp's HTTP parser reads (8190 bytes)
# is refused by the parser itself, before any of the hub's code runs, with a plain-text 400.
REQUEST_LINE_LIMIT = 8190
# A request the document calls valid (schemathesis's positive mode) must not be refused for
# its shape: the document states the handlers' real rules. 404, 409, 402 and the like are about
# what exists, not about the request.
SHAPE_REJECTIONS = (400, 413, 415, 422)
# The rules JSON Schema and OpenAPI's parameters cannot state, each with the handler's words:
# which item of an array is the last, and "one of these two query parameters".
UNSAYABLE: dict[tuple[str, str], tuple[str, ...]] = {
    # And of the tool calls a history carries: each answered right after it, the results
    # not last, the input's and results' JSON within bounds.
    ("POST", "/api/chat"): (
        "the last message must have role user",
        "the last message must be the person's words",
        "needs its toolResult in the user message right after it",
        "matches no earlier toolUse block",
        "answers no call of the assistant message right before it",
        "is nested deeper than",
        "characters as JSON",
        "is longer than 20000 characters",
    ),
    ("DELETE", "/learnings"): ("give ?id=<fact> to close one fact, or ?scope=all",),
    # A schedule's ranges (N minutes or hours, a real time of day), and every or runInMinutes.
    ("POST", "/api/jobs"): ("give either every", "must be 1 to", "needs a time from"),
    ("GET", "/api/jobs/preview"): ("give either every", "must be 1 to", "needs a time from"),
    # What only the kept bot (its token, its tiny) or Telegram itself can say.
    ("PUT", "/api/telegram"): ("give the bot token", "name the tiny", "Telegram refuses"),
    # The code's size in bytes, its JSON schema's size, and what the sandbox finds running it.
    ("POST", "/api/tools"): ("a forged tool is at most", "input_schema is over", "not saved:"),
    # Where the file is and whether its owner is trusted are the fetch's to find out.
    ("POST", "/api/tools/install"): (
        "install_tool takes",
        "has a query or a fragment",
        "is not https",
        "has an encoded /",
        "is not pinned",
        "is neither in the hub's tool allowlist",
        "cannot fetch",
    ),
    ("PATCH", "/api/tools/{name}"): ("is protected and cannot be turned off",),
    # OpenAI's messages: which comes last, each call answered by the message right after it,
    # and a user message's parts together holding something.
    ("POST", "/v1/chat/completions"): (
        "the last message must have role user or tool",
        "needs its tool message right after it",
        "has no text, image or audio",
        "answers no call of the assistant message before it",
        "must name a call of the assistant message before it",
    ),
}
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


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
        self.hub = Hub.open(settings_for(home, ollama_host=self.ollama.url))
        self.server: RunningServer = self._run(start_server(self.hub, "127.0.0.1", 0))
        self.server.runner.app[GUARD].limits = NO_RATE_LIMIT
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


def beyond_the_request_line_limit(response: schemathesis.Response) -> bool:
    request = response.request
    line = f"{request.method} {request.path_url} HTTP/1.1"
    return len(line.encode()) > REQUEST_LINE_LIMIT


SENT: Counter[str] = Counter()  # requests per operation, for the summary line
ANSWERED: Counter[int] = Counter()  # requests per status


@pytest.fixture(scope="module")
def live_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedHub]:
    live = ThreadedHub(tmp_path_factory.mktemp("fuzzed") / "home")
    yield live
    live.close()
    print(
        f"\nschemathesis: {len(SENT)} operations, {sum(SENT.values())} requests,"
        f" statuses {dict(sorted(ANSWERED.items()))}"
    )


@pytest.fixture(scope="module")
def hub_schema(live_hub: ThreadedHub) -> Any:
    schema = schemathesis.openapi.from_url(f"{live_hub.url}/api/openapi.json")
    schema.config.generation.update(modes=list(schemathesis.GenerationMode))
    return schema


fuzzed = schemathesis.pytest.from_fixture("hub_schema").exclude(path=NOT_FUZZED)


@fuzzed.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_the_hub_answers_generated_requests_as_documented(
    case: schemathesis.Case, live_hub: ThreadedHub
) -> None:
    SENT[case.operation.label] += 1
    response = case.call(
        base_url=live_hub.url,
        headers={"Authorization": f"Bearer {live_hub.token}"},
        timeout=60,
    )
    ANSWERED[response.status_code] += 1
    if beyond_the_request_line_limit(response):
        assert response.status_code == 400, response.text[:200]
        return
    assert response.status_code < 500 or response.status_code in DOCUMENTED_SERVER_ANSWERS, (
        f"{case.method} {case.path} answered {response.status_code}: {response.text[:500]}"
    )
    unsayable = UNSAYABLE.get((case.method, case.path), ())
    if (
        case.meta is not None
        and case.meta.generation.mode.is_positive
        and not any(rule in response.text for rule in unsayable)
    ):
        assert response.status_code not in SHAPE_REJECTIONS, (
            f"a schema-valid {case.method} {case.path} was refused: {response.status_code} "
            f"{response.text[:300]} (body {str(case.body)[:300]}, query {case.query})"
        )
    case.validate_response(response, checks=CHECKS)
    assert live_hub.up(), "the hub must stay up"
