"""The Flipper driver end to end: real pyserial on a pty, the byte-faithful emulator on the
other end, the driver manager in a real hub, the tools through the agent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from drivers.flipper.tools import flipper_files, flipper_find, flipper_listen, flipper_status
from fakes.ollama import FakeOllama, Reply
from firmware_bridges.emulators.flipper import FlipperEmulator, FlipperState
from harness.waits import until
from hub import contracts as c
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.sse import post_chat, tool_in_a_turn
from tests.toolcall import result_text, use_tool


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[FlipperEmulator]:
    device = FlipperEmulator(FlipperState(), link=tmp_path / "flipper")
    device.start()
    yield device
    device.stop()


def flipper_state(server: RunningServer) -> str:
    records = [r for r in server.hub.drivers.records() if r["driver"] == "flipper"]
    return str(records[0]["status"]) if records else "absent"


@pytest.fixture
async def hub(
    start_hub: StartHub, fake_ollama: FakeOllama, emulator: FlipperEmulator, tmp_path: Path
) -> RunningServer:
    server = await start_hub(
        ollama_host=fake_ollama.url, drivers={"flipper": {"port": str(tmp_path / "flipper")}}
    )
    await until(lambda: flipper_state(server) == "online")
    return server


async def test_flipper_status_through_a_chat_turn(
    hub: RunningServer, fake_ollama: FakeOllama
) -> None:
    result, _transcript = await tool_in_a_turn(hub, fake_ollama, "flipper_status")
    assert result["status"] == "success", result
    summary = result["content"][1]["json"]
    assert (summary["model"], summary["name"], summary["firmware"]) == (
        "Flipper Zero",
        "Unyana",
        "1.4.3",
    )
    assert summary["battery"]["level"] is not None and summary["battery"]["state"]
    assert summary["running_app"] is None


async def test_api_drivers_lists_the_device(hub: RunningServer) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{hub.url}/api/drivers", headers=owner_headers(hub)) as response,
    ):
        body = await response.json()
    record = body["drivers"][0]
    assert (record["driver"], record["status"], record["transport"]) == (
        "flipper",
        "online",
        "serial",
    )
    assert "subghz" in record["capabilities"] and "flipper" in body["capabilities"]
    assert "Unyana" in record["detail"]


async def test_files_list_stat_read_and_refusals(hub: RunningServer) -> None:
    listed = await use_tool(hub, flipper_files, action="list", path="/ext/subghz")
    assert "garage.sub" in result_text(listed)
    stat = await use_tool(hub, flipper_files, action="stat", path="/ext/subghz/garage.sub")
    assert stat["content"][1]["json"]["type"] == "file"
    read = await use_tool(hub, flipper_files, action="read", path="/ext/subghz/garage.sub")
    assert result_text(read).startswith("Filetype: Flipper SubGhz")
    for path, problem in (
        ("/ext/../int/x", ".."),
        ("/etc/passwd", "only paths under"),
        ('/ext/a"b', "characters"),
        ("/ext/nothing.txt", "not exist"),
    ):
        refused = await use_tool(hub, flipper_files, action="stat", path=path)
        assert refused["status"] == "error" and problem in result_text(refused), (
            path,
            result_text(refused),
        )


async def test_listen_subghz_ir_and_nfc(hub: RunningServer, emulator: FlipperEmulator) -> None:
    heard = await use_tool(hub, flipper_listen, kind="subghz", seconds=1, frequency=433_920_000)
    details = heard["content"][1]["json"]
    assert details["count"] >= 1 and details["packets"][0].startswith("Princeton 24bit")
    ir = await use_tool(hub, flipper_listen, kind="ir", seconds=1)
    assert ir["content"][1]["json"]["signals"][0]["protocol"] == "NEC"
    nfc = await use_tool(hub, flipper_listen, kind="nfc", seconds=1)
    assert nfc["content"][1]["json"]["found"] == ["iso14443-3a", "mfu"]
    bad = await use_tool(hub, flipper_listen, kind="subghz", seconds=1, frequency=100)
    assert "MHz" in result_text(bad)
    too_long = await use_tool(hub, flipper_listen, kind="ir", seconds=61)
    assert "1 to 60" in result_text(too_long)


async def test_nfc_on_older_firmware_uses_detect(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    device = FlipperEmulator(FlipperState(nfc_style="detect"), link=tmp_path / "old")
    device.start()
    try:
        server = await start_hub(
            ollama_host=fake_ollama.url, drivers={"flipper": {"port": str(tmp_path / "old")}}
        )
        await until(lambda: flipper_state(server) == "online")
        nfc = await use_tool(server, flipper_listen, kind="nfc", seconds=1)
        assert nfc["content"][1]["json"]["found"] == ["iso14443-3a", "mfu"]
        assert "nfc detect" in device.sent
    finally:
        device.stop()


async def test_nfc_sub_shell_of_the_newest_firmware_through_flipper_listen(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    device = FlipperEmulator(FlipperState(nfc_style="shell"), link=tmp_path / "newest")
    device.start()
    try:
        server = await start_hub(
            ollama_host=fake_ollama.url, drivers={"flipper": {"port": str(tmp_path / "newest")}}
        )
        await until(lambda: flipper_state(server) == "online")
        device.push_nfc("iso14443-4a")
        for expected in (["iso14443-3a", "mfu"], ["iso14443-4a"]):
            nfc = await use_tool(server, flipper_listen, kind="nfc", seconds=1)
            assert nfc["content"][1]["json"]["found"] == expected, result_text(nfc)
        status = await use_tool(server, flipper_status)  # the main shell again
        assert status["status"] == "success", result_text(status)
        nfc_lines = [
            line for line in device.sent if line in ("nfc scanner", "nfc", "scanner", "exit")
        ]
        assert nfc_lines == ["nfc scanner", "scanner", "exit", "nfc", "scanner", "exit"]
        assert device.state.transmit_log == []
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{server.url}/api/drivers/audit", headers=owner_headers(server)) as response,
        ):
            audited = [row["command"] for row in (await response.json())["commands"]]
        sent = [line for line in device.sent if line]
        assert sent == [line for line in reversed(audited) if line and not line.startswith("rpc ")]
    finally:
        device.stop()


@pytest.mark.parametrize(
    "garbled", [bytes.fromhex("0803ffffff"), b""], ids=["does-not-decode", "empty"]
)
async def test_a_closed_rpc_session_is_one_retried_command_for_the_tools(
    hub: RunningServer, emulator: FlipperEmulator, garbled: bytes
) -> None:
    """The Flipper closes its RPC session after a request it cannot decode (line noise); the
    tool's read still succeeds, and the next tool finds the text shell."""
    emulator.replace_next_rpc_request(garbled)
    read = await use_tool(hub, flipper_files, action="read", path="/ext/subghz/garage.sub")
    assert read["status"] == "success" and result_text(read).startswith("Filetype:")
    assert emulator.rpc_log[0] == "decode_error" and emulator.rpc_log.count("stop_session") == 1
    listed = await use_tool(hub, flipper_files, action="list", path="/ext/infrared")
    assert "tv.ir" in result_text(listed)
    assert flipper_state(hub) == "online"


