"""Tiny records: the default tiny, /api/tinys over real HTTP, and the strands tools on the store.

Every test runs a real hub on 127.0.0.1 with a real SQLite database; Ollama is pointed at a
closed port so no model is probed.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, cast

import aiohttp
from strands.types.tools import ToolContext as StrandsToolContext
from strands.types.tools import ToolUse

from hub.agent.tools.context import STATE_KEY, ToolContext
from hub.agent.tools.tinys import tools
from hub.api.server import RunningServer
from hub.contracts import DEFAULT_TINY, H_KEY, LOGIN_REQUIRED
from hub.people.identity import User
from hub.runtime.hub import Hub
from hub.tinys.records import DEFAULT_CHIPS, DEFAULT_PROMPT, SUMMARY_CHARS
from tests.conftest import StartHub, owner_headers, settings_for

# -- helpers ---------------------------------------------------------------------------------


async def hub_up(start_hub: StartHub, closed_port: int) -> RunningServer:
    return await start_hub(ollama_host=f"http://127.0.0.1:{closed_port}")


def member(server: RunningServer, name: str) -> tuple[User, dict[str, str]]:
    """A second, non-owner user and the headers that sign in as them."""
    user = server.hub.identity.add_user(name)
    token = server.hub.identity.issue_token(user, "test")
    return user, {"Authorization": f"Bearer {token}"}


async def call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json: Any = None,
    data: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """One request; the status and the JSON body (every answer of the hub is JSON)."""
    async with http.request(method, url, headers=headers, json=json, data=data) as response:
        assert response.content_type == "application/json", await response.text()
        return response.status, await response.json()


async def create(
    http: aiohttp.ClientSession, server: RunningServer, headers: dict[str, str], **fields: Any
) -> dict[str, Any]:
    status, body = await call(http, "POST", f"{server.url}/api/tinys", headers=headers, json=fields)
    assert status == 201, body
    return body


async def read(
    http: aiohttp.ClientSession, server: RunningServer, name: str, **headers: str
) -> tuple[int, dict[str, Any]]:
    return await call(http, "GET", f"{server.url}/api/tinys/{name}", headers=headers)


async def listing(
    http: aiohttp.ClientSession,
    server: RunningServer,
    query: str = "",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    return await call(http, "GET", f"{server.url}/api/tinys{query}", headers=headers)


def names(page: dict[str, Any]) -> list[str]:
    return [t["name"] for t in page["tinys"]]


async def assert_healthy(http: aiohttp.ClientSession, server: RunningServer) -> None:
    async with http.get(f"{server.url}/api/health") as response:
        assert response.status == 200
        assert (await response.json())["ok"] is True


# -- the default tiny ------------------------------------------------------------------------


async def test_default_tiny_exists_from_first_start(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    status, body = await read(http, server, DEFAULT_TINY)
    assert status == 200
    tiny = body["tiny"]
    assert tiny["name"] == DEFAULT_TINY == "tiny"
    assert tiny["owner"] == server.hub.owner.id
    assert tiny["visibility"] == "public"
    assert tiny["systemPrompt"] == DEFAULT_PROMPT
    assert tiny["tagline"] == "your companion"
    assert tiny["chips"] == list(DEFAULT_CHIPS)
    assert "key" not in body
    # Stored with no chips of its own: the defaults are filled in on the way out.
    [row] = server.hub.db["tinys"].rows_where("name = ?", [DEFAULT_TINY])
    assert row["chips_json"] == "[]"
    assert row["key_hash"] is None


def test_default_tiny_is_created_once_across_restarts(home: Path) -> None:
    first = Hub.open(settings_for(home))
    created = first.tinys.get(DEFAULT_TINY)
    first.close()
    second = Hub.open(settings_for(home))
    again = second.tinys.get(DEFAULT_TINY)
    assert created is not None and again is not None
    assert again == created
    assert second.db["tinys"].count == 1
    second.close()


# -- POST /api/tinys -------------------------------------------------------------------------


async def test_post_creates_a_tiny(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    _, alice_headers = member(server, "alice")
    status, body = await call(
        http,
        "POST",
        f"{server.url}/api/tinys",
        headers=alice_headers,
        json={
            "name": "cook-7",
            "systemPrompt": "You are a cook.",
            "tagline": "recipes",
            "hero": "https://example.com/hero.png",
            "chips": ["What's for dinner?", "   "],
            "skills": [{"name": "bake", "description": "bread", "instructions": "knead"}],
        },
    )
    assert status == 201
    assert set(body) == {"tiny"}, "a public tiny has no key"
    tiny = body["tiny"]
    assert tiny["name"] == "cook-7"
    assert tiny["owner"] != server.hub.owner.id
    assert tiny["systemPrompt"] == "You are a cook."
    assert tiny["hero"] == "https://example.com/hero.png"
    assert tiny["chips"] == ["What's for dinner?"], "blank chips are dropped"
    assert tiny["skills"] == [{"name": "bake", "description": "bread", "instructions": "knead"}]
    assert tiny["visibility"] == "public"
    status, fetched = await read(http, server, "cook-7")
    assert status == 200
    assert fetched["tiny"] == tiny


async def test_post_without_prompt_gets_the_default_prompt(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    body = await create(http, server, owner_headers(server), name="plain")
    assert body["tiny"]["systemPrompt"] == DEFAULT_PROMPT


async def test_post_refuses_json_labelled_as_a_form(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    """A form is what any web page may post without asking, so it is never read as JSON."""
    server = await hub_up(start_hub, closed_port)
    status, body = await call(
        http,
        "POST",
        f"{server.url}/api/tinys",
        headers={**owner_headers(server), "Content-Type": "application/x-www-form-urlencoded"},
        data='{"name": "curl-made"}',
    )
    assert status == 415
    assert "Content-Type: application/json" in body["error"]
    assert server.hub.tinys.get("curl-made") is None


async def test_anonymous_post_is_401(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    status, body = await call(http, "POST", f"{server.url}/api/tinys", json={"name": "sneaky"})
    assert status == 401
    assert "sign in required" in body["error"]
    assert server.hub.tinys.get("sneaky") is None


async def test_duplicate_name_is_400(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    status, body = await call(
        http,
        "POST",
        f"{server.url}/api/tinys",
        headers=owner_headers(server),
        json={"name": "tiny"},
    )
    assert status == 409  # a conflict with what exists
    assert body == {"error": "a tiny named tiny already exists"}
    assert server.hub.db["tinys"].count == 1
    assert server.hub.tinys.get("tiny") is not None


async def test_bad_fields_are_400_naming_the_field_and_the_hub_stays_up(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    url = f"{server.url}/api/tinys"
    cases: list[tuple[Any, str]] = [
        ({"name": "Bad Name"}, "name must be 2-40 characters"),
        ({"name": "-dash-first"}, "name must be"),
        ({"name": "x"}, "name must be"),
        ({"name": "a" * 41}, "name must be"),
        ({"name": 42}, "name must be"),
        ({}, "name must be"),
        ({"name": "typed", "tagline": 5}, "tagline must be a string"),
        ({"name": "typed", "chips": "hello"}, "chips must be an array of strings"),
        ({"name": "typed", "visibility": "secret"}, "visibility must be public or private"),
        ({"name": "typed", "skills": [{"description": "no name"}]}, "skills[0] needs a name"),
        ({"name": "typed", "mcpServers": ["x"]}, "mcpServers must be an array of objects"),
        ({"name": "long-tag", "tagline": "t" * 301}, "tagline is 301 characters; the limit is 300"),
        ({"name": "ftp-hero", "hero": "ftp://example.com/a.png"}, "hero must be an http(s) URL"),
        ({"name": "bad-worker", "worker": "not a schema"}, "or an OpenAPI schema written inline"),
        ({"name": "long-url", "worker": "https://x.example/" + "a" * 2000}, "the limit is 2000"),
        ({"name": "js-logo", "logo": "javascript:alert(1)"}, "logo must be an http(s) URL"),
        ({"name": "extra", "colour": "red"}, "unknown field(s): colour"),
        ([{"name": "in-a-list"}], "body must be a JSON object"),
        ("just a string", "body must be a JSON object"),
    ]
    for payload, expected in cases:
        status, body = await call(http, "POST", url, headers=owner_headers(server), json=payload)
        assert status == 400, (payload, body)
        assert expected in body["error"], (payload, body)

    status, body = await call(
        http,
        "POST",
        url,
        headers={**owner_headers(server), "Content-Type": "application/json"},
        data='{"name": "broken",',
    )
    assert status == 400
    assert "body is not valid JSON" in body["error"]

    status, body = await call(
        http,
        "POST",
        url,
        headers={**owner_headers(server), "Content-Type": "text/plain"},
        data="make me a tiny please",
    )
    assert status == 415
    assert "body must be JSON" in body["error"]
    assert "text/plain" in body["error"]

    assert server.hub.db["tinys"].count == 1, "nothing was created by a bad request"
    await assert_healthy(http, server)


async def test_a_name_with_a_trailing_newline_is_refused(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    # `$` also matches just before a final "\n": the name must match in full.
    server = await hub_up(start_hub, closed_port)
    status, body = await call(
        http,
        "POST",
        f"{server.url}/api/tinys",
        headers=owner_headers(server),
        json={"name": "tiny\n", "systemPrompt": "I am not the real tiny."},
    )
    assert status == 400, body
    assert "name must be" in body["error"]
    assert server.hub.db["tinys"].count == 1


# -- GET /api/tinys --------------------------------------------------------------------------


async def test_list_public_and_own_newest_first(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    _, alice = member(server, "alice")
    _, bob = member(server, "bob")
    await create(http, server, alice, name="alpha", tagline="first of alice")
    await create(http, server, bob, name="bravo", tagline="bob's public one")
    await create(http, server, alice, name="charlie", visibility="private")
    await create(http, server, bob, name="delta", visibility="private", tagline="bob hides")

    status, page = await listing(http, server)
    assert status == 200
    assert names(page) == ["bravo", "alpha", "tiny"]
    assert (page["total"], page["limit"], page["offset"]) == (3, 20, 0)
    assert all("key" not in t for t in page["tinys"])

    _, page = await listing(http, server, headers=alice)
    assert names(page) == ["charlie", "bravo", "alpha", "tiny"]
    assert page["total"] == 4

    _, page = await listing(http, server, headers=bob)
    assert names(page) == ["delta", "bravo", "alpha", "tiny"]


async def test_list_filters_by_query_and_mine(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    _, alice = member(server, "alice")
    await create(http, server, alice, name="gardener", tagline="grows tomatoes")
    await create(http, server, alice, name="poet", systemPrompt="You write haiku about tomatoes.")
    await create(http, server, owner_headers(server), name="tomato-fan")
    await create(http, server, owner_headers(server), name="banker", tagline="money")

    _, page = await listing(http, server, "?q=tomato")
    assert names(page) == ["tomato-fan", "poet", "gardener"]
    assert page["total"] == 3

    _, page = await listing(http, server, "?q=nothing-matches-this")
    assert (names(page), page["total"]) == ([], 0)

    _, page = await listing(http, server, "?mine=1", headers=alice)
    assert names(page) == ["poet", "gardener"]
    assert page["total"] == 2

    _, page = await listing(http, server, "?mine=true&q=haiku", headers=alice)
    assert names(page) == ["poet"]

    _, page = await listing(http, server, "?mine=1", headers=owner_headers(server))
    assert names(page) == ["banker", "tomato-fan", "tiny"]

    _, page = await listing(http, server, "?mine=1")
    assert (names(page), page["total"]) == ([], 0), "an anonymous caller owns nothing"


async def test_list_query_is_literal_text_not_a_like_pattern(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    # hub/tinys/records.py TinyStore.list: `q` goes into LIKE unescaped, so "_" and "%" act as
    # wildcards and match any text instead of "contains this".
    server = await hub_up(start_hub, closed_port)
    await create(http, server, owner_headers(server), name="plain-one", tagline="no specials")
    _, page = await listing(http, server, "?q=_")
    assert (names(page), page["total"]) == ([], 0), "no tiny contains an underscore"
    _, page = await listing(http, server, "?q=%25")
    assert (names(page), page["total"]) == ([], 0), "no tiny contains a percent sign"


async def test_list_paginates_with_limit_and_offset(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    for index in range(5):
        await create(http, server, owner_headers(server), name=f"page-{index}")
    everything = ["page-4", "page-3", "page-2", "page-1", "page-0", "tiny"]

    _, page = await listing(http, server, "?limit=2")
    assert names(page) == everything[:2]
    assert (page["total"], page["limit"], page["offset"]) == (6, 2, 0)

    _, page = await listing(http, server, "?limit=2&offset=2")
    assert names(page) == everything[2:4]
    assert (page["total"], page["limit"], page["offset"]) == (6, 2, 2)

    _, page = await listing(http, server, "?limit=50&offset=5")
    assert names(page) == ["tiny"]

    _, page = await listing(http, server, "?offset=6")
    assert (names(page), page["total"]) == ([], 6)


async def test_a_bad_limit_or_offset_is_400(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    for query in ("?limit=0", "?limit=51", "?limit=x", "?limit=-1", "?limit=", "?offset=-3"):
        status, body = await listing(http, server, query)
        assert status == 400, (query, body)
        name = query[1:].split("=")[0]
        assert body["error"].startswith(f"{name} must be a whole number"), (query, body)
    await assert_healthy(http, server)


async def test_a_digit_that_is_not_a_decimal_is_400_not_500(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    # hub/api/tinys.py `_whole`: str.isdigit() is true for "²" and for a 5,000-digit number,
    # then int() raises ValueError (not a decimal / over Python's 4300-digit limit) and the
    # error middleware answers 500 "internal error" instead of the 400 for a bad limit.
    server = await hub_up(start_hub, closed_port)
    answers = []
    for query in ("?limit=%C2%B2", "?offset=" + "9" * 5000):
        status, body = await listing(http, server, query)
        answers.append((status, "must be a whole number" in body["error"]))
    await assert_healthy(http, server)
    assert answers == [(400, True), (400, True)]


# -- private tinys and GET /api/tinys/{name} -------------------------------------------------


async def test_private_tiny_needs_its_key_or_its_owner(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    _, alice = member(server, "alice")
    _, bob = member(server, "bob")
    body = await create(http, server, alice, name="secret", visibility="private")
    key = body["key"]
    assert key.startswith("th_")
    assert body["tiny"]["visibility"] == "private"
    assert key not in str(body["tiny"])
    [row] = server.hub.db["tinys"].rows_where("name = ?", ["secret"])
    assert row["key_hash"] and key not in row.values(), "only the key's hash is stored"

    status, denied = await read(http, server, "secret")
    assert status == 403
    assert "x-tiny-key" in denied["error"]
    status, _ = await read(http, server, "secret", **{H_KEY: "th_wrong"})
    assert status == 403
    status, _ = await read(http, server, "secret", **bob)
    assert status == 403, "another member is no better than anonymous"

    status, got = await read(http, server, "secret", **{H_KEY: key})
    assert status == 200
    assert got["tiny"]["name"] == "secret"
    status, _ = await read(http, server, "secret", **bob, **{H_KEY: key})
    assert status == 200
    status, _ = await read(http, server, "secret", **alice)
    assert status == 200
    status, _ = await read(http, server, "secret", **owner_headers(server))
    assert status == 200, "the hub's owner may read every tiny"

    _, page = await listing(http, server)
    assert "secret" not in names(page)
    _, page = await listing(http, server, "?q=secret")
    assert page["total"] == 0
    _, page = await listing(http, server, headers=bob)
    assert "secret" not in names(page)


async def test_unknown_tiny_is_json_404(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    status, body = await read(http, server, "nobody-here")
    assert status == 404
    assert body == {"error": "no tiny named nobody-here"}
    status, body = await call(
        http,
        "PATCH",
        f"{server.url}/api/tinys/nobody-here",
        headers=owner_headers(server),
        json={"tagline": "x"},
    )
    assert status == 404
    assert body == {"error": "no tiny named nobody-here"}


# -- PATCH /api/tinys/{name} -----------------------------------------------------------------


async def patch(
    http: aiohttp.ClientSession,
    server: RunningServer,
    name: str,
    headers: dict[str, str] | None,
    fields: Any,
) -> tuple[int, dict[str, Any]]:
    return await call(http, "PATCH", f"{server.url}/api/tinys/{name}", headers=headers, json=fields)


async def test_patch_by_the_tiny_owner_and_the_hub_owner_only(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    _, alice = member(server, "alice")
    _, bob = member(server, "bob")
    created = (await create(http, server, alice, name="helper", tagline="v1"))["tiny"]

    status, body = await patch(http, server, "helper", alice, {"tagline": "v2"})
    assert status == 200
    assert body["tiny"]["tagline"] == "v2"
    assert body["tiny"]["updatedAt"] >= created["updatedAt"]
    assert body["tiny"]["createdAt"] == created["createdAt"]
    assert "key" not in body

    status, body = await patch(http, server, "helper", owner_headers(server), {"tagline": "v3"})
    assert status == 200
    assert body["tiny"]["tagline"] == "v3"
    assert body["tiny"]["owner"] == created["owner"], "the hub's owner does not take it over"

    status, body = await patch(http, server, "helper", bob, {"tagline": "hijacked"})
    assert status == 403
    assert body == {"error": "only the owner of helper may change it"}
    status, body = await patch(http, server, DEFAULT_TINY, bob, {"tagline": "hijacked"})
    assert status == 403

    status, body = await patch(http, server, "helper", None, {"tagline": "anon"})
    assert status == 401

    _, fetched = await read(http, server, "helper")
    assert fetched["tiny"]["tagline"] == "v3"
    _, fetched = await read(http, server, DEFAULT_TINY)
    assert fetched["tiny"]["tagline"] == "your companion"


async def test_patch_validates_fields_like_create(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    headers = owner_headers(server)
    for fields, expected in [
        ({"hero": "not a url"}, "hero must be an http(s) URL"),
        ({"tagline": "t" * 301}, "tagline is 301 characters"),
        ({"systemPrompt": None}, "systemPrompt must be a string"),
        ({"owner": "someone"}, "unknown field(s): owner"),
        (["tagline"], "body must be a JSON object"),
    ]:
        status, body = await patch(http, server, DEFAULT_TINY, headers, fields)
        assert status == 400, (fields, body)
        assert expected in body["error"], (fields, body)
    _, fetched = await read(http, server, DEFAULT_TINY)
    assert fetched["tiny"]["systemPrompt"] == DEFAULT_PROMPT
    assert fetched["tiny"]["hero"] == ""


async def test_patch_clears_media_and_restores_default_chips(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    headers = owner_headers(server)
    created = await create(
        http,
        server,
        headers,
        name="dressed",
        hero="https://example.com/h.png",
        logo="http://example.com/l.png",
        theme="ocean",
        tagline="kept",
        chips=["One", "Two"],
    )
    assert created["tiny"]["chips"] == ["One", "Two"]
    assert created["tiny"]["theme"] == "ocean"

    status, body = await patch(
        http, server, "dressed", headers, {"hero": "", "logo": "", "theme": "", "chips": []}
    )
    assert status == 200
    tiny = body["tiny"]
    assert (tiny["hero"], tiny["logo"], tiny["theme"]) == ("", "", "")
    assert tiny["chips"] == list(DEFAULT_CHIPS)
    assert tiny["tagline"] == "kept", "fields left out stay as they are"
    _, fetched = await read(http, server, "dressed")
    assert fetched["tiny"] == tiny


async def test_patch_to_private_returns_a_new_key_each_time(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    _, alice = member(server, "alice")
    await create(http, server, alice, name="shy")

    status, body = await patch(http, server, "shy", alice, {"visibility": "private"})
    assert status == 200
    assert body["tiny"]["visibility"] == "private"
    first_key = body["key"]
    assert (await read(http, server, "shy"))[0] == 403
    assert (await read(http, server, "shy", **{H_KEY: first_key}))[0] == 200

    status, body = await patch(http, server, "shy", alice, {"visibility": "private"})
    assert status == 200
    assert "key" not in body, "already private: the key stays as it was"
    assert (await read(http, server, "shy", **{H_KEY: first_key}))[0] == 200

    status, body = await patch(http, server, "shy", alice, {"visibility": "public"})
    assert status == 200
    assert "key" not in body
    assert (await read(http, server, "shy"))[0] == 200
    [row] = server.hub.db["tinys"].rows_where("name = ?", ["shy"])
    assert row["key_hash"] is None

    status, body = await patch(http, server, "shy", alice, {"visibility": "private"})
    second_key = body["key"]
    assert second_key != first_key
    assert (await read(http, server, "shy", **{H_KEY: first_key}))[0] == 403
    assert (await read(http, server, "shy", **{H_KEY: second_key}))[0] == 200


async def test_patch_cannot_rename(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    headers = owner_headers(server)
    await create(http, server, headers, name="stays")

    status, body = await patch(
        http, server, "stays", headers, {"name": "renamed", "tagline": "changed"}
    )
    assert status == 200
    assert body["tiny"]["name"] == "stays"
    assert body["tiny"]["tagline"] == "changed", "the other fields still apply"
    assert (await read(http, server, "stays"))[0] == 200
    assert (await read(http, server, "renamed"))[0] == 404
    assert server.hub.db["tinys"].count == 2

    status, body = await patch(http, server, "stays", headers, {"name": DEFAULT_TINY})
    assert status == 200
    assert body["tiny"]["name"] == "stays"
    _, fetched = await read(http, server, DEFAULT_TINY)
    assert fetched["tiny"]["tagline"] == "your companion", "the default tiny is untouched"


# -- the strands tools -----------------------------------------------------------------------


def turn(server: RunningServer, caller: User | None) -> ToolContext:
    tiny = server.hub.tinys.get(DEFAULT_TINY)
    assert tiny is not None
    return ToolContext(server.hub, caller, tiny)


def tool_set(server: RunningServer, caller: User | None) -> dict[str, Any]:
    """The tools, each callable directly with its keyword arguments. They find their turn in
    strands' invocation state (as a chat fills it), handed over in a tool_context."""
    ctx = turn(server, caller)
    direct: dict[str, Any] = {}
    for agent_tool in tools(ctx):
        tool_context = StrandsToolContext(
            tool_use={"toolUseId": "direct", "name": agent_tool.tool_name, "input": {}},
            agent=cast(Any, None),
            invocation_state={STATE_KEY: ctx},
        )
        direct[agent_tool.tool_name] = partial(cast(Any, agent_tool), tool_context=tool_context)
    return direct


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def json_of(result: dict[str, Any]) -> dict[str, Any]:
    [block] = [b for b in result["content"] if "json" in b]
    return cast(dict[str, Any], block["json"])


