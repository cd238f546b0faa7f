"""Forged tools through a running hub: create, call as my_<name>, remove, install from GitHub
(a fake raw-content server on loopback), the marketplace, manage_tools list by tier.

Every runaway tool is a tool error the model reads, and the hub answers after it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub import contracts as c
from hub.agent.tools import mount_tools
from hub.agent.tools.context import ToolContext
from hub.api.server import RunningServer
from hub.forge.store import ForgeStore, public_tools
from hub.people.identity import User
from hub.people.preferences import set_tool_enabled
from tests.confirming import confirmed_by
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat
from tests.test_forge_sandbox import in_a_call
from tests.test_mcp_clients import stdio_notes
from tests.toolcall import call_tool, result_text

SHA = "0123456789abcdef0123456789abcdef01234567"
COUNT_WORDS = "({ text }) => ({ words: text.split(/\\s+/).filter(Boolean).length })"
WORDS_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


@dataclass
class FakeRaw:
    """raw.githubusercontent.com on loopback: files by path, every request recorded."""

    files: dict[str, bytes] = field(default_factory=dict)
    requested: list[str] = field(default_factory=list)
    url: str = ""
    runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{path:.+}", self._file)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def _file(self, request: web.Request) -> web.Response:
        path = request.match_info["path"]
        self.requested.append(path)
        if path not in self.files:
            return web.Response(status=404, text="404: Not Found")
        return web.Response(body=self.files[path], content_type="text/plain")

    def put(self, path: str, **tool: Any) -> str:
        self.files[path] = json.dumps(tool).encode()
        return f"{self.url}/{path}"


@pytest.fixture
async def raw() -> AsyncIterator[FakeRaw]:
    fake = FakeRaw()
    await fake.start()
    yield fake
    assert fake.runner is not None
    await fake.runner.cleanup()


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama, raw: FakeRaw) -> RunningServer:
    return await start_hub(
        ollama_host=fake_ollama.url, tool_raw_base_url=raw.url, tool_cpu_limit_s=0.5
    )


def turn(server: RunningServer, user: User | None) -> ToolContext:
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    return ToolContext(server.hub, user, tiny)


def tool_of(ctx: ToolContext, name: str) -> Any:
    return next(t for t in mount_tools(ctx).tools if t.tool_name == name)


async def use(ctx: ToolContext, tool: str, /, **arguments: Any) -> dict[str, Any]:
    result = call_tool(tool_of(ctx, tool), ctx, **arguments)
    return dict(await result if inspect.isawaitable(result) else result)


async def run_mounted(ctx: ToolContext, tool: str, /, **input: Any) -> dict[str, Any]:
    mounted = tool_of(ctx, tool)
    tool_use = {"toolUseId": "t1", "name": tool, "input": input}
    events = [event async for event in mounted.stream(tool_use, {})]
    return dict(events[-1].tool_result)


async def forge(ctx: ToolContext, name: str, code: str, **extra: Any) -> dict[str, Any]:
    return await use(ctx, "create_tool", name=name, description=f"{name} tool", code=code, **extra)


async def health_ok(server: RunningServer) -> bool:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{server.url}/api/health") as response,
    ):
        return response.status == 200


def tool_call(tool: str, **arguments: Any) -> Reply:
    return Reply(chunks=[], tool_calls=[{"function": {"name": tool, "arguments": arguments}}])


def member(server: RunningServer, name: str) -> tuple[User, dict[str, str]]:
    user = server.hub.identity.add_user(name)
    token = server.hub.identity.issue_token(user, "test")
    return user, {"Authorization": f"Bearer {token}"}


# --- create_tool, my_<name>, remove_tool -------------------------------------------------


async def test_a_forged_tool_is_called_from_the_next_message(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    bea, headers = member(server, "bea")
    fake_ollama.script(
        tool_call(
            "create_tool",
            name="count_words",
            description="Count the words in a text",
            code=COUNT_WORDS,
            input_schema=WORDS_SCHEMA,
        ),
        Reply(chunks=["Made it."]),
    )
    first = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "forge"}]}, headers
    )
    assert first.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]["status"] == "success"
    offered = [t["function"]["name"] for t in fake_ollama.requests[0]["tools"]]
    assert "my_count_words" not in offered  # not in the turn that made it

    fake_ollama.script(tool_call("my_count_words", text="one two  three"), Reply(chunks=["3"]))
    second = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "count"}]}, headers
    )
    after = second.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert after["status"] == "success"
    offered = [t["function"]["name"] for t in fake_ollama.requests[-2]["tools"]]
    assert "my_count_words" in offered
    seen = [m["content"] for m in fake_ollama.requests[-1]["messages"] if m["role"] == "tool"]
    assert any('{"words": 3}' in content for content in seen)  # the result reached the model
    assert public_tools(server.hub.db, bea.id)[0]["code"] == COUNT_WORDS


async def test_a_runaway_tool_is_a_tool_error_in_the_chat_and_the_hub_stays_up(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    _, headers = member(server, "cy")
    ctx = turn(server, server.hub.identity.by_login("cy"))
    assert (await forge(ctx, "spin", "() => { while (true) {} }"))["status"] == "success"
    fake_ollama.script(tool_call("my_spin"), Reply(chunks=["It stopped."]))
    chat = await post_chat(server.url, {"messages": [{"role": "user", "content": "spin"}]}, headers)
    after = chat.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert after["status"] == "error" and "CPU-time limit" in after["error"]
    assert chat.text == "It stopped."
    assert await health_ok(server)


async def test_a_result_that_is_not_unicode_is_a_tool_error_not_the_end_of_the_turn(
    server: RunningServer, fake_ollama: FakeOllama
) -> None:
    _, headers = member(server, "di")
    ctx = turn(server, server.hub.identity.by_login("di"))
    assert (await forge(ctx, "lone", "() => ({ s: '\\ud800' })"))["status"] == "success"
    fake_ollama.script(tool_call("my_lone"), Reply(chunks=["No luck."]))
    chat = await post_chat(server.url, {"messages": [{"role": "user", "content": "go"}]}, headers)
    after = chat.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    assert after["status"] == "error" and "not valid Unicode" in after["error"]
    assert chat.of_type(c.EV_ERROR) == []
    assert chat.text == "No luck."


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("() => new Uint8Array(1024 ** 3).fill(1).length", "memory"),
        # a heap that grows in a loop meets the memory or the CPU-time limit first, as fast as
        # the machine is: either way it is stopped
        ("() => { const a = []; while (true) a.push([a.length]); }", "memory|CPU-time"),
        ("() => require('fs')", "require is not defined"),
        ("() => process.env", "process is not defined"),
        ("() => globalThis", "globalThis is not defined"),
        ("() => eval('1')", "eval is not defined"),
        ("() => Function('return this')()", "Function is not defined"),
    ],
)
async def test_bad_tools_are_tool_errors_and_the_hub_stays_up(
    server: RunningServer, code: str, says: str
) -> None:
    ctx = turn(server, server.hub.owner)
    assert (await forge(ctx, "bad", code))["status"] == "success"
    result = await run_mounted(ctx, "my_bad")
    assert result["status"] == "error"
    assert result["content"][0]["text"].startswith("my_bad stopped:")
    assert any(word in result["content"][0]["text"] for word in says.split("|"))
    assert await health_ok(server)
    assert (await run_mounted(turn(server, server.hub.owner), "my_bad"))["status"] == "error"


async def test_fetch_to_loopback_is_refused_and_nothing_connects(server: RunningServer) -> None:
    connections = 0

    async def count(request: web.Request) -> web.Response:
        nonlocal connections
        connections += 1
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", count)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        ctx = turn(server, server.hub.owner)
        code = f"async () => (await fetch('http://127.0.0.1:{port}')).text()"
        assert (await forge(ctx, "peek", code))["status"] == "success"
        result = await run_mounted(ctx, "my_peek")
        assert result["status"] == "error" and "fetch failed" in result["content"][0]["text"]
        assert connections == 0
    finally:
        await runner.cleanup()


async def test_create_refuses_a_5_kb_source_and_needs_an_account(server: RunningServer) -> None:
    ctx = turn(server, server.hub.owner)
    big = "() => " + "1 + " * 1250 + "1"
    assert len(big.encode()) > 5000
    refused = await forge(ctx, "big", big)
    assert refused["status"] == "error" and "at most 4096" in result_text(refused)
    assert ForgeStore(server.hub.db).named(server.hub.owner.id, "big") is None
    anonymous = await forge(turn(server, None), "x", "() => 1")
    assert result_text(anonymous) == c.LOGIN_REQUIRED


async def test_create_refuses_what_is_not_one_arrow_function(server: RunningServer) -> None:
    ctx = turn(server, server.hub.owner)
    refused = await forge(ctx, "fn", "function () { return this }")
    assert refused["status"] == "error" and "one arrow function" in result_text(refused)
    broken = await forge(ctx, "broken", "(x) => {")
    assert broken["status"] == "error" and "SyntaxError" in result_text(broken)
    assert ForgeStore(server.hub.db).of(server.hub.owner.id) == []


async def test_remove_tool_unmounts_it(server: RunningServer) -> None:
    ctx = turn(server, server.hub.owner)
    await forge(ctx, "hello", "() => 'hi'")
    assert "my_hello" in mount_tools(ctx).names
    proposed = await use(ctx, "remove_tool", name="my_hello")
    assert "my_hello" in mount_tools(ctx).names, "the person confirms a removal in their app"
    assert await confirmed_by(server.hub, server.hub.owner, proposed) == "Removed my_hello."
    assert "my_hello" not in mount_tools(ctx).names
    again = await use(ctx, "remove_tool", name="hello")
    assert again["status"] == "error" and "no forged tool" in result_text(again)


async def test_manage_tools_lists_every_tool_with_its_tier(server: RunningServer) -> None:
    owner = server.hub.owner
    skills = [{"name": "recipes", "description": "How to cook", "instructions": "Butter."}]
    chef, _ = server.hub.tinys.create(
        owner, {"name": "chef", "systemPrompt": "x", "skills": skills}
    )
    ctx = ToolContext(server.hub, owner, chef)
    await forge(ctx, "hello", "() => 'hi'")
    set_tool_enabled(server.hub.db, owner, "http", enabled=False)
    listed = (await use(ctx, "manage_tools", action="list"))["content"][1]["json"]["tools"]
    by_name = {t["name"]: t for t in listed}
    assert by_name["my_hello"] == {"name": "my_hello", "tier": "forged", "on": True}
    assert by_name["http"] == {"name": "http", "tier": "built-in", "on": False}
    assert by_name["recipes"] == {"name": "recipes", "tier": "dynamic", "on": True}
    assert by_name["create_tool"]["tier"] == "built-in" and by_name["create_tool"]["on"]


# --- install_tool ------------------------------------------------------------------------


async def test_install_tool_from_an_allowlisted_owner(server: RunningServer, raw: FakeRaw) -> None:
    ctx = turn(server, server.hub.owner)
    url = raw.put(
        f"strands-agents/tools/{SHA}/tools/shout.json",
        name="shout",
        description="Shout a text",
        inputSchema={"type": "object", "properties": {"text": {"type": "string"}}},
        code="({ text }) => text.toUpperCase()",
    )
    installed = await use(ctx, "install_tool", url=url)
    assert installed["status"] == "success", result_text(installed)
    assert (await run_mounted(ctx, "my_shout", text="hey"))["content"][0]["text"] == '"HEY"'
    stored = ForgeStore(server.hub.db).named(server.hub.owner.id, "shout")
    assert stored is not None and stored.source_url == url


async def test_install_tool_refuses_other_owners_until_trusted(
    server: RunningServer, raw: FakeRaw
) -> None:
    ctx = turn(server, server.hub.owner)
    url = raw.put(f"mallory/tools/{SHA}/x.json", name="x", description="x", code="() => 1")
    refused = await use(ctx, "install_tool", url=url)
    assert refused["status"] == "error" and "trust" in result_text(refused)
    assert raw.requested == []  # refused before anything was fetched
    assert (await use(ctx, "manage_tools", action="trust", name="mallory"))["status"] == "success"
    assert (await use(ctx, "install_tool", url=url))["status"] == "success"
    await use(ctx, "manage_tools", action="untrust", name="mallory")
    assert (await use(ctx, "install_tool", url=url))["status"] == "error"


async def test_install_tool_refuses_a_url_without_a_commit_sha(
    server: RunningServer, raw: FakeRaw
) -> None:
    ctx = turn(server, server.hub.owner)
    url = raw.put("strands-agents/tools/main/x.json", name="x", description="x", code="() => 1")
    refused = await use(ctx, "install_tool", url=url)
    assert refused["status"] == "error" and "commit SHA" in result_text(refused)
    elsewhere = await use(ctx, "install_tool", url=f"https://example.com/strands-agents/t/{SHA}/x")
    assert elsewhere["status"] == "error"
    other = raw.put(f"mallory/t/{SHA}/x.json", name="x", description="x", code="() => 1")
    for sneaky in (
        f"{raw.url}/strands-agents/t/{SHA}/../../../mallory/t/{SHA}/x.json",
        f"{raw.url}/strands-agents/t/{SHA}/%2e%2e/%2E%2E/../mallory/t/{SHA}/x.json",
        f"{other}?owner=strands-agents",
    ):
        refused = await use(ctx, "install_tool", url=sneaky)
        assert refused["status"] == "error", sneaky
    assert raw.requested == []


async def test_install_tool_decides_on_the_url_it_fetches(
    server: RunningServer, raw: FakeRaw
) -> None:
    """Tabs, newlines and carriage returns are dropped by URL parsing, after which the dot
    segments resolve to another owner: such a URL is refused before any fetch. A URL whose dot
    segments resolve to an allowed owner's file is that file: the one checked and fetched."""
    person, _ = member(server, "mo")
    ctx = turn(server, person)
    raw.put(f"evil/r/{SHA}/t.json", name="from_evil", description="x", code="() => 1")
    for gap in ("\t", "\n", "\r", "\r\n"):
        dots = f"{gap}../" * 4
        sneaky = f"{raw.url}/strands-agents/r/{SHA}/{dots}evil/r/{SHA}/t.json"
        refused = await use(ctx, "install_tool", url=sneaky)
        assert refused["status"] == "error", repr(sneaky)
        assert "control character" in result_text(refused)
    assert raw.requested == []
    assert ForgeStore(server.hub.db).named(person.id, "from_evil") is None
    good = raw.put(f"strands-agents/r/{SHA}/t.json", name="good", description="x", code="() => 2")
    roundabout = f"{raw.url}/evil/r/{SHA}/../../../strands-agents/r/{SHA}/t.json"
    assert (await use(ctx, "install_tool", url=roundabout))["status"] == "success"
    assert raw.requested == [f"strands-agents/r/{SHA}/t.json"]
    stored = ForgeStore(server.hub.db).named(person.id, "good")
    assert stored is not None and stored.source_url == good


