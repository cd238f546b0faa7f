"""The nicla_voice_* tools in a real hub: the emulated board behind bleak's backend seam, the
driver started by the hub's own manager, real speech-to-text, and a phone playing the relay."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from drivers.nicla_voice.tools import (
    nicla_voice_record,
    nicla_voice_status,
    nicla_voice_transcript,
    nicla_voice_transcripts,
    nicla_voice_wakes,
)
from drivers.transports.ble_presence import BleAdvertisements
from fakes.ollama import FakeOllama
from firmware_bridges.emulators.nicla_voice import EmulatedNiclaVoice
from harness.waits import until
from hub import contracts as c
from hub.api.server import RunningServer
from media.audio import read_wav
from tests.conftest import StartHub
from tests.daemon import PythonDaemon, enroll
from tests.sse import tool_in_a_turn
from tests.toolcall import result_text, use_tool


@dataclass
class Rig:
    server: RunningServer
    board: EmulatedNiclaVoice


def voice_state(server: RunningServer) -> str:
    found = [r["status"] for r in server.hub.drivers.records() if r["driver"] == "nicla_voice"]
    return str(found[0]) if found else "absent"


@pytest.fixture
async def rig(start_hub: StartHub, fake_ollama: FakeOllama) -> AsyncIterator[Rig]:
    board = EmulatedNiclaVoice(pace=0.0)
    server = await start_hub(
        ollama_host=fake_ollama.url,
        hardware={
            "drivers": {"nicla_voice": {"backend": board.client_backend()}},
            "advertisements": BleAdvertisements(0.02, board.scanner_backend()),
            "backoff_min_s": 0.0,
        },
    )
    await until(lambda: voice_state(server) == "online")
    yield Rig(server, board)


def heard_a_wake(server: RunningServer) -> bool:
    hub = server.hub
    return any(e.kind == "nicla_wake" for e in hub.devices.events.recent(hub.owner.id))


async def test_a_wake_lands_on_the_owners_ring_and_in_the_tools(rig: Rig) -> None:
    hub = rig.server.hub
    assert rig.board.wake("NN0:hey_arduino")
    await until(lambda: heard_a_wake(rig.server))
    event = next(e for e in hub.devices.events.recent(hub.owner.id) if e.kind == "nicla_wake")
    assert event.detail["label"] == "NN0:hey_arduino"
    assert event.device_id is not None and event.device_id.startswith("nicla_voice:")
    wakes = await use_tool(rig.server, nicla_voice_wakes)
    assert wakes["content"][1]["json"]["wakes"][0]["label"] == "NN0:hey_arduino"
    status = await use_tool(rig.server, nicla_voice_status)
    assert status["status"] == "success", status
    assert "last wake 'NN0:hey_arduino'" in result_text(status) and "battery 87%" in result_text(
        status
    )


async def test_record_through_a_chat_turn_is_transcribed_kept_and_announced(
    rig: Rig, fake_ollama: FakeOllama
) -> None:
    result, _transcript = await tool_in_a_turn(
        rig.server, fake_ollama, "nicla_voice_record", {"seconds": 2}
    )
    assert result["status"] == "success", result
    assert "kitchen light" in result["content"][0]["text"].lower()
    kept = result["content"][1]["json"]["transcript"]
    hub, owner = rig.server.hub, rig.server.hub.owner.id
    wav, content_type = hub.devices.media.get(owner, kept["media"].removeprefix("/media/"))
    assert content_type == "audio/wav" and read_wav(wav).rate == 16_000
    assert read_wav(wav).seconds == pytest.approx(2.0, abs=0.01)
    events = [e for e in hub.devices.events.recent(owner) if e.kind == "nicla_transcript"]
    assert events[-1].detail["id"] == kept["id"]
    listed = await use_tool(rig.server, nicla_voice_transcripts)
    assert kept["id"] in result_text(listed)
    one = await use_tool(rig.server, nicla_voice_transcript, id=kept["id"])
    assert "kitchen light" in result_text(one).lower()
    unknown = await use_tool(rig.server, nicla_voice_transcript, id="tr_nope")
    assert unknown["status"] == "error" and "no transcript tr_nope" in result_text(unknown)


async def test_a_lost_chunk_fails_the_tool_and_keeps_nothing(rig: Rig) -> None:
    rig.board.drop_chunks = {3}
    result = await use_tool(rig.server, nicla_voice_record, seconds=1)
    assert result["status"] == "error" and "never arrived" in result_text(result)
    hub = rig.server.hub
    assert hub.devices.media.keys(hub.owner.id) == []
    assert hub.transcripts.recent(hub.owner.id) == []


async def test_over_long_and_anonymous_requests_are_refused(rig: Rig) -> None:
    too_long = await use_tool(rig.server, nicla_voice_record, seconds=600)
    assert too_long["status"] == "error" and "30" in result_text(too_long)
    assert rig.board.requests == []
    for tool in (
        nicla_voice_status,
        nicla_voice_wakes,
        nicla_voice_record,
        nicla_voice_transcripts,
    ):
        assert result_text(await use_tool(rig.server, tool, caller=None)) == c.LOGIN_REQUIRED


async def test_a_voice_paired_to_a_phone_records_through_its_mailbox(
    start_hub: StartHub, fake_ollama: FakeOllama, http: aiohttp.ClientSession
) -> None:
    server = await start_hub(ollama_host=fake_ollama.url)
    none = await use_tool(server, nicla_voice_record, seconds=3)
    assert none["status"] == "error" and "none of your devices" in result_text(none)
    phone = await enroll(http, server, "pixel", capabilities=["nicla_voice"], kind="daemon")
    asked: list[dict[str, Any]] = []

    async def phone_records(envelope: dict[str, Any]) -> dict[str, Any]:
        asked.append(envelope)
        return {"result": "Recorded 3 s on the phone: 'dinner is at seven'"}

    daemon = PythonDaemon(
        server.url, phone["device_id"], phone["device_token"], phone_records, ("nicla_voice",)
    )
    with daemon:
        result = await use_tool(server, nicla_voice_record, seconds=3)
    assert asked == [{"type": "nicla_voice_record", "seconds": 3}]
    assert result["status"] == "success" and "dinner is at seven" in result_text(result)
    status = await use_tool(server, nicla_voice_status)
    assert "paired to pixel" in result_text(status)


async def test_each_reading_tool_in_a_chat_turn(rig: Rig, fake_ollama: FakeOllama) -> None:
    hub = rig.server.hub
    rig.board.wake("NN0:hey_arduino")
    await until(lambda: heard_a_wake(rig.server))
    kept = hub.transcripts.add(hub.owner.id, "nicla_voice", "water the plants", audio_s=2.0)
    for tool, arguments, said in (
        ("nicla_voice_status", {}, "connected to this hub over Bluetooth LE"),
        ("nicla_voice_wakes", {"limit": 5}, "'NN0:hey_arduino'"),
        ("nicla_voice_transcripts", {}, kept.id),
        ("nicla_voice_transcript", {"id": kept.id}, "water the plants"),
    ):
        result, transcript = await tool_in_a_turn(rig.server, fake_ollama, tool, arguments)
        assert result["status"] == "success", result
        assert said in result["content"][0]["text"], (tool, result)
        assert transcript.text == "Done."
