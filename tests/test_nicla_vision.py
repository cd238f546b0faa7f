"""The Nicla Vision driver end to end: real pyserial on a pty, the emulated board on the other end
(the same calls and formats as firmware_bridges/nicla_vision/main.py), the driver manager finding
it on a pinned port. Nothing here measures time: waits are generous deadlines."""

from __future__ import annotations

import ast
import asyncio
import math
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

import drivers.nicla_vision.driver as nicla
from drivers.base import PortInfo
from drivers.nicla_vision.driver import NiclaError, NiclaNotConnected, NiclaVisionDriver
from drivers.nicla_vision.openmv_rpc import RESULT_DATA
from firmware_bridges.emulators.nicla_vision import DEFAULT_WAV, NiclaVisionEmulator, room_audio
from harness.driver_host import RecordingHost
from hub.drivers.manager import DriverManager
from media.audio import read_wav
from tests.test_openmv_rpc import collapsed

FLASH = "flash firmware_bridges/nicla_vision/main.py"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def link(tmp_path: Path) -> Path:
    return tmp_path / "nicla"


@pytest.fixture
def emulator(link: Path) -> Iterator[NiclaVisionEmulator]:
    device = NiclaVisionEmulator(link=link)
    device.start()
    yield device
    device.stop()


@pytest.fixture
def audit() -> list[str]:
    return []


@pytest.fixture
async def driver(
    emulator: NiclaVisionEmulator, link: Path, audit: list[str]
) -> AsyncIterator[NiclaVisionDriver]:
    board = NiclaVisionDriver("nicla_vision:test", str(link), {})
    board.host = RecordingHost(audited=audit)
    await board.start()
    yield board
    await board.stop()


def decode(jpeg: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


# --- what the tools ask ---------------------------------------------------------------------------


async def test_start_reads_the_status_and_says_online(driver: NiclaVisionDriver) -> None:
    state = driver.status()
    assert state.state == "online" and "tiny-hub-nicla 1.0" in state.detail
    assert driver.device_name == "Nicla Vision"
    assert await driver.probe()


async def test_snapshot_is_a_jpeg_opencv_decodes(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator, audit: list[str]
) -> None:
    first = await driver.snapshot()
    second = await driver.snapshot(quality=60)
    assert decode(first).shape == (240, 320, 3) and decode(second).shape == (240, 320, 3)
    assert first != second, "every frame shows a new counter"
    assert audit[:3] == [
        "status",
        "jpeg_image_snapshot RGB565 QVGA q90",
        f"jpeg_image_read 0+{len(first)}",
    ]
    audited = [command.split()[0] for command in audit]
    assert audited == collapsed(emulator.calls), "every call was audited"


async def test_clip_is_an_mp4_with_several_frames(
    driver: NiclaVisionDriver, tmp_path: Path
) -> None:
    clip = await driver.clip(1.0)
    path = tmp_path / "clip.mp4"
    path.write_bytes(clip)
    capture = cv2.VideoCapture(str(path))
    frames = 0
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        assert frame.shape == (240, 320, 3)
        frames += 1
    capture.release()
    assert frames == 8  # 1 s at 8 frames a second


async def test_a_long_clip_takes_several_bursts(
    link: Path, tmp_path: Path, audit: list[str]
) -> None:
    device = NiclaVisionEmulator(link=link, video_ram=10_000)  # two or three frames a burst
    device.start()
    board = NiclaVisionDriver("nicla_vision:small", str(link), {})
    board.host = RecordingHost(audited=audit)
    try:
        await board.start()
        clip = await board.clip(0.5)
    finally:
        await board.stop()
        device.stop()
    (tmp_path / "clip.mp4").write_bytes(clip)
    capture = cv2.VideoCapture(str(tmp_path / "clip.mp4"))
    assert capture.get(cv2.CAP_PROP_FRAME_COUNT) == 4
    capture.release()
    assert sum(command.startswith("video_burst") for command in audit) >= 2


async def test_listen_returns_the_requested_seconds_of_what_the_board_heard(
    driver: NiclaVisionDriver,
) -> None:
    wav = await driver.listen(1.0)
    pcm = read_wav(wav)
    assert (pcm.rate, pcm.channels, pcm.width) == (16_000, 1, 2)
    assert pcm.frames == 16_000 and math.isclose(pcm.seconds, 1.0)
    assert pcm.data == room_audio(DEFAULT_WAV)[: len(pcm.data)], "every byte as recorded"
    assert np.abs(np.frombuffer(pcm.data, "<i2")).max() > 1000, "speech, not silence"


async def test_board_status(driver: NiclaVisionDriver, link: Path) -> None:
    status = await driver.board_status()
    assert status["board"] == "Arduino Nicla Vision" and status["firmware"] == "tiny-hub-nicla 1.0"
    assert status["battery"] is None and status["uptime_ms"] >= 0
    assert status["port"] == str(link) and status["connection"] == f"USB serial on {link}"


async def test_bad_requests_are_refused_before_touching_the_board(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator, audit: list[str]
) -> None:
    before = list(emulator.calls)
    for seconds in (0, -1, 10.5, 11, True, float("nan"), "3"):
        with pytest.raises(NiclaError, match="clip"):
            await driver.clip(seconds)  # type: ignore[arg-type]
    for seconds in (0, 31, float("inf")):
        with pytest.raises(NiclaError, match="recording"):
            await driver.listen(seconds)
    for quality in (0, 101, 9.5, True):
        with pytest.raises(NiclaError, match="quality"):
            await driver.snapshot(quality=quality)  # type: ignore[arg-type]
    assert emulator.calls == before and audit == ["status"]


def test_limits_come_from_the_config() -> None:
    board = NiclaVisionDriver("x", "/dev/null", {"max_clip_s": 4, "max_listen_s": 60})
    assert (board.max_clip_s, board.max_listen_s) == (4.0, 60.0)
    with pytest.raises(ValueError, match="max_clip_s"):
        NiclaVisionDriver("x", "/dev/null", {"max_clip_s": 0})


def test_the_board_script_compiles_and_registers_what_the_emulator_answers() -> None:
    source = (ROOT / "firmware_bridges" / "nicla_vision" / "main.py").read_text()
    compile(source, "main.py", "exec")  # what `python -m py_compile` checks
    tree = ast.parse(source)
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.For)]
    registered = next(
        {element.id for element in loop.iter.elts if isinstance(element, ast.Name)}
        for loop in loops
        if isinstance(loop.iter, ast.Tuple) and ast.unparse(loop.target) == "callback"
    )
    answered = {name for name, _ in NiclaVisionEmulator(wav=None)._handlers.values()}
    assert registered == answered
    assert "omv.disable_fb(True)" in source and "rpc.rpc_usb_vcp_slave()" in source
    assert nicla.BLE_STATUS_SERVICE_UUID in source
    assert nicla.BLE_STATUS_CHARACTERISTIC_UUID in source


