"""What the hub pushes reaches a paired phone: the emulated phone, paired with a code, is shown
an alert when it fires and a job's answer when it runs (a ``notify`` envelope each, once), and a
direct message from another person of the hub."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from fakes.ollama import FakeOllama, Reply
from firmware_bridges.emulators.phone import EmulatedPhone
from harness.waits import until
from hub.agent.tools.messages import send_message_tool
from hub.agent.tools.schedule import schedule, schedule_alert
from hub.api.server import RunningServer
from tests.conftest import StartHub, owner_headers
from tests.daemon import send
from tests.scheduling import QUIET, clock, scheduler
from tests.toolcall import use_tool


@pytest.fixture
async def server(start_hub: StartHub, fake_ollama: FakeOllama) -> RunningServer:
    return await start_hub(ollama_host=fake_ollama.url, **QUIET)


@pytest.fixture
async def phone(server: RunningServer) -> AsyncIterator[EmulatedPhone]:
    async with aiohttp.ClientSession() as http:
        status, offer = await send(
            http, "POST", f"{server.url}/api/pair/offer", None, owner_headers(server)
        )
    assert status == 200, offer
    emulated = EmulatedPhone(server.url, code=str(offer["code"]), say=lambda _: None)
    await emulated.start()
    yield emulated
    await emulated.stop()


def titles(phone: EmulatedPhone) -> list[str]:
    return [str(n["title"]) for n in phone.notices]


async def test_an_alert_and_a_jobs_answer_reach_the_phone_once_each(
    server: RunningServer, phone: EmulatedPhone, fake_ollama: FakeOllama
) -> None:
    alert = await use_tool(server, schedule_alert, title="Tea", message="Kettle", in_seconds=2)
    job = await use_tool(
        server, schedule, action="create", prompt="Say hi", every="*/5m", title="Greeting"
    )
    assert alert["status"] == job["status"] == "success", (alert, job)
    fake_ollama.script(Reply(chunks=["hi there"]))

    clock(server).advance(2)
    await scheduler(server).tick()
    await until(lambda: "Tea" in titles(phone), what="the alert on the phone")
    clock(server).advance(300)
    await scheduler(server).tick()
    await until(lambda: len(phone.notices) == 2, what="the job's answer on the phone")

    (answer,) = [n for n in phone.notices if n["title"] != "Tea"]
    assert "hi there" in str(answer["body"])
    assert titles(phone).count("Tea") == 1


async def test_a_message_from_another_person_reaches_the_phone(
    server: RunningServer, phone: EmulatedPhone
) -> None:
    bea = server.hub.identity.add_user("Bea")
    sent = await use_tool(server, send_message_tool, caller=bea, to="@owner", text="Dinner at 8?")
    assert sent["status"] == "success", sent
    await until(lambda: bool(phone.notices), what="the message on the phone")
    assert "Dinner at 8?" in str(phone.notices[0]["body"])
