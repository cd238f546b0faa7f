"""A tiny's OpenAPI schema (its worker) as tools, against a real OpenAPI service on 127.0.0.1.

The service serves its own schema and the operations the schema names; hostile schemas are
served by the same service, so every fetch goes through the network guard as it would for a
stranger's schema. No traffic leaves loopback: targets on private addresses are refused by the
guard before any connection (the ``no_network`` fixture records any attempt).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st
from strands.types.tools import AgentTool, ToolResult

from fakes.ollama import FakeOllama, Reply
from hub import contracts as c
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.agent.tools.operations import tiny_operation_tools
from hub.api.server import RunningServer
from hub.runtime.hub import Hub
from hub.tinys.openapi import (
    MAX_OPERATIONS,
    MAX_RESULT_CHARS,
    MAX_SCHEMA_BYTES,
    OpenAPIError,
    Operation,
    forget_cached_schemas,
    load_operations,
    operation_tools,
)
from tests.conftest import StartHub, owner_headers, settings_for
from tests.sse import post_chat

LOOPBACK = ("127.0.0.1",)
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def pets_schema() -> dict[str, Any]:
    """The service's own schema: relative server URL, path/query/header parameters, a JSON
    body through a $ref, and two operation names that collide with built-in tools."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": "/api"}],
        "paths": {
            "/pets/{petId}": {
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "get": {
                    "operationId": "getPet",
                    "summary": "Find a pet by its id",
                    "parameters": [
                        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}}
                    ],
                },
            },
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "description": "Add a pet to the store.",
                    "parameters": [
                        {"name": "dryRun", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "Host", "in": "header", "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                        },
                    },
                }
            },
            "/broken": {"get": {"operationId": "broken"}},
            "/big": {"get": {"operationId": "big"}},
            "/redirect-away": {"get": {"operationId": "redirectAway"}},
            "/learn": {"post": {"operationId": "learn", "summary": "Not the memory tool."}},
            "/tiny": {"get": {"operationId": "get-tiny", "summary": "Not the tiny reader."}},
        },
        "components": {
            "schemas": {
                "Pet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "description": "what the pet answers to"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                }
            }
        },
    }