async def test_a_changed_file_at_the_same_sha_is_refused(
    server: RunningServer, raw: FakeRaw
) -> None:
    ctx = turn(server, server.hub.owner)
    path = f"strands-agents/tools/{SHA}/t.json"
    url = raw.put(path, name="t", description="t", code="() => 'first'")
    assert (await use(ctx, "install_tool", url=url))["status"] == "success"
    raw.put(path, name="t", description="t", code="() => 'swapped'")
    refused = await use(ctx, "install_tool", url=url)
    assert refused["status"] == "error" and "changed" in result_text(refused)
    stored = ForgeStore(server.hub.db).named(server.hub.owner.id, "t")
    assert stored is not None and "first" in stored.code


async def test_an_installed_file_that_is_not_a_tool_is_refused(
    server: RunningServer, raw: FakeRaw
) -> None:
    ctx = turn(server, server.hub.owner)
    raw.files[f"strands-agents/t/{SHA}/a.json"] = b"not json"
    refused = await use(ctx, "install_tool", url=f"{raw.url}/strands-agents/t/{SHA}/a.json")
    assert refused["status"] == "error" and "not a JSON tool file" in result_text(refused)
    url = raw.put(f"strands-agents/t/{SHA}/b.json", name="b", description="b", code="1 + 1")
    refused = await use(ctx, "install_tool", url=url)
    assert refused["status"] == "error" and "one arrow function" in result_text(refused)


