"""The terminal's side of a proposal and of undo, as a person types it (real processes, a real
pty for the question): ``tiny-hub chat`` asks yes/no after a turn proposed forgetting,
``tiny-hub confirm`` lists and answers proposals, ``tiny-hub memory forgotten`` and
``tiny-hub memory undo`` bring facts back. Against a real hub with the scripted fake model,
reached by ``--url`` and the owner's token, as over the LAN."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fakes.ollama import FakeOllama, Reply
from harness.waits import until
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.test_cli import cli_env, run
from tests.test_cli_chat import Terminal

FACTS = ("The user's bicycle is a green Brompton.", "The user is allergic to hazelnuts.")


def forget_all_turn() -> list[Reply]:
    call = {"function": {"name": "unlearn", "arguments": {"scope": "all"}}}
    return [Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Confirm it, please."])]


async def hub_with_facts(start_hub: StartHub, fake: FakeOllama) -> tuple[RunningServer, str]:
    server = await start_hub(ollama_host=fake.url)
    for fact in FACTS:
        server.hub.memory.learn(server.hub.owner.id, fact)
    token = owner_headers(server)["Authorization"].split()[1]
    return server, token


def chat_and_answer(args: list[str], env: dict[str, str], typed: bytes) -> bytes:
    """One ``tiny-hub chat`` on a terminal: wait for the question, type the answer, and return
    everything it showed until it ended."""
    terminal = Terminal(args, env)
    try:
        shown = terminal.read_until(b"Confirm? [y/N] ")
        terminal.type(typed)
        shown += terminal.read_until(b"\n", within_s=60)
        shown += terminal.read_until(b"\n", within_s=60)
    finally:
        assert terminal.close() == 0
    return shown


@pytest.mark.parametrize(
    ("typed", "said", "left"),
    [(b"y\r", b"Forgot 2 facts: ", 0), (b"\r", b"Declined: nothing was done.", 2)],
    ids=["yes forgets", "no answer is a no"],
)
async def test_chat_asks_after_the_reply(
    start_hub: StartHub,
    fake_ollama: FakeOllama,
    home: Path,
    closed_port: int,
    typed: bytes,
    said: bytes,
    left: int,
) -> None:
    server, token = await hub_with_facts(start_hub, fake_ollama)
    fake_ollama.script(*forget_all_turn())
    env = cli_env(home.parent / "cli", closed_port)
    args = ["chat", "--url", server.url, "--token", token, "forget everything about me"]
    shown = await asyncio.to_thread(chat_and_answer, args, env, typed)
    assert b"Confirm it, please." in shown
    assert b"The companion asks to forget everything: all 2 facts:" in shown
    assert all(fact.encode() in shown for fact in FACTS)
    assert said in shown
    assert server.hub.memory.count(server.hub.owner.id) == left


async def test_confirm_lists_and_answers_and_memory_undo_brings_facts_back(
    start_hub: StartHub, fake_ollama: FakeOllama, home: Path, closed_port: int
) -> None:
    server, token = await hub_with_facts(start_hub, fake_ollama)
    me = server.hub.owner.id
    fake_ollama.script(*forget_all_turn())
    env = cli_env(home.parent / "cli", closed_port)
    hub_args = ["--url", server.url, "--token", token]
    piped = await asyncio.to_thread(run, ["chat", *hub_args, "forget everything"], env)
    assert "(waiting for you: tiny-hub confirm pa_" in piped.stdout, "stdin is no terminal"
    pending_id = piped.stdout.split("tiny-hub confirm ")[1].split(",")[0]

    listed = await asyncio.to_thread(run, ["confirm", *hub_args], env)
    assert listed.returncode == 0 and pending_id in listed.stdout
    assert FACTS[0] in listed.stdout and "1 waiting for your answer" in listed.stdout
    done = await asyncio.to_thread(run, ["confirm", pending_id, *hub_args], env)
    assert done.returncode == 0 and done.stdout.startswith("Forgot 2 facts: ")
    assert server.hub.memory.count(me) == 0
    again = await asyncio.to_thread(run, ["confirm", pending_id, "--decline", *hub_args], env)
    assert again.returncode == 1 and "was already confirmed" in again.stdout

    forgotten = await asyncio.to_thread(run, ["memory", "forgotten", *hub_args], env)
    assert forgotten.returncode == 0 and "everything: 2 fact(s)" in forgotten.stdout
    assert all(fact in forgotten.stdout for fact in FACTS)
    undone = await asyncio.to_thread(run, ["memory", "undo", *hub_args], env)
    assert undone.returncode == 0 and "brought back 2 fact(s)" in undone.stdout
    await until(lambda: server.hub.memory.count(me) == 2, what="the facts are back")
    nothing = await asyncio.to_thread(run, ["memory", "undo", *hub_args], env)
    assert nothing.returncode == 2 and "nothing was forgotten recently" in nothing.stderr
