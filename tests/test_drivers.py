"""Drivers: matchers, entry-point loading, the serial line on real ptys, the driver manager.

The far end of every pty is ``EchoDevice``: a thread on the master fd that behaves like the
Flipper's shell (echo, CR runs the line, ``\\r\\n>: `` prompt, 0x03 stops a streaming command).
pyserial is real; closing the master is an unplug.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import sys
import textwrap
import threading
import time
import tty
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from strands import tool
from strands.types.tools import AgentTool

from drivers.base import (
    Advertisement,
    BleMatcher,
    Driver,
    DriverStatus,
    PortInfo,
    UsbMatcher,
    load_drivers,
)
from drivers.transports.serial import (
    LineTooLong,
    NoPrompt,
    PortGone,
    PortUnavailable,
    SerialLine,
    SerialLineError,
)
from harness.waits import until
from hub.drivers.manager import DriverManager

PROMPT = b">: "


# -- the device at the other end of the pty ---------------------------------------------------


class EchoDevice:
    """A pty whose master end answers like a small shell: ``ping`` → ``pong`` and so on."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)  # no echo or line editing by the tty itself
        self.path = os.ttyname(self.slave)
        self.received = bytearray()
        self.mute = False  # reads, but answers nothing (a hung device)
        self._streaming = False
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"echo {self.path}", daemon=True)
        self._thread.start()

    def unplug(self) -> None:
        """Close the master end: the pty vanishes and the host side sees a hang-up."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join(timeout=5)
        os.close(self.master)
        os.close(self.slave)

    def _send(self, data: bytes) -> None:
        os.write(self.master, data)

    def _run(self) -> None:
        line = bytearray()
        next_tick = 0.0
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.02)
            if self._streaming and time.monotonic() >= next_tick:
                self._send(b"tick\r\n")
                next_tick = time.monotonic() + 0.02
            if not ready:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:  # no slave open at the moment
                time.sleep(0.01)
                continue
            self.received += data
            if not self.mute:
                for byte in data:
                    self._key(byte, line)

    def _key(self, byte: int, line: bytearray) -> None:
        if byte == 0x03:
            if self._streaming:
                self._streaming = False
                self._send(b"stopped\r\n>: ")
            else:
                self._send(b"^C\r\n>: ")
        elif self._streaming or byte == 0x0A:
            return
        elif byte == 0x0D:
            self._send(b"\r\n")
            command = line.decode()
            line.clear()
            self._execute(command)
        else:
            line.append(byte)
            self._send(bytes([byte]))

    def _execute(self, command: str) -> None:
        replies = {
            "": b"",
            "ping": b"pong",
            "lines": b"one\r\ntwo",
            "silent": b"half an answer",
            "hang": b"working",
            "flood": b"x" * 5000,
        }
        if command == "stream":
            self._streaming = True
            return
        reply = replies.get(command, f"could not find command `{command}`".encode())
        self._send(reply)
        if command not in ("silent", "hang", "flood"):
            self._send(b"\r\n" + PROMPT)


@pytest.fixture
def device() -> Iterator[Callable[[], EchoDevice]]:
    made: list[EchoDevice] = []

    def make() -> EchoDevice:
        made.append(EchoDevice())
        return made[-1]

    yield make
    for dev in made:
        dev.unplug()


# -- matchers -------------------------------------------------------------------------------

FLIPPER = PortInfo(
    "/dev/ttyACM0",
    vid=0x0483,
    pid=0x5740,
    serial_number="flip_Unyana",
    manufacturer="Flipper Devices Inc.",
    description="Flipper Unyana",
    product="Flipper Unyana",
    hwid="USB VID:PID=0483:5740 SER=flip_Unyana LOCATION=1-1:1.0",
)
ST_VCP = PortInfo(
    "/dev/ttyACM1",
    vid=0x0483,
    pid=0x5740,
    serial_number="206B3457",
    manufacturer="STMicroelectronics",
    description="STM32 Virtual ComPort",
    product="STM32 Virtual ComPort",
)
GENERIC_VCP = UsbMatcher(vid=0x0483, pid=0x5740)
FLIPPER_USB = UsbMatcher(vid=0x0483, pid=0x5740, serial_number="flip_*")


def test_usb_matcher_specificity_and_patterns() -> None:
    assert GENERIC_VCP.specificity == 2
    assert FLIPPER_USB.specificity == 3
    assert GENERIC_VCP.matches(FLIPPER) and FLIPPER_USB.matches(FLIPPER)
    assert GENERIC_VCP.matches(ST_VCP)
    assert not FLIPPER_USB.matches(ST_VCP)  # ST's VCP without the Flipper serial
    # case-insensitive fnmatch (Windows reports FLIP_UNYANA)
    assert FLIPPER_USB.matches(PortInfo("COM3", vid=0x0483, pid=0x5740, serial_number="FLIP_X"))
    assert UsbMatcher(manufacturer="flipper devices*").matches(FLIPPER)
    assert not UsbMatcher(product="Flipper ?").matches(FLIPPER)
    # a USB matcher never claims a port without USB details, or a field the port lacks
    assert not GENERIC_VCP.matches(PortInfo("/dev/ttyS0"))
    assert not FLIPPER_USB.matches(PortInfo("/dev/ttyACM2", vid=0x0483, pid=0x5740))
    with pytest.raises(ValueError):
        UsbMatcher()


def test_most_specific_driver_wins_the_port() -> None:
    class Generic(Inert):
        name = "generic"
        usb = (GENERIC_VCP,)

    class Flippery(Inert):
        name = "flippery"
        usb = (UsbMatcher(vid=0x2341), FLIPPER_USB)

    assert Flippery.usb_score(FLIPPER) == 3 > Generic.usb_score(FLIPPER) == 2
    assert Flippery.usb_score(ST_VCP) == 0 < Generic.usb_score(ST_VCP)


def test_ble_matcher() -> None:
    adv = Advertisement(
        "80:E1:26:00:00:01",
        local_name="Flipper Unyana",
        service_uuids=("00003082-0000-1000-8000-00805F9B34FB",),
        manufacturer_ids=(0x0ADD,),
    )
    assert BleMatcher(local_name="flipper *").matches(adv)
    assert BleMatcher(service_uuid="3082").matches(adv)  # the 16-bit short form
    assert not BleMatcher(service_uuid="3080").matches(adv)
    assert BleMatcher(local_name="Flipper*", manufacturer_id=0x0ADD).specificity == 2
    assert not BleMatcher(local_name="Flipper*", manufacturer_id=0x004C).matches(adv)
    assert not BleMatcher(local_name="Flipper*").matches(Advertisement("80:E1:26:00:00:02"))


def test_stable_id_is_never_the_port_path() -> None:
    assert Inert.stable_id(FLIPPER) == "flip_Unyana"
    assert Inert.stable_id(Advertisement("80:E1:26:00:00:01")) == "80:E1:26:00:00:01"
    serial_less = PortInfo("/dev/ttyUSB0", vid=0x1A86, pid=0x7523, description="USB Serial")
    moved = PortInfo("/dev/ttyUSB3", vid=0x1A86, pid=0x7523, description="USB Serial")
    key = Inert.stable_id(serial_less)
    assert key is not None and key.startswith("usb-1a86-7523-") and "ttyUSB" not in key
    assert Inert.stable_id(moved) == key
    assert Inert.stable_id(PortInfo("/dev/pts/3")) is None


# -- entry points ---------------------------------------------------------------------------


def test_load_drivers_skips_a_broken_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "tiny_hub_throwaway.py").write_text(
        textwrap.dedent(
            """
            from drivers.base import Driver, DriverStatus

            class ThrowawayDriver(Driver):
                name = "throwaway"
                capabilities = ("nothing",)

                async def start(self): pass
                async def stop(self): pass
                def status(self): return DriverStatus("online")
                async def probe(self): return True
            """
        )
    )
    (tmp_path / "tiny_hub_throwaway_broken.py").write_text(
        'raise ImportError("this driver needs libnothing.so")\n'
    )
    dist = tmp_path / "tiny_hub_throwaway-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tiny-hub-throwaway\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[tiny_hub.drivers]\n"
        "throwaway = tiny_hub_throwaway:ThrowawayDriver\n"
        "broken = tiny_hub_throwaway_broken:BrokenDriver\n"
        "not_a_driver = tiny_hub_throwaway:DriverStatus\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with caplog.at_level(logging.WARNING, logger="drivers.base"):
            first = load_drivers()
            second = load_drivers()
    finally:
        for module in ("tiny_hub_throwaway", "tiny_hub_throwaway_broken"):
            sys.modules.pop(module, None)

    assert [d.name for d in first if d.name == "throwaway"] == ["throwaway"]
    assert [d.__name__ for d in first] == [d.__name__ for d in second]
    warnings = [r.getMessage() for r in caplog.records]
    broken = [w for w in warnings if "'broken'" in w]
    assert len(broken) == 1  # once, not on every load
    assert "libnothing.so" in broken[0] and "tiny-hub-throwaway" in broken[0]
    assert len([w for w in warnings if "'not_a_driver'" in w]) == 1


# -- the serial line ------------------------------------------------------------------------


@pytest.fixture
async def line() -> AsyncIterator[SerialLine]:
    opened = SerialLine()
    yield opened
    await opened.close()


async def test_command_returns_the_output_without_echo_or_prompt(
    device: Callable[[], EchoDevice], line: SerialLine, tmp_path: Path
) -> None:
    dev = device()
    link = tmp_path / "flipper"
    link.symlink_to(dev.path)
    await line.open(str(link))  # a symlink to a pty works as the port
    assert await line.command("ping", prompt=PROMPT, within_s=5) == b"pong"
    assert await line.command("lines", prompt=PROMPT, within_s=5) == b"one\r\ntwo"
    assert dev.received.endswith(b"lines\r")


async def test_read_until_keeps_what_follows_the_marker(
    device: Callable[[], EchoDevice], line: SerialLine
) -> None:
    dev = device()
    await line.open(dev.path)
    await line.write(b"ping\r")
    assert await line.read_until(b"\r\n", within_s=5) == b"ping\r\n"
    assert await line.read_until(PROMPT, within_s=5) == b"pong\r\n" + PROMPT


async def test_stop_after_sends_ctrl_c_and_reads_to_the_prompt(
    device: Callable[[], EchoDevice], line: SerialLine
) -> None:
    dev = device()
    await line.open(dev.path)
    output = await line.command("stream", prompt=PROMPT, within_s=5, stop_after_s=0.2)
    assert output.startswith(b"tick\r\n") and output.endswith(b"stopped")
    assert dev.received.endswith(b"stream\r\x03")
    assert await line.command("ping", prompt=PROMPT, within_s=5) == b"pong"  # usable again


async def test_no_prompt_names_the_last_bytes(
    device: Callable[[], EchoDevice], line: SerialLine
) -> None:
    dev = device()
    await line.open(dev.path)
    with pytest.raises(NoPrompt) as caught:
        await line.command("silent", prompt=PROMPT, within_s=0.3)
    assert caught.value.tail.endswith(b"half an answer")
    assert "half an answer" in str(caught.value) and dev.path in str(caught.value)


async def test_line_too_long(device: Callable[[], EchoDevice], line: SerialLine) -> None:
    dev = device()
    await line.open(dev.path)
    with pytest.raises(LineTooLong):
        await line.command("flood", prompt=PROMPT, within_s=5, limit=1000)


async def test_unplug_mid_command_is_port_gone_not_a_hang(
    device: Callable[[], EchoDevice], line: SerialLine
) -> None:
    dev = device()
    await line.open(dev.path)
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, dev.unplug)
    async with asyncio.timeout(10):  # the command's own budget (30 s) must not be what ends it
        with pytest.raises(PortGone) as caught:
            await line.command("hang", prompt=PROMPT, within_s=30)
    assert "read failed" in str(caught.value)
    assert not line.is_open
    with pytest.raises(PortGone):  # and it stays gone
        await line.command("ping", prompt=PROMPT, within_s=1)


async def test_close_interrupts_a_running_command(
    device: Callable[[], EchoDevice], line: SerialLine
) -> None:
    dev = device()
    await line.open(dev.path)
    running = asyncio.create_task(line.command("hang", prompt=PROMPT, within_s=30))
    await until(lambda: dev.received.endswith(b"hang\r"), what="the command was sent")
    await line.close()
    async with asyncio.timeout(10):
        with pytest.raises(SerialLineError):
            await running


async def test_open_errors(device: Callable[[], EchoDevice], tmp_path: Path) -> None:
    with pytest.raises(PortGone):
        await SerialLine().open(str(tmp_path / "nothing-here"))
    dev = device()
    first = SerialLine()
    await first.open(dev.path)
    try:
        with pytest.raises(PortUnavailable, match="in use"):
            await SerialLine().open(dev.path)
    finally:
        await first.close()


# -- drivers for the manager tests ----------------------------------------------------------

EVENTS: list[tuple[str, str, str]] = []  # (what, device_id, port)


@pytest.fixture(autouse=True)
def _fresh_events() -> Iterator[None]:
    EVENTS.clear()
    yield
    EVENTS.clear()


@tool
def pty_echo(text: str) -> str:
    """Say ``text`` back."""
    return text


class Inert(Driver):
    """A driver that touches nothing; the base of the in-memory test drivers."""

    name = "inert"
    capabilities: ClassVar[tuple[str, ...]] = ()

    async def start(self) -> None:
        EVENTS.append(("start", self.device_id, self.port))

    async def stop(self) -> None:
        EVENTS.append(("stop", self.device_id, self.port))

    def status(self) -> DriverStatus:
        return DriverStatus("online", "inert")

    async def probe(self) -> bool:
        return True


class PtyDriver(Driver):
    """A Flipper-shaped driver: opens the port, syncs at the prompt, probes with an empty line."""

    name = "pty"
    usb = (FLIPPER_USB,)
    capabilities = ("echo",)

    def __init__(self, device_id: str, port: str, config: Any) -> None:
        super().__init__(device_id, port, config)
        self.line = SerialLine()

    async def start(self) -> None:
        EVENTS.append(("start", self.device_id, self.port))
        await self.line.open(self.port)
        await self.line.command("", prompt=PROMPT, within_s=2, echo=False)

    async def stop(self) -> None:
        EVENTS.append(("stop", self.device_id, self.port))
        await self.line.close()

    def status(self) -> DriverStatus:
        if self.line.is_open:
            return DriverStatus("online", f"shell on {self.port}")
        return DriverStatus("offline", "port closed")

    async def probe(self) -> bool:
        if self.line.busy:
            return True
        try:
            await self.line.command("", prompt=PROMPT, within_s=0.5, echo=False)
        except SerialLineError:
            return False
        return True

    def tools(self) -> list[AgentTool]:
        return [pty_echo]


class GenericVcp(Inert):
    name = "generic"
    usb = (GENERIC_VCP,)
    capabilities = ("serial",)


class Flaky(Inert):
    name = "flaky"
    usb = (UsbMatcher(vid=0x2341, pid=0x025F),)
    failures_left: ClassVar[int] = 0

    async def start(self) -> None:
        await super().start()
        if Flaky.failures_left > 0:
            Flaky.failures_left -= 1
            raise RuntimeError("boom: the board did not answer")


class Beacon(Inert):
    name = "beacon"
    ble = (BleMatcher(local_name="Flipper *"),)
    capabilities = ("ble",)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Ports:
    """A port lister the test sets."""

    def __init__(self, *ports: PortInfo) -> None:
        self.ports = list(ports)

    def __call__(self) -> Sequence[PortInfo]:
        return list(self.ports)


def flipper_on(path: str, serial: str = "flip_Test") -> PortInfo:
    return PortInfo(
        path, vid=0x0483, pid=0x5740, serial_number=serial, product=f"Flipper {serial[5:]}"
    )


@pytest.fixture
async def managers() -> AsyncIterator[list[DriverManager]]:
    made: list[DriverManager] = []
    yield made
    for manager in made:
        await manager.stop()


def by_id(manager: DriverManager) -> dict[str, dict[str, Any]]:
    return {record["device_id"]: record for record in manager.records()}


# -- the manager ----------------------------------------------------------------------------


async def test_pinned_symlink_to_a_pty_comes_and_goes(
    device: Callable[[], EchoDevice], tmp_path: Path, managers: list[DriverManager]
) -> None:
    first = device()
    link = tmp_path / "flipper"
    link.symlink_to(first.path)
    manager = DriverManager(
        [PtyDriver], {"pty": {"port": str(link)}}, list_ports=Ports(), scan_interval_s=0.05
    )
    managers.append(manager)
    await manager.start()
    device_id = f"pty:port:{link}"  # a pty has no serial number: the pinned path names it

    def status() -> str:
        record = by_id(manager).get(device_id)
        return record["status"] if record else "absent"

    await until(lambda: status() == "online", what="online on the pinned pty")
    record = by_id(manager)[device_id]
    assert record["transport"] == "serial" and record["capabilities"] == ["echo"]
    assert manager.capabilities() == ["echo"]
    assert [t.tool_name for t in manager.tools()] == ["pty_echo"]

    first.unplug()
    await until(lambda: status() == "offline", what="offline after the unplug")
    assert manager.tools() == [] and manager.capabilities() == []
    assert ("stop", device_id, str(link)) in EVENTS

    second = device()  # the device comes back on another pty, behind the same symlink
    link.unlink()
    link.symlink_to(second.path)
    await until(lambda: status() == "online", what="online again behind the same symlink")
    assert [r["device_id"] for r in manager.records()] == [device_id]
    assert [e for e in EVENTS if e[0] == "start"][-1] == ("start", device_id, str(link))
    assert second.received  # it really spoke to the new pty

    await manager.stop()
    assert status() == "offline"
    assert EVENTS[-1] == ("stop", device_id, str(link))


async def test_one_record_per_device_across_port_paths(
    device: Callable[[], EchoDevice], managers: list[DriverManager]
) -> None:
    first, other = device(), device()
    ports = Ports(flipper_on(first.path), ST_VCP)
    manager = DriverManager([GenericVcp, PtyDriver], list_ports=ports)
    managers.append(manager)
    await manager.scan()
    records = by_id(manager)
    assert set(records) == {"pty:flip_Test", "generic:206B3457"}  # the Flipper matcher wins
    assert records["pty:flip_Test"]["status"] == "online"
    assert records["pty:flip_Test"]["transport"] == "usb"
    assert records["pty:flip_Test"]["name"] == "Flipper Test"
    assert manager.capabilities() == ["echo", "serial"]

    first.unplug()  # the probe notices before the port list does
    await manager.scan()
    assert by_id(manager)["pty:flip_Test"]["status"] == "offline"
    ports.ports = [ST_VCP]
    await manager.scan()
    assert by_id(manager)["pty:flip_Test"]["status"] == "offline"

    ports.ports = [flipper_on(other.path), ST_VCP]  # replugged: another path, same serial
    await manager.scan()
    records = by_id(manager)
    assert len(records) == 2
    assert records["pty:flip_Test"]["status"] == "online"
    assert ("start", "pty:flip_Test", other.path) in EVENTS


async def test_probe_failure_marks_offline_and_stops_the_driver(
    device: Callable[[], EchoDevice], managers: list[DriverManager]
) -> None:
    dev = device()
    manager = DriverManager([PtyDriver], list_ports=Ports(flipper_on(dev.path)))
    managers.append(manager)
    await manager.scan()
    assert by_id(manager)["pty:flip_Test"]["status"] == "online"
    dev.mute = True  # the port is still there, the device stops answering
    await manager.scan()
    record = by_id(manager)["pty:flip_Test"]
    assert (record["status"], record["detail"]) == ("offline", "not answering")
    assert EVENTS[-1] == ("stop", "pty:flip_Test", dev.path)


async def test_a_failing_start_is_an_error_that_backs_off_and_recovers(
    caplog: pytest.LogCaptureFixture, managers: list[DriverManager]
) -> None:
    Flaky.failures_left = 2
    clock = FakeClock()
    board = PortInfo("/dev/ttyACM5", vid=0x2341, pid=0x025F, serial_number="NICLA1")
    manager = DriverManager([Flaky], list_ports=Ports(board), clock=clock)
    managers.append(manager)

    def attempts() -> int:
        return len([e for e in EVENTS if e[0] == "start"])

    with caplog.at_level(logging.INFO, logger="hub.drivers"):
        await manager.scan()
        record = by_id(manager)["flaky:NICLA1"]
        assert record["status"] == "error"
        assert record["detail"] == "start failed: boom: the board did not answer"
        await manager.scan()
        assert attempts() == 1  # within the 1 s backoff: no new attempt
        clock.now += 1.0
        await manager.scan()
        assert attempts() == 2 and by_id(manager)["flaky:NICLA1"]["status"] == "error"
        clock.now += 1.0
        await manager.scan()
        assert attempts() == 2  # the backoff doubled to 2 s
        clock.now += 1.0
        await manager.scan()
        assert attempts() == 3
        assert by_id(manager)["flaky:NICLA1"]["status"] == "online"

    errors = [r for r in caplog.records if "is error" in r.getMessage()]
    assert len(errors) == 1  # logged when the state changed, not on each attempt
    assert [r for r in caplog.records if "is online" in r.getMessage()]


async def test_denied_devices_and_disabled_drivers_are_never_started(
    device: Callable[[], EchoDevice], managers: list[DriverManager], tmp_path: Path
) -> None:
    dev = device()
    ports = Ports(flipper_on(dev.path, "flip_Denied"), ST_VCP)
    settings: dict[str, dict[str, Any]] = {
        "pty": {"deny": ["FLIP_DENIED"]},
        "generic": {"enabled": False, "port": dev.path},
    }
    manager = DriverManager([PtyDriver, GenericVcp], settings, list_ports=ports)
    managers.append(manager)
    await manager.scan()
    await manager.scan()
    assert manager.records() == []
    assert EVENTS == []
    assert not dev.received  # nobody opened the pty


async def test_ble_devices_come_and_go(managers: list[DriverManager]) -> None:
    seen = [Advertisement("80:E1:26:00:00:01", local_name="Flipper Unyana")]

    async def advertisements() -> list[Advertisement]:
        return list(seen)

    manager = DriverManager([Beacon], list_ports=Ports(), advertisements=advertisements)
    managers.append(manager)
    await manager.scan()
    record = by_id(manager)["beacon:80:E1:26:00:00:01"]
    assert (record["status"], record["transport"], record["name"]) == (
        "online",
        "ble",
        "Flipper Unyana",
    )
    seen.clear()
    await manager.scan()
    assert by_id(manager)["beacon:80:E1:26:00:00:01"]["status"] == "offline"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="deny"):
        DriverManager([Inert], {"inert": {"deny": "flip_X"}})
    with pytest.raises(ValueError, match="enabled"):
        DriverManager([Inert], {"inert": {"enabled": "yes"}})
    with pytest.raises(TypeError):
        DriverManager([DriverStatus])  # type: ignore[list-item]


class StubbornStop(Inert):
    name = "stubborn"
    usb = (UsbMatcher(vid=0x2341, pid=0x025F),)

    async def stop(self) -> None:
        await super().stop()
        raise OSError("the port would not close")


async def test_a_failing_stop_is_an_error_and_the_device_still_comes_back(
    managers: list[DriverManager],
) -> None:
    clock = FakeClock()
    board = PortInfo("/dev/ttyACM5", vid=0x2341, pid=0x025F, serial_number="NICLA1")
    ports = Ports(board)
    manager = DriverManager([StubbornStop], list_ports=ports, clock=clock)
    managers.append(manager)
    await manager.scan()
    assert by_id(manager)["stubborn:NICLA1"]["status"] == "online"
    ports.ports = []
    await manager.scan()
    record = by_id(manager)["stubborn:NICLA1"]
    assert record["status"] == "error"
    assert record["detail"] == "/dev/ttyACM5 is gone; stop failed: the port would not close"
    ports.ports = [board]
    clock.now += 1.0
    await manager.scan()
    assert by_id(manager)["stubborn:NICLA1"]["status"] == "online"


async def test_the_scan_loop_survives_a_failing_port_lister(
    caplog: pytest.LogCaptureFixture, managers: list[DriverManager]
) -> None:
    calls: list[int] = []

    def flaky_lister() -> list[PortInfo]:
        calls.append(1)
        if len(calls) <= 3:
            raise OSError("sysfs is having a moment")
        return [ST_VCP]

    manager = DriverManager([GenericVcp], list_ports=flaky_lister, scan_interval_s=0.02)
    managers.append(manager)
    with caplog.at_level(logging.INFO, logger="hub.drivers"):
        await manager.start()
        await until(
            lambda: [r["status"] for r in manager.records()] == ["online"], what="online after all"
        )
    failures = [r for r in caplog.records if "device scan failed" in r.getMessage()]
    assert len(failures) == 1 and "sysfs is having a moment" in failures[0].getMessage()