@dataclass
class Seen:
    method: str
    raw_path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class Api:
    """A real OpenAPI service on a free loopback port: its schema and its operations."""

    schema: Any = field(default_factory=pets_schema)
    raw: bytes | None = None  # served instead of the schema: hostile bodies
    raw_status: int = 200
    schema_hits: int = 0
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def schema_url(self) -> str:
        return f"{self.base}/openapi.json"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/openapi.json", self._schema_json)
        app.router.add_get("/openapi.yaml", self._schema_yaml)
        app.router.add_route("*", "/api/{tail:.*}", self._operation)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def _schema_json(self, request: web.Request) -> web.Response:
        self.schema_hits += 1
        if self.raw is not None:
            return web.Response(body=self.raw, status=self.raw_status, content_type="text/plain")
        return web.json_response(self.schema)

    async def _schema_yaml(self, request: web.Request) -> web.Response:
        self.schema_hits += 1
        return web.Response(
            text=yaml.safe_dump(self.schema, sort_keys=False), content_type="application/yaml"
        )

    async def _operation(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(
            Seen(request.method, request.raw_path, dict(request.query), dict(request.headers), body)
        )
        tail = request.match_info["tail"]
        if tail.startswith("pets/") and request.method == "GET":
            return web.json_response({"id": tail.removeprefix("pets/"), "name": "Rex"})
        if tail == "pets" and request.method == "POST":
            return web.json_response({"received": json.loads(body)}, status=201)
        if tail == "broken":
            return web.Response(text="the pet database is on fire", status=500)
        if tail == "big":
            return web.Response(text="x" * 1_000_000)
        if tail == "redirect-away":
            raise web.HTTPFound("http://10.0.0.1/steal")
        return web.Response(text=f"{request.method} {tail}")


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    """A port a finished test used may come back: its cached schema must not."""
    forget_cached_schemas()
    yield
    forget_cached_schemas()


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    service = Api()
    await service.start()
    yield service
    await service.stop()


def open_hub(home: Path, allow: tuple[str, ...]) -> Hub:
    return Hub.open(settings_for(home, http_allow_hosts=allow))


@pytest.fixture
def hub(home: Path) -> Iterator[Hub]:
    """A hub whose owner allowed 127.0.0.1, where the test service runs."""
    opened = open_hub(home, LOOPBACK)
    yield opened
    opened.close()


@pytest.fixture
def strict_hub(tmp_path: Path) -> Iterator[Hub]:
    """A hub that allows nothing beyond the public internet."""
    opened = open_hub(tmp_path / "strict", ())
    yield opened
    opened.close()


async def tools_of(hub: Hub, source: str) -> dict[str, AgentTool]:
    return {t.tool_name: t for t in operation_tools(await load_operations(hub, source))}


async def run(tool: AgentTool, arguments: Any) -> ToolResult:
    """Call a tool the way strands does: its stream, the last event carries the result."""
    use = {"toolUseId": "t1", "name": tool.tool_name, "input": arguments}
    events = [event async for event in tool.stream(use, {})]  # type: ignore[arg-type]
    result: ToolResult = events[-1].tool_result
    assert result["toolUseId"] == "t1"
    return result


def text_of(result: ToolResult) -> str:
    return str(result["content"][0]["text"])


def depth(node: Any) -> int:
    if isinstance(node, dict):
        return 1 + max((depth(v) for v in node.values()), default=0)
    if isinstance(node, list):
        return 1 + max((depth(v) for v in node), default=0)
    return 0


# -- reading schemas -----------------------------------------------------------------------


async def test_each_operation_becomes_a_tool(hub: Hub, api: Api) -> None:
    operations = {op.name: op for op in await load_operations(hub, api.schema_url)}
    assert list(operations) == [
        "getPet",
        "addPet",
        "broken",
        "big",
        "redirectAway",
        "learn",
        "get-tiny",
    ]
    get_pet = operations["getPet"]
    assert get_pet.method == "GET" and get_pet.path == "/pets/{petId}"
    assert get_pet.server == f"{api.base}/api"  # relative to where the schema came from
    assert get_pet.description == "Find a pet by its id (GET /pets/{petId})"
    assert get_pet.input_schema["required"] == ["petId"]
    assert get_pet.input_schema["properties"]["verbose"]["type"] == "boolean"
    add_pet = operations["addPet"].input_schema
    assert add_pet["required"] == ["body"]
    assert add_pet["properties"]["body"]["required"] == ["name"]
    assert add_pet["properties"]["body"]["properties"]["tags"]["items"] == {"type": "string"}
    assert "X-Trace" in add_pet["properties"] and "Host" not in add_pet["properties"]
    tools = operation_tools(operations.values())
    spec = next(t.tool_spec for t in tools if t.tool_name == "addPet")
    assert spec["description"].startswith("Add a pet to the store.")
    assert spec["inputSchema"]["json"] == add_pet


async def test_yaml_and_inline_schemas_are_read(hub: Hub, api: Api) -> None:
    from_yaml = await load_operations(hub, f"{api.base}/openapi.yaml")
    assert [op.name for op in from_yaml][:2] == ["getPet", "addPet"]
    absolute = {**pets_schema(), "servers": [{"url": f"{api.base}/api"}]}
    inline_json = await load_operations(hub, json.dumps(absolute))
    inline_yaml = await load_operations(hub, yaml.safe_dump(absolute, sort_keys=False))
    assert (
        [op.name for op in inline_json]
        == [op.name for op in inline_yaml]
        == [op.name for op in from_yaml]
    )
    assert inline_yaml[0].server == f"{api.base}/api"
    tool = operation_tools(inline_yaml)[0]
    assert "Rex" in text_of(await run(tool, {"petId": "1"}))
    # A relative server URL means nothing without the schema's own URL: nothing to call.
    assert await load_operations(hub, json.dumps(pets_schema())) == []


async def test_swagger_2_is_read(hub: Hub, api: Api) -> None:
    swagger = {
        "swagger": "2.0",
        "info": {"title": "Old pets"},
        "host": f"127.0.0.1:{api.port}",
        "basePath": "/api",
        "schemes": ["http"],
        "paths": {
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "parameters": [
                        {"name": "dryRun", "in": "query", "type": "boolean"},
                        {
                            "name": "pet",
                            "in": "body",
                            "required": True,
                            "schema": {"$ref": "#/definitions/Pet"},
                        },
                    ],
                }
            }
        },
        "definitions": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }
    (operation,) = await load_operations(hub, json.dumps(swagger))
    assert operation.server == f"http://127.0.0.1:{api.port}/api"
    assert operation.input_schema["properties"]["dryRun"]["type"] == "boolean"
    assert operation.input_schema["properties"]["body"]["properties"] == {
        "name": {"type": "string"}
    }
    result = await run(operation_tools([operation])[0], {"dryRun": True, "body": {"name": "Tom"}})
    assert result["status"] == "success", text_of(result)
    assert api.seen[-1].query == {"dryRun": "true"}
    assert json.loads(api.seen[-1].body) == {"name": "Tom"}