async def test_find_signals_and_every_command_is_audited(
    hub: RunningServer, emulator: FlipperEmulator
) -> None:
    found = await use_tool(hub, flipper_find, signal=True)
    assert "attached to this hub over USB" in result_text(found)
    assert True in emulator.state.vibro_log and emulator.state.led_log
    assert emulator.state.alerts == 1, "the RPC alert beeps, blinks and vibrates"
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{hub.url}/api/drivers/audit", headers=owner_headers(hub)) as response,
    ):
        audited = [row["command"] for row in (await response.json())["commands"]]
    assert {"device_info", "vibro 1", "vibro 0", "rpc play_audiovisual_alert"} <= set(audited)
    sent = [line for line in emulator.sent if line]
    cli_audited = [line for line in reversed(audited) if line and not line.startswith("rpc ")]
    assert sent == cli_audited, "nothing unaudited was sent"
    assert emulator.state.transmit_log == [], "no transmit command is reachable"


async def test_only_the_owner_may_use_the_attached_flipper(
    hub: RunningServer, emulator: FlipperEmulator
) -> None:
    guest = hub.hub.identity.add_user("guest")
    sent_before = list(emulator.sent)
    for caller, said in ((None, "Login required"), (guest, "only the owner of this hub")):
        read = await use_tool(
            hub, flipper_files, caller=caller, action="read", path="/ext/subghz/garage.sub"
        )
        assert read["status"] == "error" and said in result_text(read)
        heard = await use_tool(hub, flipper_listen, caller=caller, kind="ir", seconds=1)
        assert heard["status"] == "error" and said in result_text(heard)
        found = await use_tool(hub, flipper_find, caller=caller, signal=True)
        assert "attached to this hub" not in result_text(found)
    assert emulator.sent == sent_before and emulator.state.alerts == 0, "the Flipper was not asked"


