"""What the hub sends back to the cloud beyond text: pictures through ``POST /api/media`` before
the reply that shows them, a task result for a job slower than the owner's wait, and a
``notify`` on the desktop as well as on the ring. A second hub on loopback plays the cloud; the
local hub's camera is the emulated one, so a turn really takes a photo."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from drivers.machine.camera import Camera
from fakes.camera import EmulatedCamera
from fakes.ollama import FakeOllama
from fakes.ollama import Reply as ModelReply
from harness.machine import camera_on
from harness.waits import until
from hub.agent.compose import Picture
from hub.api.server import RunningServer, start_server
from hub.cloud.account import save_token
from hub.cloud.client import CloudClient
from hub.cloud.link import MAX_REPLY_IMAGES, CloudLink, Reply, fit_result
from hub.cloud.notify import DesktopNotifier, desktop_command
from hub.cloud.outbox import Call, Outbox, images_from, upload_call
from hub.config import load_settings
from hub.contracts import RELAY_PAYLOAD_MAX_BYTES
from hub.devices.events import RingEvent
from hub.runtime.hub import Hub
from media.video import decode_jpeg
from tests.conftest import owner_headers, settings_for
from tests.daemon import enroll, send

FAST = {"heartbeat_s": 0.2, "idle_poll_s": 0.05, "backoff_min_s": 0.02, "backoff_max_s": 0.1}
PHOTO_CALL = {"function": {"name": "camera_photo", "arguments": {}}}


@dataclass
class Rig:
    cloud: RunningServer
    local: RunningServer
    device_id: str
    token: str
    http: aiohttp.ClientSession
    links: list[CloudLink] = field(default_factory=list)

    def client(self, url: str | None = None) -> CloudClient:
        return CloudClient(url or self.cloud.url, self.device_id, self.token, timeout_s=5)

    def outbox(self) -> Outbox:
        return Outbox(self.local.hub.db)

    def link(self, **options: Any) -> CloudLink:
        made = CloudLink(self.local.hub, self.client(), self.outbox(), **{**FAST, **options})
        self.links.append(made)
        return made

    def send_envelope(self, envelope: dict[str, Any]) -> str:
        devices = self.cloud.hub.devices
        device = devices.registry.get(self.cloud.hub.owner.id, self.device_id)
        return devices.mailbox.send(device, envelope)

    async def reply_of(self, message_id: str) -> dict[str, Any]:
        mailbox, owner = self.cloud.hub.devices.mailbox, self.cloud.hub.owner.id
        await until(lambda: mailbox.reply_to(owner, message_id)[0] == "answered", 60, "a reply")
        reply = mailbox.reply_to(owner, message_id)[1]
        assert reply is not None
        assert len(reply.encode("utf-8")) <= RELAY_PAYLOAD_MAX_BYTES
        parsed = json.loads(reply)
        assert isinstance(parsed, dict)
        return parsed

    async def cloud_media(self, url: str) -> tuple[int, str, bytes]:
        """GET a reply's image URL from the cloud, as its owner (the URL is on its origin)."""
        target = url if url.startswith("http") else f"{self.cloud.url}{url}"
        async with self.http.get(target, headers=owner_headers(self.cloud)) as response:
            return response.status, response.content_type, await response.read()

    def cloud_events(self, kind: str) -> list[RingEvent]:
        ring = self.cloud.hub.devices.events.recent(self.cloud.hub.owner.id, limit=1000)
        return [e for e in ring if e.device_id == self.device_id and e.kind == kind]

    def local_photos(self) -> list[bytes]:
        """The photos the local hub's camera took, oldest first."""
        media, owner = self.local.hub.devices.media, self.local.hub.owner.id
        return [media.get(owner, key)[0] for key in reversed(media.keys(owner))]