async def test_a_schema_is_fetched_once_for_many_turns(hub: Hub, api: Api) -> None:
    first = await load_operations(hub, api.schema_url)
    second = await load_operations(hub, api.schema_url)
    assert first == second and len(first) == 7
    assert api.schema_hits == 1


# -- calling operations --------------------------------------------------------------------


async def test_an_operation_sends_path_query_header_and_body(hub: Hub, api: Api) -> None:
    tools = await tools_of(hub, api.schema_url)
    result = await run(
        tools["addPet"],
        {"dryRun": True, "X-Trace": "t-42", "body": {"name": "Tom", "tags": ["cat"]}},
    )
    assert result["status"] == "success", text_of(result)
    assert text_of(result).startswith("HTTP 201 Created (application/json)")
    assert '"received": {"name": "Tom", "tags": ["cat"]}' in text_of(result)
    seen = api.seen[-1]
    assert (seen.method, seen.raw_path) == ("POST", "/api/pets?dryRun=true")
    assert seen.headers["X-Trace"] == "t-42"
    assert seen.headers["Content-Type"] == "application/json"
    # A model that sends the JSON body as a string is understood.
    result = await run(tools["addPet"], {"body": '{"name": "Kit"}'})
    assert json.loads(api.seen[-1].body) == {"name": "Kit"}


async def test_path_parameters_cannot_leave_their_segment(hub: Hub, api: Api) -> None:
    tools = await tools_of(hub, api.schema_url)
    await run(tools["getPet"], {"petId": "../admin?x=1"})
    assert api.seen[-1].raw_path == "/api/pets/..%2Fadmin%3Fx%3D1"
    await run(tools["getPet"], {"petId": ".."})
    assert api.seen[-1].raw_path == "/api/pets/%2E%2E"
    result = await run(tools["getPet"], {"petId": 7, "verbose": False})
    assert api.seen[-1].raw_path == "/api/pets/7?verbose=false"
    assert result["status"] == "success" and '"name": "Rex"' in text_of(result)


async def test_an_http_error_is_a_tool_error_with_a_sentence(hub: Hub, api: Api) -> None:
    result = await run((await tools_of(hub, api.schema_url))["broken"], {})
    assert result["status"] == "error"
    assert text_of(result).startswith(
        "broken (GET /broken) failed: the API answered HTTP 500 Internal Server Error."
    )
    assert "the pet database is on fire" in text_of(result)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing required input: petId"),
        ({"petId": ""}, "a path parameter cannot be empty"),
        ("petId=1", "its input must be an object"),
    ],
)
async def test_bad_input_is_a_tool_error_and_sends_nothing(
    hub: Hub, api: Api, arguments: Any, problem: str
) -> None:
    result = await run((await tools_of(hub, api.schema_url))["getPet"], arguments)
    assert result["status"] == "error"
    assert text_of(result) == f"getPet (GET /pets/{{petId}}) was not called: {problem}"
    assert api.seen == []