# --- the marketplace ---------------------------------------------------------------------


async def test_marketplace_browse_install_and_check_updates(
    server: RunningServer, raw: FakeRaw
) -> None:
    bob = server.hub.identity.add_user("bob")
    ann = server.hub.identity.add_user("ann")
    bobs, anns = turn(server, bob), turn(server, ann)
    await forge(bobs, "count_words", COUNT_WORDS, input_schema=WORDS_SCHEMA)
    browsed = await use(anns, "marketplace", action="browse", query="count")
    found = browsed["content"][1]["json"]["tools"]
    assert [(t["name"], t["author"]) for t in found] == [("my_count_words", f"@{bob.login}")]
    assert found[0]["code"] == COUNT_WORDS
    installed = await use(anns, "marketplace", action="install", id=found[0]["id"])
    assert installed["status"] == "success"
    ran = await run_mounted(anns, "my_count_words", text="a b")
    assert ran["content"][0]["text"] == '{"words": 2}'
    url = raw.put(f"strands-agents/t/{SHA}/c.json", name="c", description="c", code="() => 1")
    await use(anns, "install_tool", url=url)
    raw.files["strands-agents/t/HEAD/c.json"] = raw.files[f"strands-agents/t/{SHA}/c.json"]

    states = (await use(anns, "marketplace", action="check_updates"))["content"][1]["json"]
    assert {s["name"]: s["state"] for s in states["updates"]} == {
        "my_count_words": "current",
        "my_c": "current",
    }
    await forge(bobs, "count_words", "({ text }) => text.length", input_schema=WORDS_SCHEMA)
    raw.put("strands-agents/t/HEAD/c.json", name="c", description="c", code="() => 2")
    states = (await use(anns, "marketplace", action="check_updates"))["content"][1]["json"]
    assert {s["name"]: s["state"] for s in states["updates"]} == {
        "my_count_words": "changed",
        "my_c": "changed",
    }
    own = await use(bobs, "marketplace", action="install", id=found[0]["id"])
    assert own["status"] == "error" and "already yours" in result_text(own)