@pytest.fixture
async def rig(tmp_path: Path, fake_ollama: FakeOllama) -> AsyncIterator[Rig]:
    cloud_hub = Hub.open(settings_for(tmp_path / "cloud"))
    camera = camera_on(EmulatedCamera(size=(320, 240)))
    local_hub = Hub.open(
        settings_for(tmp_path / "local", ollama_host=fake_ollama.url, drivers=camera["drivers"]),
        hardware=camera["hardware"],
    )
    cloud = await start_server(cloud_hub, "127.0.0.1", 0)
    local = await start_server(local_hub, "127.0.0.1", 0)
    async with aiohttp.ClientSession() as http:
        enrolled = await enroll(http, cloud, name="home-hub", capabilities=["chat"])
        made = Rig(cloud, local, enrolled["device_id"], enrolled["device_token"], http)
        yield made
        for link in made.links:
            await link.stop()
    for server in (local, cloud):
        with contextlib.suppress(Exception):
            await server.stop()
        server.hub.close()


async def photo_jpeg() -> bytes:
    return await Camera("0", capture=EmulatedCamera(size=(160, 120))).snapshot()


async def pulled_envelope(rig: Rig, envelope: dict[str, Any]) -> str:
    """An envelope sent at the cloud and pulled by the hub's device (so it can be replied to)."""
    message_id = rig.send_envelope(envelope)
    [pulled] = await rig.client().pull()
    assert pulled.id == message_id
    return message_id


# --- pictures --------------------------------------------------------------------------------