async def test_header_input_cannot_inject_lines(hub: Hub, api: Api) -> None:
    tools = await tools_of(hub, api.schema_url)
    result = await run(tools["addPet"], {"X-Trace": "a\r\nX-Admin: 1", "body": {"name": "x"}})
    assert result["status"] == "error" and "line breaks" in text_of(result)
    assert api.seen == []


async def test_a_large_answer_is_cut_for_the_model(hub: Hub, api: Api) -> None:
    result = await run((await tools_of(hub, api.schema_url))["big"], {})
    assert result["status"] == "success"
    assert len(text_of(result)) < MAX_RESULT_CHARS + 200
    assert text_of(result).endswith("[truncated: only the beginning of the body is shown]")


# -- the network guard ---------------------------------------------------------------------


async def test_a_schema_on_a_private_address_is_refused(
    strict_hub: Hub, api: Api, no_network: list[str]
) -> None:
    with pytest.raises(OpenAPIError) as loopback:
        await load_operations(strict_hub, api.schema_url)
    assert str(loopback.value) == (
        f"the OpenAPI schema at {api.schema_url} was not loaded: refused: 127.0.0.1 is a "
        "loopback address; the hub's owner can allow a host with http.allow_hosts"
    )
    with pytest.raises(OpenAPIError, match=r"10\.0\.0\.1 is a private address"):
        await load_operations(strict_hub, "http://10.0.0.1/openapi.json")
    assert api.schema_hits == 0
    assert no_network == []


async def test_a_server_on_a_private_address_is_refused(
    hub: Hub, api: Api, no_network: list[str]
) -> None:
    schema = {**pets_schema(), "servers": [{"url": "http://192.168.1.20/api"}]}
    tools = await tools_of(hub, json.dumps(schema))
    result = await run(tools["getPet"], {"petId": "1"})
    assert result["status"] == "error"
    assert "refused: 192.168.1.20 is a private address" in text_of(result)
    # A redirect from an allowed server to a private one is refused at the hop.
    result = await run((await tools_of(hub, api.schema_url))["redirectAway"], {})
    assert result["status"] == "error" and "10.0.0.1 is a private address" in text_of(result)
    assert no_network == []


# -- hostile schemas -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        (b'{"openapi": "3.0.0", "paths": {', 200, "the schema is not valid JSON"),
        (b"[1, 2, 3]", 200, "the schema is not an object but a list"),
        (b"just some words", 200, "the schema is not an object but a str"),
        (b"openapi: [unclosed", 200, "the schema is not valid YAML"),
        (b'{"info": {}, "paths": {}}', 200, "the schema is not OpenAPI"),
        (b'{"openapi": "3.1.0", "paths": "none"}', 200, "the schema has no paths"),
        (b"x" * (MAX_SCHEMA_BYTES + 1), 200, "is larger than 2 MB"),
        (b"gone", 404, "it answered HTTP 404 Not Found"),
        (b"\xff\xfe\x00garbage", 200, "the schema is not"),
    ],
)
async def test_a_hostile_schema_is_a_clear_error(
    hub: Hub, api: Api, body: bytes, status: int, problem: str
) -> None:
    api.raw, api.raw_status = body, status
    with pytest.raises(OpenAPIError) as error:
        await load_operations(hub, api.schema_url)
    assert problem in str(error.value)
    assert len(str(error.value)) < 400