def test_usb_matchers() -> None:
    for pid in (0x055F, 0x025F, 0x035F, 0x045F):
        port = PortInfo(device="/dev/ttyACM0", vid=0x2341, pid=pid, serial_number="ABC")
        assert NiclaVisionDriver.usb_score(port) == 2
    assert NiclaVisionDriver.usb_score(PortInfo(device="/dev/ttyACM0", vid=0x2341, pid=0x0060)) == 0
    assert NiclaVisionDriver.usb_score(PortInfo(device="/dev/pts/3")) == 0


# --- faults ---------------------------------------------------------------------------------------


async def test_damaged_answers_are_asked_for_again(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator
) -> None:
    emulator.calls.clear()
    emulator.corrupt_next_packet(RESULT_DATA, call="jpeg_image_snapshot")
    emulator.corrupt_next_packet(RESULT_DATA, call="jpeg_image_read")
    emulator.truncate_next_packet(RESULT_DATA, call="jpeg_image_read")
    photo = await driver.snapshot()
    assert decode(photo).shape == (240, 320, 3)
    assert driver._rpc.repeated_calls == 3  # one snapshot, two reads
    assert collapsed(emulator.calls) == ["jpeg_image_snapshot", "jpeg_image_read"]


async def test_persistent_damage_is_an_error_never_a_bad_jpeg(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator
) -> None:
    emulator.calls.clear()
    for _ in range(3):
        emulator.corrupt_next_packet(RESULT_DATA, call="jpeg_image_read")
    with pytest.raises(NiclaError, match="jpeg_image_read: its result arrived damaged 3 times"):
        await driver.snapshot()
    assert driver._rpc.repeated_calls == 2
    assert collapsed(emulator.calls) == ["jpeg_image_snapshot", "jpeg_image_read"]
    emulator.truncate_next_packet(RESULT_DATA, call="audio_read")
    emulator.truncate_next_packet(RESULT_DATA, call="audio_read")
    emulator.truncate_next_packet(RESULT_DATA, call="audio_read")
    with pytest.raises(NiclaError, match="audio_read: its result arrived damaged 3 times"):
        await driver.listen(0.5)