async def test_an_invoke_that_took_a_photo_replies_with_it_on_the_clouds_media(
    rig: Rig, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(
        ModelReply(chunks=[], tool_calls=[PHOTO_CALL]), ModelReply(chunks=["Here is the room."])
    )
    link = rig.link()
    await link.start()
    body = {"deviceId": rig.device_id, "prompt": "show me the room"}
    status, answer = await send(
        rig.http, "POST", f"{rig.cloud.url}/api/devices/invoke", body, owner_headers(rig.cloud)
    )
    # what use_device saw: the text, and one picture read from the cloud's own media store
    assert status == 200, answer
    assert (answer["result"], answer["images"]) == ("Here is the room.", 1)

    [message] = rig.cloud.hub.db.execute("SELECT id FROM relay").fetchall()
    reply = await rig.reply_of(message[0])
    [image] = reply["images"]
    assert image["format"] == "jpeg" and image["url"].startswith("/media/")
    status, content_type, served = await rig.cloud_media(image["url"])
    assert (status, content_type) == (200, "image/jpeg")
    assert served == rig.local_photos()[-1]  # the very photo the turn took
    assert decode_jpeg(served).shape == (240, 320, 3)

    await until(lambda: link.status()["pending"] == 0)
    assert rig.cloud_events("task_result") == []  # a quick answer is not a background job


async def test_pictures_wait_in_the_outbox_and_the_reply_gets_their_urls_after_an_outage(
    rig: Rig, closed_port: int
) -> None:
    message_id = await pulled_envelope(rig, {"type": "invoke", "prompt": "photo"})
    jpeg = await photo_jpeg()
    reply = Reply(fit_result("a photo"), (Picture(jpeg, "jpeg"), Picture(jpeg[::-1], "png")))
    outbox = rig.outbox()
    seqs = outbox.put_all(reply.calls(message_id))
    assert len(seqs) == 3 and seqs == sorted(seqs)
    assert outbox.put_all(reply.calls(message_id)) == seqs  # a second put stores nothing

    away = await outbox.drain(rig.client(f"http://127.0.0.1:{closed_port}"))
    assert away.unavailable and away.pending == 3
    assert rig.cloud.hub.devices.mailbox.reply_to(rig.cloud.hub.owner.id, message_id)[0] != (
        "answered"
    )

    back = await outbox.drain(rig.client())
    assert back.complete and back.delivered == 3
    answered = await rig.reply_of(message_id)
    assert answered["result"] == "a photo"
    assert [i["format"] for i in answered["images"]] == ["jpeg", "png"]
    uploads = [outbox.item(seq) for seq in seqs[:2]]
    assert [i["url"] for i in answered["images"]] == [
        u.answer["url"] for u in uploads if u and u.answer
    ]
    status, content_type, served = await rig.cloud_media(answered["images"][0]["url"])
    assert (status, content_type, served) == (200, "image/jpeg", jpeg)
    sent = outbox.item(seqs[2])
    assert sent is not None and "images" not in json.loads(sent.body["payload"])  # filled on send


async def test_a_refused_upload_leaves_its_picture_out_not_the_reply(rig: Rig) -> None:
    message_id = await pulled_envelope(rig, {"type": "invoke", "prompt": "photos"})
    jpeg = await photo_jpeg()
    bad, good = f"media:0:{message_id}", f"media:1:{message_id}"
    calls = [
        upload_call(jpeg, "image/bmp", bad),  # not a type the cloud keeps: a 400
        upload_call(jpeg, "image/jpeg", good),
        Call(
            "PATCH",
            "/api/devices/relay",
            {
                "inReplyTo": message_id,
                "payload": fit_result("two photos"),
                **images_from([(bad, "bmp"), (good, "jpeg")]),
            },
            f"reply:{message_id}",
        ),
    ]
    outbox = rig.outbox()
    outbox.put_all(calls)

    result = await outbox.drain(rig.client())

    assert (result.delivered, result.failed, result.pending) == (2, 1, 0)
    answered = await rig.reply_of(message_id)
    assert answered["result"] == "two photos"
    [image] = answered["images"]
    assert (await rig.cloud_media(image["url"]))[2] == jpeg


async def test_a_long_answer_with_many_photos_fits_the_8_kb_reply(
    rig: Rig, fake_ollama: FakeOllama
) -> None:
    photos = MAX_REPLY_IMAGES + 1
    fake_ollama.script(
        *[ModelReply(chunks=[], tool_calls=[PHOTO_CALL]) for _ in range(photos)],
        ModelReply(chunks=["é" * 6000, "x" * 6000]),
    )
    link = rig.link()
    await link.start()
    reply = await rig.reply_of(rig.send_envelope({"type": "invoke", "prompt": "five photos"}))
    assert reply["result"].startswith("é" * 100) and "(truncated: " in reply["result"]
    assert len(reply["images"]) == MAX_REPLY_IMAGES
    served = [await rig.cloud_media(image["url"]) for image in reply["images"]]
    assert [s[2] for s in served] == rig.local_photos()[:MAX_REPLY_IMAGES]


# --- task results ----------------------------------------------------------------------------


async def test_a_job_slower_than_the_owners_wait_also_sends_a_task_result(
    rig: Rig, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(ModelReply(chunks=["The backup finished.\nAll 3 disks are fine."]))
    link = rig.link(background_after_s=0.0)  # every answer counts as slower than the wait
    await link.start()
    message_id = rig.send_envelope({"type": "invoke", "prompt": "run the backup"})
    reply = await rig.reply_of(message_id)
    assert reply == {"result": "The backup finished.\nAll 3 disks are fine."}
    await until(lambda: len(rig.cloud_events("task_result")) == 1, 30, "a task result")
    [event] = rig.cloud_events("task_result")
    assert event.detail["taskId"] == message_id
    assert event.detail["summary"] == "The backup finished."
    assert event.detail["result"] == reply["result"]
    await until(lambda: link.status()["pending"] == 0)
    assert len(rig.cloud_events("task_result")) == 1


async def test_an_envelope_that_waited_past_the_owners_wait_is_a_background_job(
    rig: Rig, fake_ollama: FakeOllama
) -> None:
    """The wait counts from when the owner asked: here the envelope sat in the cloud's mailbox
    for a minute (the cloud's clock is set back while it is sent) before the hub pulled it."""
    fake_ollama.script(ModelReply(chunks=["Done at last."]))
    clock = rig.cloud.hub.devices.clock
    clock.advance(-60)  # type: ignore[attr-defined]
    message_id = rig.send_envelope({"type": "invoke", "prompt": "anything"})
    clock.advance(60)  # type: ignore[attr-defined]
    link = rig.link()  # the real threshold
    await link.start()
    assert (await rig.reply_of(message_id))["result"] == "Done at last."
    await until(lambda: len(rig.cloud_events("task_result")) == 1, 30, "a task result")
    assert rig.cloud_events("task_result")[0].detail["taskId"] == message_id


async def test_a_slow_job_that_failed_says_so_in_its_task_result(
    rig: Rig, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script(ModelReply(http_status=500, error="the model crashed"))
    link = rig.link(background_after_s=0.0)
    await link.start()
    message_id = rig.send_envelope({"type": "invoke", "prompt": "try"})
    reply = await rig.reply_of(message_id)
    assert reply["ok"] is False and "could not answer" in reply["error"]
    await until(lambda: len(rig.cloud_events("task_result")) == 1, 30, "a task result")
    detail = rig.cloud_events("task_result")[0].detail
    assert detail["taskId"] == message_id and "could not answer" in detail["summary"]
    assert detail["result"] is None


# --- desktop notifications -------------------------------------------------------------------


def fake_notify_send(folder: Path, script: str) -> Path:
    """A ``notify-send`` that records its arguments (one JSON list a line) and then runs
    ``script``'s Python; returns the record file."""
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "calls.jsonl"
    program = folder / "notify-send"
    program.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(record)!r}, 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"{script}\n"
    )
    program.chmod(0o755)
    return record


def calls_in(record: Path) -> list[list[str]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def notify_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "hub.cloud.notify"]


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


async def test_a_notify_shows_on_the_desktop_and_on_the_ring(rig: Rig, bin_dir: Path) -> None:
    record = fake_notify_send(bin_dir, "")
    notifier = DesktopNotifier()
    link = rig.link(notifier=notifier)
    await link.start()
    message_id = rig.send_envelope(
        {"type": "notify", "title": "-Door", "body": "Someone's at the door; $(reboot)"}
    )
    assert await rig.reply_of(message_id) == {"ok": True}
    await until(lambda: notifier.shown == 1, 30, "the notification shown")
    assert calls_in(record) == [
        ["--app-name=tiny-hub", "--", "-Door", "Someone's at the door; $(reboot)"]
    ]
    ring = rig.local.hub.devices.events.recent(rig.local.hub.owner.id)
    assert [e.detail["title"] for e in ring if e.kind == "device_note"] == ["-Door"]


async def test_a_failing_notifier_is_logged_once_and_the_replies_go_on(
    rig: Rig, bin_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = fake_notify_send(bin_dir, "sys.stderr.write('no desktop here')\nsys.exit(1)")
    link = rig.link(notifier=DesktopNotifier())
    await link.start()
    with caplog.at_level(logging.WARNING, logger="hub.cloud.notify"):
        for n in range(3):
            message_id = rig.send_envelope({"type": "notify", "title": f"n{n}", "body": "b"})
            assert await rig.reply_of(message_id) == {"ok": True}
        await until(lambda: len(calls_in(record)) == 3, 30, "three attempts")
        await until(lambda: bool(notify_warnings(caplog)), 30, "the warning")
        await link.stop()
    [warning] = notify_warnings(caplog)
    assert "no desktop here" in warning and "cloud.desktop_notifications" in warning


def hanging_notify_send(bin_dir: Path, pid_file: Path) -> None:
    """A ``notify-send`` that writes its pid and never finishes (a desktop bus that hangs). The
    pid file appears whole (written beside, then renamed): a test waiting for it never reads
    it empty."""
    written = f"{pid_file}.partial"
    fake_notify_send(
        bin_dir,
        f"open({written!r}, 'w').write(str(os.getpid()))\n"
        f"os.replace({written!r}, {str(pid_file)!r})\n"
        "import time\ntime.sleep(600)",
    )


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_hanging_notifier_blocks_nothing_and_is_ended_with_the_link(
    rig: Rig, bin_dir: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "notify.pid"
    hanging_notify_send(bin_dir, pid_file)
    link = rig.link(notifier=DesktopNotifier(timeout_s=600))
    await link.start()
    assert await rig.reply_of(rig.send_envelope({"type": "notify", "title": "t"})) == {"ok": True}
    await until(pid_file.exists, 30, "the notifier started")
    pid = int(pid_file.read_text())
    try:
        # the relay goes on while the first notification still hangs
        assert await rig.reply_of(rig.send_envelope({"type": "notify", "title": "u"})) == {
            "ok": True
        }
        assert running(pid)
        await link.stop()
        await until(lambda: not running(pid), 30, "the hanging notifier ended")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_a_notifier_past_its_time_is_killed_and_logged(
    rig: Rig, bin_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pid_file = tmp_path / "notify.pid"
    hanging_notify_send(bin_dir, pid_file)
    notifier = DesktopNotifier(timeout_s=0.5)
    link = rig.link(notifier=notifier)
    await link.start()
    with caplog.at_level(logging.WARNING, logger="hub.cloud.notify"):
        assert await rig.reply_of(rig.send_envelope({"type": "notify", "title": "t"})) == {
            "ok": True
        }
        await until(pid_file.exists, 30, "the notifier started")
        pid = int(pid_file.read_text())
        try:
            await until(lambda: not running(pid), 30, "the hanging notifier killed")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await until(lambda: bool(notify_warnings(caplog)), 30, "the warning")
    assert "did not finish within 0.5 s" in notify_warnings(caplog)[0]
    assert notifier.shown == 0


async def test_no_notifier_on_the_machine_means_the_ring_only(rig: Rig, bin_dir: Path) -> None:
    notifier = DesktopNotifier(which=lambda name: None)
    link = rig.link(notifier=notifier)
    await link.start()
    assert await rig.reply_of(rig.send_envelope({"type": "notify", "title": "t"})) == {"ok": True}
    assert notifier.shown == 0


def test_on_macos_the_title_and_body_are_arguments_of_osascript() -> None:
    def which(name: str) -> str | None:
        return "/usr/bin/osascript" if name == "osascript" else None

    command = desktop_command('a "title"', "end run\n", which=which, platform="darwin")
    assert command is not None
    assert command[0] == "/usr/bin/osascript" and command[-2:] == ['a "title"', "end run\n"]
    script = command[1:-2]
    assert script[::2] == ["-e"] * 3 and 'a "title"' not in "".join(script)
    assert desktop_command("t", "b", which=lambda name: None, platform="linux") is None


async def test_the_desktop_notifications_setting_turns_them_off(rig: Rig, tmp_path: Path) -> None:
    assert load_settings(home=tmp_path / "x", environ={}).cloud_desktop_notifications is True
    environ = {"TINY_HUB_CLOUD_DESKTOP_NOTIFICATIONS": "false"}
    assert load_settings(home=tmp_path / "x", environ=environ).cloud_desktop_notifications is False
    for enabled in (True, False):
        home = tmp_path / f"joined-{enabled}"
        home.mkdir()
        save_token(home / "cloud.token", rig.token)
        settings = settings_for(
            home,
            cloud_url=rig.cloud.url,
            cloud_device_id=rig.device_id,
            cloud_desktop_notifications=enabled,
        )
        hub = Hub.open(settings)
        server = await start_server(hub, "127.0.0.1", 0)
        try:
            link = server.parts.cloud
            assert isinstance(link, CloudLink)
            assert isinstance(link.notifier, DesktopNotifier) is enabled
        finally:
            await server.stop()
            hub.close()