async def test_a_broken_worker_leaves_no_operation_tools(
    hub: Hub, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    api.raw = b"<html>not a schema</html>"
    tiny, _ = hub.tinys.create(hub.owner, {"name": "petshop", "worker": api.schema_url})
    with caplog.at_level(logging.WARNING):
        assert await tiny_operation_tools(hub, tiny) == []
    assert "petshop: its OpenAPI operations are not mounted: the schema is not" in caplog.text
    no_worker, _ = hub.tinys.create(hub.owner, {"name": "plain"})
    assert await tiny_operation_tools(hub, no_worker) == []


async def test_cycles_and_deep_nesting_terminate(hub: Hub) -> None:
    looping_parameter = {"$ref": "#/components/parameters/Loop"}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(300):
        deep = {"type": "object", "properties": {"inner": deep}}
    schema = {
        "openapi": "3.0.0",
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/tree": {
                "post": {
                    "operationId": "plant",
                    "parameters": [looping_parameter],
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/A"}}
                        }
                    },
                }
            },
            "/deep": {"put": {"requestBody": {"$ref": "#/components/requestBodies/Deep"}}},
            "/self": {"$ref": "#/paths/~1self"},
        },
        "components": {
            "parameters": {"Loop": looping_parameter},
            "requestBodies": {
                "Deep": {"content": {"application/json": {"schema": deep}}, "required": True}
            },
            "schemas": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                "B": {
                    "type": "object",
                    "properties": {
                        "a": {"$ref": "#/components/schemas/A"},
                        "me": {"$ref": "#/components/schemas/B"},
                        "away": {"$ref": "other.yaml#/Pet"},
                    },
                },
            },
        },
    }
    plant, deep_put = await load_operations(hub, json.dumps(schema))
    assert (plant.name, deep_put.name) == ("plant", "put_deep")
    body = plant.input_schema["properties"]["body"]
    again = body["properties"]["b"]["properties"]["a"]
    assert again["description"] == "(nested A, the same shape again)"
    assert "not followed" in body["properties"]["b"]["properties"]["away"]["description"]
    assert depth(deep_put.input_schema) < 40
    assert deep_put.input_schema["required"] == ["body"]
    for operation in (plant, deep_put):
        json.dumps(operation.input_schema)  # a finite tree


async def test_a_recursive_yaml_document_terminates(hub: Hub) -> None:
    text = (
        "openapi: 3.0.0\n"
        "servers: [{url: 'https://api.example.com'}]\n"
        "paths:\n"
        "  /loop:\n"
        "    get:\n"
        "      parameters:\n"
        "        - &p {name: q, in: query, schema: &s {type: object, properties: {self: *s}}}\n"
    )
    (operation,) = await load_operations(hub, text)
    assert operation.name == "get_loop"
    assert depth(operation.input_schema) < 40
    json.dumps(operation.input_schema)


async def test_ten_thousand_operations_are_cut_to_a_few(
    hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    paths = {f"/op/{i}": {"get": {"operationId": "same"}} for i in range(10_000)}
    schema = {"openapi": "3.0.0", "servers": [{"url": "https://api.example.com"}], "paths": paths}
    with caplog.at_level(logging.WARNING):
        operations = await load_operations(hub, json.dumps(schema))
    assert len(operations) == MAX_OPERATIONS
    assert [op.name for op in operations[:3]] == ["same", "same_2", "same_3"]
    assert len({op.name for op in operations}) == MAX_OPERATIONS
    assert f"the first {MAX_OPERATIONS} become tools, {10_000 - MAX_OPERATIONS} are left out" in (
        caplog.text
    )


# -- names and the mount list --------------------------------------------------------------


async def test_a_builtin_cannot_be_shadowed(hub: Hub, api: Api) -> None:
    operations = operation_tools(await load_operations(hub, api.schema_url))
    tiny = hub.tinys.get("tiny")
    assert tiny is not None
    context = ToolContext(hub, hub.owner, tiny, operations=tuple(operations))
    mounted = mount_tools(context)
    learn = [t for t in mounted.tools if t.tool_name == "learn"]
    assert len(learn) == 1 and all(learn[0] is not op for op in operations)
    assert "get-tiny" not in mounted.names and "get_tiny" in mounted.names
    dropped = {name for name, _ in mounted.dropped}
    assert {"learn", "get-tiny"} <= dropped
    assert {"getPet", "addPet"} <= set(mounted.names)
    # Asked to avoid names already taken, the tools take new ones instead.
    renamed = operation_tools(await load_operations(hub, api.schema_url), taken={"learn"})
    assert "learn_2" in [t.tool_name for t in renamed]


def fake_operation(name: str) -> Operation:
    return Operation(
        name=name,
        method="GET",
        path="/",
        server="https://api.example.com",
        description="",
        input_schema={"type": "object", "properties": {}, "required": []},
    )


@given(
    raw=st.lists(st.text(max_size=80), max_size=20),
    taken=st.sets(st.from_regex(NAME, fullmatch=True), max_size=5),
    prefix=st.sampled_from(["", "pets_", "a" * 70]),
)
def test_tool_names_are_valid_and_unique(raw: list[str], taken: set[str], prefix: str) -> None:
    tools = operation_tools(map(fake_operation, raw), taken=taken, prefix=prefix)
    names = [t.tool_name for t in tools]
    assert all(NAME.fullmatch(name) for name in names)
    keys = [name.replace("-", "_") for name in names]
    assert len(set(keys)) == len(keys) == len(raw)
    assert not set(keys) & {name.replace("-", "_") for name in taken}


# -- a chat turn ---------------------------------------------------------------------------


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url, http_allow_hosts=LOOPBACK)


