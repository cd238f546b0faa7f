"""The OpenMV RPC while every core is busy: the hub's driver, with the board's damaged answers
asked for again, over the emulated board. One process per core spins meanwhile, so the board,
the host and the kernel's pty work all wait for a core; nothing here is timed. The board waits
and keeps a result for as long as its script says.

OpenMV's own host library (``tests/fixtures/openmv/rpc.py``) is counted by ``scripts/bench
openmv_busy`` (500 calls) rather than asserted here: it gives up on any answer that takes the
computer over 10 ms to deliver, which a busy kernel does now and then whatever the board does."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from drivers.nicla_vision.driver import NiclaVisionDriver
from drivers.nicla_vision.openmv_rpc import RESULT_DATA, RESULT_HEADER
from firmware_bridges.emulators.nicla_vision import (
    FIRST_WAIT_MS,
    RECV_TIMEOUT_MS,
    SEND_TIMEOUT_MS,
    NiclaVisionEmulator,
)
from scripts.bench_openmv_busy import busy_cores
from tests.test_openmv_rpc import collapsed

ROOT = Path(__file__).resolve().parents[1]
CALLS = 40


def test_the_emulator_waits_and_keeps_a_result_as_the_board_script_says() -> None:
    script = (ROOT / "firmware_bridges" / "nicla_vision" / "main.py").read_text()

    def constant(name: str) -> int:
        found = re.search(rf"^{name} = const\((\d+)\)", script, re.MULTILINE)
        assert found is not None, name
        return int(found.group(1))

    assert constant("RESULT_HOLD_MS") == SEND_TIMEOUT_MS
    assert constant("FIRST_WAIT_MS") == FIRST_WAIT_MS
    assert constant("COMMAND_WAIT_MS") == RECV_TIMEOUT_MS
    assert "interface.loop(recv_timeout=COMMAND_WAIT_MS, send_timeout=RESULT_HOLD_MS)" in script
    assert "interface._get_short_timeout_reset = FIRST_WAIT_MS" in script


@pytest.fixture
def busy() -> Iterator[None]:
    with busy_cores():
        yield


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[NiclaVisionEmulator]:
    device = NiclaVisionEmulator(link=tmp_path / "nicla")
    device.start()
    yield device
    device.stop()


@pytest.fixture
async def driver(emulator: NiclaVisionEmulator) -> AsyncIterator[NiclaVisionDriver]:
    assert emulator.path is not None
    board = NiclaVisionDriver("nicla_vision:busy", emulator.path, {})
    await board.start()
    yield board
    await board.stop()


@pytest.mark.slow
@pytest.mark.usefixtures("busy")
async def test_the_driver_stays_correct_while_every_core_is_busy(
    driver: NiclaVisionDriver, emulator: NiclaVisionEmulator
) -> None:
    emulator.calls.clear()
    emulator.corrupt_next_packet(RESULT_DATA, call="jpeg_image_snapshot")
    emulator.corrupt_next_packet(RESULT_DATA, call="jpeg_image_read")
    emulator.truncate_next_packet(RESULT_DATA, call="jpeg_image_read")
    emulator.corrupt_next_packet(RESULT_HEADER)
    photo = await driver.snapshot()
    assert photo[:2] == b"\xff\xd8" and photo[-2:] == b"\xff\xd9"
    assert driver._rpc.repeated_calls >= 3
    assert collapsed(emulator.calls) == ["jpeg_image_snapshot", "jpeg_image_read"]
    for index in range(CALLS):
        if index % 2:
            assert (await driver.board_status())["board"] == "Arduino Nicla Vision"
        else:
            assert (await driver.snapshot())[:2] == b"\xff\xd8"