async def test_tools_are_the_four_tiny_tools(start_hub: StartHub, closed_port: int) -> None:
    server = await hub_up(start_hub, closed_port)
    built = tools(turn(server, None))
    assert [t.tool_name for t in built] == ["create_ai", "modify_ai", "get_tiny", "list_tiny"]
    for agent_tool in built:
        schema = agent_tool.tool_spec["inputSchema"]["json"]
        assert "tool_context" not in schema["properties"], "the context is injected, not asked"
    create_schema = built[0].tool_spec["inputSchema"]["json"]
    assert set(create_schema["required"]) == {"name", "systemPrompt"}


async def test_a_tool_run_by_strands_finds_its_turn_in_the_invocation_state(
    start_hub: StartHub, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    alice = server.hub.identity.add_user("alice")
    [create_ai] = [t for t in tools(turn(server, alice)) if t.tool_name == "create_ai"]
    tool_use: ToolUse = {
        "toolUseId": "use-1",
        "name": "create_ai",
        "input": {"name": "streamed", "systemPrompt": "Made by a tool use."},
    }
    # A strands Agent always puts itself in the invocation state; the tool does not use it.
    state = {"agent": None, STATE_KEY: turn(server, alice)}
    events = [event async for event in create_ai.stream(tool_use, state)]
    result = events[-1]["tool_result"]
    assert result["toolUseId"] == "use-1"
    assert result["status"] == "success", result
    assert result["content"][0] == {"text": "Created streamed."}
    stored = server.hub.tinys.get("streamed")
    assert stored is not None and stored.owner_id == alice.id


async def test_write_tools_need_a_signed_in_caller(start_hub: StartHub, closed_port: int) -> None:
    server = await hub_up(start_hub, closed_port)
    anonymous = tool_set(server, None)
    login_required = {"status": "error", "content": [{"text": LOGIN_REQUIRED}]}
    assert LOGIN_REQUIRED == "Login required"
    assert anonymous["create_ai"](name="ghost", systemPrompt="boo") == login_required
    assert anonymous["modify_ai"](name=DEFAULT_TINY, tagline="boo") == login_required
    assert server.hub.tinys.get("ghost") is None
    tiny = server.hub.tinys.get(DEFAULT_TINY)
    assert tiny is not None and tiny.tagline == "your companion"


async def test_create_ai_creates_for_the_caller(
    start_hub: StartHub, http: aiohttp.ClientSession, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    alice, _ = member(server, "alice")
    mine = tool_set(server, alice)

    result = mine["create_ai"](
        name="chef", systemPrompt="You cook.", tagline="food", chips=["Hungry?"]
    )
    assert result["status"] == "success", result
    assert text_of(result) == "Created chef."
    assert json_of(result)["tiny"]["name"] == "chef"
    stored = server.hub.tinys.get("chef")
    assert stored is not None
    assert stored.owner_id == alice.id
    assert (stored.system_prompt, stored.tagline, stored.chips) == (
        "You cook.",
        "food",
        ("Hungry?",),
    )
    status, body = await read(http, server, "chef")
    assert (status, body["tiny"]["owner"]) == (200, alice.id)

    again = mine["create_ai"](name="chef", systemPrompt="twice")
    assert again == {"status": "error", "content": [{"text": "a tiny named chef already exists"}]}
    bad = mine["create_ai"](name="Chef!", systemPrompt="x")
    assert bad["status"] == "error"
    assert "name must be" in text_of(bad)


async def test_create_ai_private_reports_a_working_key_once(
    start_hub: StartHub, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    alice, _ = member(server, "alice")
    result = tool_set(server, alice)["create_ai"](
        name="hidden", systemPrompt="shh", visibility="private"
    )
    assert result["status"] == "success"
    prefix = "Created hidden. Its key (shown once): "
    assert text_of(result).startswith(prefix)
    key = text_of(result)[len(prefix) :]
    tiny = server.hub.tinys.get("hidden")
    assert tiny is not None and tiny.is_private
    assert server.hub.tinys.can_read(tiny, None, key)
    assert not server.hub.tinys.can_read(tiny, None, key + "x")
    assert key not in str(json_of(result))


async def test_modify_ai_on_own_and_on_someone_elses_tiny(
    start_hub: StartHub, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    alice, _ = member(server, "alice")
    bob, _ = member(server, "bob")
    tool_set(server, alice)["create_ai"](name="alices", systemPrompt="hers", hero="https://x.io/a")

    result = tool_set(server, bob)["modify_ai"](name="alices", systemPrompt="mine now")
    assert result == {
        "status": "error",
        "content": [{"text": "only the owner of alices may change it"}],
    }
    result = tool_set(server, bob)["modify_ai"](name=DEFAULT_TINY, tagline="mine now")
    assert result["status"] == "error"
    missing = tool_set(server, bob)["modify_ai"](name="no-such", tagline="x")
    assert missing == {"status": "error", "content": [{"text": "no tiny named no-such"}]}
    stored = server.hub.tinys.get("alices")
    assert stored is not None and stored.system_prompt == "hers"

    result = tool_set(server, alice)["modify_ai"](name="alices", hero="", chips=[], tagline="t")
    assert result["status"] == "success", result
    assert text_of(result) == "Updated alices."
    stored = server.hub.tinys.get("alices")
    assert stored is not None
    assert (stored.system_prompt, stored.hero, stored.tagline) == ("hers", "", "t")
    assert stored.public_dict()["chips"] == list(DEFAULT_CHIPS)

    result = tool_set(server, alice)["modify_ai"](name="alices", visibility="private")
    assert text_of(result).startswith("Updated alices. Its new key (shown once): th_")

    owner = tool_set(server, server.hub.owner)["modify_ai"](name="alices", tagline="by owner")
    assert owner["status"] == "success"


async def test_get_tiny_hides_private_tinys_without_rights(
    start_hub: StartHub, closed_port: int
) -> None:
    server = await hub_up(start_hub, closed_port)
    alice, _ = member(server, "alice")
    bob, _ = member(server, "bob")
    tool_set(server, alice)["create_ai"](name="vault", systemPrompt="secret", visibility="private")

    hidden = {"status": "error", "content": [{"text": "no tiny named vault"}]}
    assert tool_set(server, None)["get_tiny"](name="vault") == hidden
    assert tool_set(server, bob)["get_tiny"](name="vault") == hidden
    assert tool_set(server, None)["get_tiny"](name="nope") == {
        "status": "error",
        "content": [{"text": "no tiny named nope"}],
    }

    own = tool_set(server, alice)["get_tiny"](name="vault")
    assert own["status"] == "success"
    assert json_of(own)["tiny"]["systemPrompt"] == "secret"
    assert tool_set(server, server.hub.owner)["get_tiny"](name="vault")["status"] == "success"

    public = tool_set(server, None)["get_tiny"](name=DEFAULT_TINY)
    assert public["status"] == "success"
    assert text_of(public) == "tiny: your companion"
    assert json_of(public)["tiny"]["chips"] == list(DEFAULT_CHIPS)


async def test_list_tiny_returns_total_and_summaries(start_hub: StartHub, closed_port: int) -> None:
    server = await hub_up(start_hub, closed_port)
    alice, _ = member(server, "alice")
    long_prompt = "p" * 1000
    long_data = "d" * 1000
    mine = tool_set(server, alice)
    mine["create_ai"](name="wordy", systemPrompt=long_prompt, data=long_data, tagline="talks")
    mine["create_ai"](name="quiet", systemPrompt="hush", visibility="private")

    result = mine["list_tiny"]()
    assert result["status"] == "success"
    listed = json_of(result)
    assert listed["total"] == 3
    assert [t["name"] for t in listed["tinys"]] == ["quiet", "wordy", "tiny"]
    assert text_of(result) == "3 tiny(s); this page: quiet, wordy, tiny."
    wordy = listed["tinys"][1]
    assert wordy == {
        "name": "wordy",
        "tagline": "talks",
        "visibility": "public",
        "prompt": long_prompt[:SUMMARY_CHARS],
        "data": long_data[:SUMMARY_CHARS],
        "skills": [],
    }
    assert len(wordy["prompt"]) == SUMMARY_CHARS == 300

    anonymous = json_of(tool_set(server, None)["list_tiny"]())
    assert [t["name"] for t in anonymous["tinys"]] == ["wordy", "tiny"]
    assert anonymous["total"] == 2

    page = json_of(mine["list_tiny"](limit=1, offset=1))
    assert (page["total"], [t["name"] for t in page["tinys"]]) == (3, ["wordy"])
    clamped = json_of(mine["list_tiny"](limit=0))
    assert len(clamped["tinys"]) == 1, "a limit below 1 is clamped to 1"
    assert [t["name"] for t in json_of(mine["list_tiny"](mine=True))["tinys"]] == [
        "quiet",
        "wordy",
    ]
    empty = mine["list_tiny"](query="zzz")
    assert text_of(empty) == "0 tiny(s); this page: none."