async def test_the_model_calls_an_operation_in_a_chat_turn(
    server: RunningServer, fake_ollama: FakeOllama, api: Api
) -> None:
    server.hub.tinys.modify(server.hub.owner, "tiny", {"worker": api.schema_url})
    call = {"function": {"name": "getPet", "arguments": {"petId": "42"}}}
    fake_ollama.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Rex it is."]))
    transcript = await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": "who is pet 42?"}]},
        owner_headers(server),
    )
    after = transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert after["name"] == "getPet" and after["status"] == "success"
    assert api.seen[-1].raw_path == "/api/pets/42"
    second = fake_ollama.requests[1]["messages"]
    tool_messages = [m["content"] for m in second if m["role"] == "tool"]
    assert any('"id": "42", "name": "Rex"' in content for content in tool_messages)
    assert transcript.text == "Rex it is." and transcript.done
    offered = [t["function"] for t in fake_ollama.requests[0]["tools"]]
    names = [t["name"] for t in offered]
    assert {"getPet", "addPet"} <= set(names) and "get-tiny" not in names
    assert names.count("learn") == 1
    learn = next(t for t in offered if t["name"] == "learn")
    assert learn["description"] != "Not the memory tool. (POST /learn)"


async def test_a_tiny_stores_its_schema_inline_and_its_operations_are_tools(
    server: RunningServer, fake_ollama: FakeOllama, api: Api
) -> None:
    inline = yaml.safe_dump({**pets_schema(), "servers": [{"url": f"{api.base}/api"}]})
    server.hub.tinys.create(
        server.hub.owner, {"name": "vet", "systemPrompt": "Pets.", "worker": inline}
    )
    call = {"function": {"name": "getPet", "arguments": {"petId": "7"}}}
    fake_ollama.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Found it."]))
    transcript = await post_chat(
        server.url,
        {"messages": [{"role": "user", "content": "who is pet 7?"}]},
        {**owner_headers(server), c.H_NAME: "vet"},
    )
    after = transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert (after["name"], after["status"]) == ("getPet", "success")
    assert api.seen[-1].raw_path == "/api/pets/7" and transcript.text == "Found it."


async def test_a_broken_worker_does_not_cost_the_answer(
    server: RunningServer, fake_ollama: FakeOllama, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    api.raw = b'{"openapi": "3.0.0", "paths": {'
    server.hub.tinys.modify(server.hub.owner, "tiny", {"worker": api.schema_url})
    fake_ollama.script(Reply(chunks=["Still here."]))
    with caplog.at_level(logging.WARNING):
        transcript = await post_chat(
            server.url,
            {"messages": [{"role": "user", "content": "hello"}]},
            owner_headers(server),
        )
    assert transcript.text == "Still here." and transcript.done
    assert not transcript.of_type(c.EV_ERROR)
    names = [t["function"]["name"] for t in fake_ollama.requests[0]["tools"]]
    assert "learn" in names and "getPet" not in names
    assert "tiny: its OpenAPI operations are not mounted: the schema is not valid JSON" in (
        caplog.text
    )