async def test_manage_tools_list_in_a_turn_shows_the_mcp_tier(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    notes = stdio_notes(tmp_path / "notes.pid")
    server = await start_hub(ollama_host=fake_ollama.url, mcp_servers={"notes": notes})
    await forge(turn(server, server.hub.owner), "hello", "() => 'hi'")
    fake_ollama.script(tool_call("manage_tools", action="list"), Reply(chunks=["Listed."]))
    chat = await post_chat(
        server.url, {"messages": [{"role": "user", "content": "list"}]}, {**owner_headers(server)}
    )
    after = chat.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    listed = next(b["json"]["tools"] for b in after["content"] if "json" in b)
    tiers = {t["name"]: t["tier"] for t in listed}
    assert tiers["notes_add"] == "mcp"
    assert tiers["my_hello"] == "forged"
    assert tiers["learn"] == "built-in"


async def test_create_tool_takes_the_schema_as_json_text_too(server: RunningServer) -> None:
    ctx = turn(server, server.hub.owner)
    made = await forge(ctx, "count", COUNT_WORDS, input_schema=json.dumps(WORDS_SCHEMA))
    assert made["status"] == "success"
    mounted = tool_of(ctx, "my_count")
    assert mounted.tool_spec["inputSchema"]["json"]["required"] == ["text"]
    bad = await forge(ctx, "odd", "() => 1", input_schema='{"type": "array"}')
    assert bad["status"] == "error" and "input_schema" in result_text(bad)


async def test_an_install_never_replaces_a_tool_of_the_same_name_from_elsewhere(
    server: RunningServer, raw: FakeRaw
) -> None:
    ctx = turn(server, server.hub.owner)
    await forge(ctx, "shout", "() => 'mine'")
    url = raw.put(f"strands-agents/t/{SHA}/s.json", name="shout", description="s", code="() => 1")
    refused = await use(ctx, "install_tool", url=url)
    assert refused["status"] == "error" and "remove_tool it first" in result_text(refused)
    stored = ForgeStore(server.hub.db).named(server.hub.owner.id, "shout")
    assert stored is not None and "mine" in stored.code
    await confirmed_by(server.hub, server.hub.owner, await use(ctx, "remove_tool", name="shout"))
    assert (await use(ctx, "install_tool", url=url))["status"] == "success"
    newer = "fedcba9876543210fedcba9876543210fedcba98"
    update = raw.put(
        f"strands-agents/t/{newer}/s.json", name="shout", description="s", code="() => 2"
    )
    assert (await use(ctx, "install_tool", url=update))["status"] == "success"  # an update
    assert (await run_mounted(ctx, "my_shout"))["content"][0]["text"] == "2"
    bad_owner = await use(ctx, "manage_tools", action="trust", name="not/an owner")
    assert bad_owner["status"] == "error"


async def test_a_sandbox_crash_mid_call_is_a_tool_error_and_the_hub_stays_up(
    start_hub: StartHub, fake_ollama: FakeOllama
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url, tool_cpu_limit_s=30.0)
    ctx = turn(server, server.hub.owner)
    await forge(ctx, "spin", "() => { while (true) {} }")
    [pid] = server.hub.sandbox.child_pids()  # the child that checked the source stays warm
    call = asyncio.ensure_future(run_mounted(ctx, "my_spin"))
    await until(lambda: in_a_call(server.hub.sandbox), what="the call is in the child")
    os.kill(pid, signal.SIGSEGV)  # what a crash in native code looks like from outside
    result = await call
    assert result["status"] == "error" and "crashed its sandbox" in result_text(result)
    assert await health_ok(server)


async def test_every_forge_tool_needs_an_account(server: RunningServer) -> None:
    nobody = turn(server, None)
    calls = {
        "create_tool": {"name": "x", "description": "x", "code": "() => 1"},
        "remove_tool": {"name": "x"},
        "install_tool": {"url": f"https://raw.githubusercontent.com/strands-agents/t/{SHA}/x"},
        "marketplace": {"action": "browse"},
        "manage_tools": {"action": "list"},
    }
    for tool, arguments in calls.items():
        assert result_text(await use(nobody, tool, **arguments)) == c.LOGIN_REQUIRED, tool
    assert not [n for n in mount_tools(nobody).names if n.startswith("my_")]


async def test_the_marketplace_checks_a_tool_again_before_installing_it(
    server: RunningServer,
) -> None:
    bob = server.hub.identity.add_user("bob")
    await forge(turn(server, bob), "fine", "() => 1")
    # A row changed behind the tools' back (by hand, or by an older hub) is checked again.
    server.hub.db.execute("UPDATE forged_tools SET code = 'function () { return this }'")
    [(original, _)] = ForgeStore(server.hub.db).browse()
    ann = turn(server, server.hub.identity.add_user("ann"))
    refused = await use(ann, "marketplace", action="install", id=original.id)
    assert refused["status"] == "error" and "one arrow function" in result_text(refused)
    missing = await use(ann, "marketplace", action="install", id=original.id + 100)
    assert missing["status"] == "error" and "no forged tool has that id" in result_text(missing)
    odd = await use(ann, "marketplace", action="sell")
    assert odd["status"] == "error"


async def test_install_tool_refuses_a_file_over_16_kb(server: RunningServer, raw: FakeRaw) -> None:
    path = f"strands-agents/t/{SHA}/big.json"
    raw.files[path] = json.dumps({"name": "big", "description": "x" * 20000}).encode()
    refused = await use(turn(server, server.hub.owner), "install_tool", url=f"{raw.url}/{path}")
    assert refused["status"] == "error" and "over 16384 bytes" in result_text(refused)