async def test_unplug_goes_offline_and_replug_comes_back(
    hub: RunningServer, emulator: FlipperEmulator
) -> None:
    emulator.unplug()
    await until(lambda: flipper_state(hub) == "offline")
    gone = await use_tool(hub, flipper_status)
    assert gone["status"] == "error" and "Flipper is not connected" in result_text(gone)
    emulator.replug()
    await until(lambda: flipper_state(hub) == "online")
    back = await use_tool(hub, flipper_status)
    assert back["status"] == "success"
    assert len([r for r in hub.hub.drivers.records() if r["driver"] == "flipper"]) == 1


async def test_unplug_mid_command_is_a_clean_error(
    hub: RunningServer, emulator: FlipperEmulator
) -> None:
    listening = asyncio.create_task(use_tool(hub, flipper_listen, kind="subghz", seconds=30))
    await until(lambda: any(line.startswith("subghz rx") for line in emulator.sent))
    emulator.unplug()
    result = await asyncio.wait_for(listening, 10)
    assert result["status"] == "error" and "not connected" in result_text(result)
    assert (await hub_health(hub)) == 200


async def test_a_stalled_or_garbled_device_is_an_error_not_a_hang(
    hub: RunningServer, emulator: FlipperEmulator
) -> None:
    emulator.garbage_next(b"\x00\xff\xfe garbage \x1b[99m")
    garbled = await use_tool(hub, flipper_files, action="list", path="/ext")
    assert garbled["status"] in ("success", "error")
    emulator.mute_prompt_next()
    muted = await use_tool(hub, flipper_files, action="list", path="/ext")
    assert muted["status"] == "error" and "did not finish" in result_text(muted)
    assert (await hub_health(hub)) == 200


async def test_without_a_flipper_the_tools_say_so(
    start_hub: StartHub, fake_ollama: FakeOllama, tmp_path: Path
) -> None:
    server = await start_hub(
        ollama_host=fake_ollama.url, drivers={"flipper": {"port": str(tmp_path / "none")}}
    )
    result = await use_tool(server, flipper_status)
    assert "Flipper is not connected" in result_text(result)
    found = await use_tool(server, flipper_find)
    assert "none of your devices reports one" in result_text(found)


async def hub_health(server: RunningServer) -> int:
    async with aiohttp.ClientSession() as http, http.get(f"{server.url}/api/health") as response:
        return response.status


@pytest.mark.parametrize(
    ("tool", "arguments", "expect"),
    [
        (
            "flipper_listen",
            {"kind": "ir", "seconds": 1},
            "2 decoded: NEC address 0x04 command 0x08; NEC address 0x04 command 0x08 (repeat).",
        ),
        (
            "flipper_listen",
            {"kind": "nfc", "seconds": 1},
            "Listened 1 s for nfc: found iso14443-3a, mfu.",
        ),
        (
            "flipper_files",
            {"action": "list", "path": "/ext/infrared"},
            "Files in /ext/infrared: tv.ir.",
        ),
        ("flipper_find", {"signal": True}, "beeped, blinked and vibrated"),
        ("flipper_files", {"action": "read", "path": "/ext/../etc/passwd"}, "'..' is refused"),
    ],
)
async def test_every_tool_through_a_chat_turn(
    hub: RunningServer, fake_ollama: FakeOllama, tool: str, arguments: dict[str, Any], expect: str
) -> None:
    call = {"function": {"name": tool, "arguments": arguments}}
    fake_ollama.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Done."]))
    transcript = await post_chat(
        hub.url, {"messages": [{"role": "user", "content": f"use {tool}"}]}, owner_headers(hub)
    )
    result = transcript.of_type(c.EV_AFTER_TOOL)[0]["toolResult"]
    shown = " ".join(block.get("text", "") for block in result["content"])
    assert expect in shown, result
    assert transcript.text == "Done."
