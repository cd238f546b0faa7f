"""``tiny-hub jobs``, ``telegram`` and ``tools`` as a person types them on a terminal (a real
pty), against a real hub on 127.0.0.1 whose Telegram is a fake Bot API: what they make is what
the agent's own tools see afterwards (``schedule``, ``telegram``, the forged tier)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fakes.ollama import FakeOllama
from fakes.telegram import TOKEN, FakeTelegram
from hub.agent.tools import forge, schedule, telegram
from hub.agent.tools.context import ToolContext
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.test_cli import cli_env
from tests.test_cli_chat import Terminal
from tests.test_forge import SHA, FakeRaw
from tests.toolcall import result_text, use_tool

WORD_COUNT = {
    "name": "word_count",
    "description": "Count the words of a text.",
    "code": "({ text }) => ({ words: text.split(/\\s+/).filter(Boolean).length })",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


@pytest.fixture
async def raw() -> AsyncIterator[FakeRaw]:
    fake = FakeRaw()
    await fake.start()
    yield fake
    assert fake.runner is not None
    await fake.runner.cleanup()


@pytest.fixture
async def server(
    start_hub: StartHub, fake_ollama: FakeOllama, fake_telegram: FakeTelegram, raw: FakeRaw
) -> RunningServer:
    return await start_hub(
        ollama_host=fake_ollama.url,
        telegram_api_url=fake_telegram.url,
        telegram_long_poll_s=1,
        tool_raw_base_url=raw.url,
    )


class ByHand:
    """``tiny-hub ARGS --url <the hub> --token <the owner's>`` on a pty, off the event loop the
    hub runs on."""

    def __init__(self, server: RunningServer, tmp_path: Path, closed_port: int) -> None:
        token = owner_headers(server)["Authorization"].split()[1]
        self.env = cli_env(tmp_path / "client-home", closed_port)
        self.where = ["--url", server.url, "--token", token]

    async def run(
        self, *args: str, typed: tuple[tuple[bytes, bytes], ...] = (), exits: int = 0
    ) -> str:
        return await asyncio.to_thread(self._run, list(args), typed, exits)

    def _run(self, args: list[str], typed: tuple[tuple[bytes, bytes], ...], exits: int) -> str:
        terminal = Terminal([*args, *self.where], self.env, columns=120)
        try:
            for prompt, keys in typed:
                terminal.read_until(prompt)
                terminal.type(keys)
            shown = terminal.seen + _read_to_end(terminal)
        finally:
            status = terminal.close()
        text = shown.decode(errors="replace").replace("\r\n", "\n")
        assert status == exits, text
        return text


def _read_to_end(terminal: Terminal) -> bytes:
    """What the process shows until it ends and its side of the terminal closes."""
    got = b""
    while True:
        if select.select([terminal.master], [], [], 0.5)[0]:
            try:
                chunk = os.read(terminal.master, 65_536)
            except OSError:  # every end of the terminal's other side is closed
                break
            if not chunk:
                break
            got += chunk
        elif terminal.process.poll() is not None:
            break
    return got


@pytest.fixture
def by_hand(server: RunningServer, tmp_path: Path, closed_port: int) -> ByHand:
    return ByHand(server, tmp_path, closed_port)


async def test_a_job_made_by_hand_is_the_schedule_tools(
    by_hand: ByHand, server: RunningServer
) -> None:
    preview = await by_hand.run("jobs", "preview", "--every", "daily@07:00")
    assert preview.startswith("daily at 07:00 UTC")
    assert len(re.findall(r"^  \d{4}-\d{2}-\d{2} 07:00", preview, re.M)) == 5, preview
    added = await by_hand.run(
        "jobs", "add", "Summarise the news", "--every", "*/2h", "--title", "news"
    )
    job_id = re.search(r"scheduled \[(\w+)\] every 2 hours: news \(next ", added)
    assert job_id, added
    listed = result_text(await use_tool(server, schedule.schedule, action="list"))
    assert f"[{job_id.group(1)}] every 2 hours: news" in listed
    assert "1 of 10 jobs in use" in await by_hand.run("jobs", "list")
    await by_hand.run("jobs", "remove", job_id.group(1))
    assert "(no jobs)" in result_text(await use_tool(server, schedule.schedule, action="list"))


async def test_telegram_set_up_by_hand_is_the_telegram_tools(
    by_hand: ByHand, server: RunningServer, fake_telegram: FakeTelegram
) -> None:
    said = await by_hand.run(
        "telegram", "setup", "--tiny", "tiny", typed=((b"(not shown): ", TOKEN.encode() + b"\r"),)
    )
    assert TOKEN not in said, "the token is not echoed"
    assert "Connected @tiny_test_bot to the tiny tiny." in said
    assert "getMe" in fake_telegram.calls, "the token was checked with Telegram"
    allowed = await by_hand.run("telegram", "allow", "4242")
    assert "allowed chats: 4242" in allowed
    status = result_text(await use_tool(server, telegram.telegram, action="status"))
    assert status.startswith("@tiny_test_bot answers as tiny")
    assert "allowed chats: 4242" in status and TOKEN not in status
    assert "disabled" in await by_hand.run("telegram", "disable")
    status = result_text(await use_tool(server, telegram.telegram, action="status"))
    assert "answers as tiny: disabled" in status


async def test_a_tool_forged_by_hand_is_mounted_for_the_agent(
    by_hand: ByHand, server: RunningServer, tmp_path: Path
) -> None:
    tool_file = tmp_path / "word_count.json"
    tool_file.write_text(json.dumps(WORD_COUNT), encoding="utf-8")
    assert "forged my_word_count" in await by_hand.run("tools", "forge", str(tool_file))
    tried = await by_hand.run("tools", "run", "my_word_count", '{"text": "one two three"}')
    assert json.loads(tried.strip().splitlines()[-1]) == {"words": 3}
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    mounted = forge.forged_tools(ToolContext(server.hub, server.hub.owner, tiny))
    assert [t.tool_name for t in mounted] == ["my_word_count"]
    listed = await by_hand.run("tools", "list")
    assert re.search(r"^forged \(1\): my_word_count$", listed, re.M), listed
    turned = await by_hand.run("tools", "disable", "my_word_count")
    assert "my_word_count is off from the next message" in turned
    assert "my_word_count (off)" in await by_hand.run("tools", "list")


async def test_a_tool_installed_by_hand_follows_install_tools_rules(
    by_hand: ByHand, server: RunningServer, raw: FakeRaw
) -> None:
    shout = {"description": "Shout a text", "code": "({ text }) => text.toUpperCase()"}
    untrusted = raw.put(f"mallory/tools/{SHA}/shout.json", name="shout", **shout)
    refused = await by_hand.run("tools", "install", untrusted, exits=2)
    assert "mallory is neither in the hub's tool allowlist nor trusted by you" in refused
    assert raw.requested == [], "refused before anything was fetched"
    allowed = raw.put(f"strands-agents/tools/{SHA}/tools/shout.json", name="shout", **shout)
    assert f"installed my_shout from {allowed}" in await by_hand.run("tools", "install", allowed)
    tried = await by_hand.run("tools", "run", "my_shout", '{"text": "hey"}')
    assert tried.strip().splitlines()[-1] == '"HEY"'
    tiny = server.hub.tinys.get("tiny")
    assert tiny is not None
    mounted = forge.forged_tools(ToolContext(server.hub, server.hub.owner, tiny))
    assert [t.tool_name for t in mounted] == ["my_shout"]