async def test_an_unknown_rpc_name_says_to_flash_the_script(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator
) -> None:
    emulator.unregister("audio_record")
    with pytest.raises(NiclaError) as caught:
        await driver.listen(1)
    assert str(caught.value) == f"the Nicla Vision has no RPC function audio_record; {FLASH}"
    emulator.unregister("jpeg_image_read")
    with pytest.raises(NiclaError, match=f"lacks jpeg_image_read: {FLASH}"):
        await driver.snapshot()


async def test_the_board_vanishing_mid_transfer(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator
) -> None:
    emulator.vanish_mid_next_result()
    with pytest.raises(NiclaNotConnected, match="went away during jpeg_image_snapshot"):
        await driver.snapshot()
    assert driver.status().state == "offline"
    assert not await driver.probe()
    with pytest.raises(NiclaNotConnected, match="not connected"):
        await driver.clip(1)


async def test_a_silent_board_is_a_clear_error(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator, link: Path
) -> None:
    emulator.go_silent()
    with pytest.raises(NiclaError, match=r"did not answer status: no (acknowledgement|result)"):
        await driver.board_status()
    await driver.stop()  # the port is opened exclusively: one driver at a time
    fresh = NiclaVisionDriver("nicla_vision:fresh", str(link), {})
    try:
        with pytest.raises(NiclaError, match=r"main\.py saved on the board as main\.py"):
            await fresh.start()
        await fresh.stop()
        emulator.resume()
        await fresh.start()
        assert (await fresh.board_status())["firmware"] == "tiny-hub-nicla 1.0"
    finally:
        await fresh.stop()


# --- the driver manager ---------------------------------------------------------------------------


async def test_the_manager_starts_probes_and_follows_the_cable(
    emulator: NiclaVisionEmulator, link: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nicla, "RECENT_S", 0.0)  # every probe really asks the board
    manager = DriverManager(
        [NiclaVisionDriver],
        {"nicla_vision": {"port": str(link)}},
        list_ports=lambda: [],
        backoff_min_s=0.05,
        backoff_max_s=0.2,
    )

    async def state() -> str:
        await manager.scan()
        records = manager.records()
        return str(records[0]["status"]) if records else "absent"

    async def reaches(wanted: str) -> None:
        for _ in range(200):
            if await state() == wanted:
                return
        raise AssertionError(f"never {wanted}: {manager.records()}")

    try:
        await reaches("online")
        calls = len(emulator.calls)
        for _ in range(200):  # probes talk to the board
            if len(emulator.calls) > calls:
                break
            assert await state() == "online"
        assert emulator.calls[calls:][:1] == ["status"]
        record = manager.records()[0]
        assert record["device_id"] == f"nicla_vision:port:{link}"
        assert record["capabilities"] == ["camera", "video", "microphone"]
        assert [d.name for d in manager.online("nicla_vision")] == ["nicla_vision"]
        emulator.unplug()
        await reaches("offline")
        emulator.replug()
        await reaches("online")
        assert len(manager.records()) == 1
    finally:
        await manager.stop()


# --- by hand -------------------------------------------------------------------------------------


async def test_run_prints_the_path_and_serves_until_ctrl_c(tmp_path: Path) -> None:
    """What ``tiny-hub emulate nicla-vision`` runs: ``run(link)`` in a process of its own."""
    link = tmp_path / "by-hand"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "firmware_bridges.emulators.nicla_vision", "--link", str(link)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        path = (await asyncio.wait_for(process.stdout.readline(), 120)).decode().strip()
        assert path.startswith("/dev/pts/")
        assert await asyncio.to_thread(os.path.realpath, link) == path
        board = NiclaVisionDriver("nicla_vision:by-hand", str(link), {})
        await board.start()
        assert decode(await board.snapshot()).shape == (240, 320, 3)
        await board.stop()
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 60) == 0
        assert not await asyncio.to_thread(os.path.islink, link)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
