"""The Flipper's protobuf RPC: the driver's codec against the protocol's test vectors and
property tests, then ``RpcSession`` and the driver against the emulator through real pyserial on
its pty (the emulator has its own codec: the two only meet on the wire)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest
import serial
from hypothesis import given
from hypothesis import strategies as st

from drivers.flipper.cli import CliError, key_values
from drivers.flipper.rpc import (
    DIR,
    FILE,
    Content,
    DeviceInfoRequest,
    DeviceInfoResponse,
    Empty,
    File,
    ListRequest,
    ListResponse,
    Main,
    PingRequest,
    PingResponse,
    PowerInfoRequest,
    PowerInfoResponse,
    ReadRequest,
    ReadResponse,
    RpcError,
    RpcSession,
    RpcSessionClosed,
    StatRequest,
    StatResponse,
    StopSession,
    Unknown,
    decode_main,
    encode_main,
    frame,
    unframe,
)
from drivers.flipper.usb import PROMPT, FlipperDriver, FlipperRefused
from drivers.flipper.wire import encode_varint
from drivers.transports.serial import SerialLine
from firmware_bridges.emulators.flipper import PROMPT as EMU_PROMPT
from firmware_bridges.emulators.flipper import FlipperEmulator
from harness.driver_host import RecordingHost

PING_VECTOR = bytes([8, 42, 6, 10, 4, 1, 2, 3, 4])
STOP_VECTOR = bytes.fromhex("039a0100")
EMPTY_VECTOR = bytes.fromhex("022200")

# --- the codec: test vectors --------------------------------------------------------------------


def test_ping_request_test_vector() -> None:
    assert frame(Main(content=PingRequest(bytes([1, 2, 3, 4])))) == PING_VECTOR
    assert unframe(PING_VECTOR) == (Main(content=PingRequest(bytes([1, 2, 3, 4]))), b"")


def test_stop_session_and_its_empty_answer() -> None:
    assert frame(Main(content=StopSession())) == STOP_VECTOR
    assert unframe(EMPTY_VECTOR + b"\r\n>: ") == (Main(content=Empty()), b"\r\n>: ")


def test_command_id_status_and_has_next() -> None:
    message = Main(command_id=300, command_status=7, has_next=True, content=Empty())
    assert encode_main(message) == bytes([0x08, 0xAC, 0x02, 0x10, 0x07, 0x18, 0x01, 0x22, 0x00])
    assert decode_main(encode_main(message)) == message


def test_storage_messages() -> None:
    listing = ListResponse((File(DIR, "subghz"), File(FILE, "a.sub", 12)))
    # field 8 { field 1 {type=1, name} field 1 {name, size} }
    assert encode_main(Main(content=listing)) == (
        b"\x42\x17" + b"\x0a\x0a\x08\x01\x12\x06subghz" + b"\x0a\x09\x12\x05a.sub\x18\x0c"
    )
    read = ReadResponse(File(size=3, data=b"\x00\r\n"))
    assert decode_main(encode_main(Main(content=read))).content == read
    assert encode_main(Main(content=StatRequest("/ext"))) == b"\xc2\x01\x06\x0a\x04/ext"


def test_unknown_fields_are_skipped() -> None:
    known = encode_main(Main(command_id=5, content=PingResponse(b"hi")))
    extra = (
        b"\xa0\x06\x2a"  # field 100, varint
        + b"\xa9\x06"
        + bytes(8)  # field 101, fixed64
        + b"\xb5\x06"
        + bytes(4)  # field 102, fixed32
        + b"\xba\x06\x03abc"  # field 103, bytes
    )
    assert decode_main(extra + known) == Main(command_id=5, content=PingResponse(b"hi"))
    # an unknown field inside a known message, and a content this codec does not model
    inner = b"\x0a\x02hi\x10\x01"
    assert decode_main(b"\x32\x06" + inner).content == PingResponse(b"hi")
    assert decode_main(b"\xa2\x02\x00").content == Unknown(36, b"")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x08", "truncated varint"),
        (b"\x32\x05\x0a\x02", "announced"),
        (b"\x32\x7f", "announced"),
        (b"\x0a\x01\x00", "expected a varint"),  # command_id as bytes
        (b"\x30\x01", "expected length-delimited"),  # ping response as a varint
        (b"\x0b", "wire type 3"),
        (b"\x09\x00", "truncated fixed"),
        (b"\x08" + b"\xff" * 10 + b"\x01", "longer than 10"),
        (b"\x00\x00", "field number 0"),
        (b"\x42\x02\x0a\x05", "announced"),  # a listing's File cut short
    ],
)
def test_malformed_input_is_an_rpc_error(data: bytes, problem: str) -> None:
    with pytest.raises(RpcError, match=problem):
        decode_main(data)


def test_hostile_frames_are_broken_streams() -> None:
    for data in (b"\xff\xff\xff\xff\xff\x01", encode_varint(10_000_000) + b"x"):
        with pytest.raises(RpcError) as caught:
            unframe(data)
        assert caught.value.broken
    assert unframe(PING_VECTOR[:-1]) == (None, PING_VECTOR[:-1])
    assert isinstance(RpcError("x"), CliError), "the tools already report CliErrors"


# --- the codec: properties ---------------------------------------------------------------------

uint32 = st.integers(min_value=0, max_value=2**32 - 1)
files = st.builds(
    File,
    type=st.sampled_from([FILE, DIR]),
    name=st.text(max_size=40),
    size=uint32,
    data=st.binary(max_size=600),
)
contents: st.SearchStrategy[Content] = st.one_of(
    st.just(Empty()),
    st.just(StopSession()),
    st.just(DeviceInfoRequest()),
    st.just(PowerInfoRequest()),
    st.builds(PingRequest, st.binary(max_size=100)),
    st.builds(PingResponse, st.binary(max_size=100)),
    st.builds(DeviceInfoResponse, st.text(max_size=40), st.text(max_size=40)),
    st.builds(PowerInfoResponse, st.text(max_size=40), st.text(max_size=40)),
    st.builds(ListRequest, st.text(max_size=255)),
    st.builds(ReadRequest, st.text(max_size=255)),
    st.builds(StatRequest, st.text(max_size=255)),
    st.builds(ListResponse, st.lists(files, max_size=8).map(tuple)),
    st.builds(ReadResponse, st.one_of(st.none(), files)),
    st.builds(StatResponse, st.one_of(st.none(), files)),
)
mains = st.builds(
    Main,
    command_id=uint32,
    command_status=st.integers(min_value=0, max_value=59),
    has_next=st.booleans(),
    content=st.one_of(st.none(), contents),
)


@given(mains, st.binary(max_size=20))
def test_encode_decode_round_trip(message: Main, rest: bytes) -> None:
    assert decode_main(encode_main(message)) == message
    framed = frame(message)
    assert unframe(framed + rest) == (message, rest)
    for cut in range(len(framed)):
        assert unframe(framed[:cut])[0] is None


@given(st.binary(max_size=300))
def test_garbage_never_crashes(data: bytes) -> None:
    for decode in (decode_main, unframe):
        with contextlib.suppress(RpcError):
            decode(data)


@given(mains, st.data())
def test_corrupted_messages_never_crash(message: Main, data: st.DataObject) -> None:
    encoded = bytearray(encode_main(message))
    if encoded:
        index = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
        encoded[index] = data.draw(st.integers(min_value=0, max_value=255))
        encoded = encoded[: data.draw(st.integers(min_value=0, max_value=len(encoded)))]
    with contextlib.suppress(RpcError):
        decode_main(bytes(encoded))


# --- the emulator's own codec on the wire (raw pyserial) -------------------------------------


@pytest.fixture
def emulator() -> Iterator[FlipperEmulator]:
    emu = FlipperEmulator()
    emu.start()
    yield emu
    emu.stop()


def raw_rpc(emulator: FlipperEmulator) -> serial.Serial:
    assert emulator.path is not None
    port = serial.Serial(emulator.path, timeout=5.0)
    assert port.read_until(EMU_PROMPT).endswith(EMU_PROMPT)
    port.write(b"start_rpc_session\r")
    assert port.read_until(b"\n") == b"start_rpc_session\r\n"
    return port


def test_emulator_answers_the_test_vectors_byte_for_byte(emulator: FlipperEmulator) -> None:
    port = raw_rpc(emulator)
    try:
        port.write(PING_VECTOR)
        # PingResponse (field 6, tag 0x32) with the same data, command_id 0 left out
        assert port.read(9) == bytes([8, 0x32, 6, 10, 4, 1, 2, 3, 4])
        port.write(STOP_VECTOR)
        assert port.read_until(EMU_PROMPT) == EMPTY_VECTOR + EMU_PROMPT
        port.write(b"uptime\r")
        assert b"Uptime: " in port.read_until(EMU_PROMPT)
    finally:
        port.close()
    assert emulator.sent == ["start_rpc_session", "uptime"]
    assert emulator.rpc_log == ["ping", "stop_session"]


# --- RpcSession against the emulator ---------------------------------------------------------


@pytest.fixture
async def line(emulator: FlipperEmulator) -> AsyncIterator[SerialLine]:
    assert emulator.path is not None
    opened = SerialLine()
    await opened.open(emulator.path)
    await opened.write(b"\r")
    await opened.read_until(PROMPT, within_s=5.0)
    yield opened
    await opened.close()


@pytest.fixture
async def session(line: SerialLine) -> RpcSession:
    started = RpcSession(line, within_s=2.0)
    await started.start()
    return started


async def test_device_and_power_info(session: RpcSession, emulator: FlipperEmulator) -> None:
    info = await session.device_info()
    assert info == dict(emulator.state.device_info("_"))
    assert info["hardware_name"] == "Unyana" and info["protobuf_version_minor"] == "25"
    parts = await session.call(DeviceInfoRequest())
    assert len(parts) == len(info) > 1
    assert [m.has_next for m in parts] == [True] * (len(parts) - 1) + [False]
    power = await session.power_info()
    assert power == dict(emulator.state.power_info("_"))
    assert power["charge_level"] == "87"


async def test_ping_and_command_ids(session: RpcSession) -> None:
    assert await session.ping(b"\x00\xffhello") == b"\x00\xffhello"
    assert await session.ping() == b""
    ids = [m.command_id for m in await session.call(PingRequest(b"x"))]
    later = [m.command_id for m in await session.call(PingRequest(b"y"))]
    assert later[0] == ids[0] + 1


async def test_list_with_more_than_eight_entries(
    session: RpcSession, emulator: FlipperEmulator
) -> None:
    for index in range(19):
        emulator.state.put_file(f"/ext/many/f{index:02}.txt", b"x" * index)
    emulator.state.put_file("/ext/many/sub/inner", b"")
    parts = await session.call(ListRequest("/ext/many"))
    assert [len(p.content.files) for p in parts if isinstance(p.content, ListResponse)] == [
        8,
        8,
        4,
    ]
    entries = await session.storage_list("/ext/many")
    assert [(f.name, f.size, f.is_dir) for f in entries] == [
        *[(f"f{i:02}.txt", i, False) for i in range(19)],
        ("sub", 0, True),
    ]
    assert [f.name for f in await session.storage_list("/")] == ["any", "int", "ext"]
    emulator.state.put_file("/ext/empty/x", b"")
    del emulator.state.files["/ext/empty/x"]
    assert await session.storage_list("/ext/empty") == []


async def test_read_a_binary_file_across_messages(
    session: RpcSession, emulator: FlipperEmulator
) -> None:
    data = bytes(range(256)) * 8 + b"\r\n>: " + b"tail"  # 2057 bytes, a prompt inside
    emulator.state.put_file("/ext/blob.bin", data)
    parts = await session.call(ReadRequest("/ext/blob.bin"))
    sizes = [
        len(p.content.file.data)
        for p in parts
        if isinstance(p.content, ReadResponse) and p.content.file
    ]
    assert sizes == [512, 512, 512, 512, 9]
    assert await session.storage_read("/ext/blob.bin") == data
    emulator.state.put_file("/ext/zero", b"")
    assert await session.storage_read("/ext/zero") == b""


async def test_stat(session: RpcSession, emulator: FlipperEmulator) -> None:
    garage = await session.storage_stat("/ext/subghz/garage.sub")
    assert (garage.type, garage.size) == (
        FILE,
        len(emulator.state.files["/ext/subghz/garage.sub"] or b""),
    )
    assert (await session.storage_stat("/ext/subghz")).is_dir
    with pytest.raises(RpcError, match="file/dir not exist") as missing:
        await session.storage_stat("/ext/nothing")
    assert missing.value.status == 7 and not missing.value.broken
    with pytest.raises(RpcError, match="invalid name/path"):
        await session.storage_read("/etc/passwd")
    assert await session.ping(b"still fine") == b"still fine"


async def test_a_request_without_a_handler_is_not_implemented(session: RpcSession) -> None:
    """rpc.c: a content that decodes but has no handler (here a response sent as a request)."""
    with pytest.raises(RpcError, match="ERROR_NOT_IMPLEMENTED") as caught:
        await session.call(Unknown(40, b""))  # system_protobuf_version_response
    assert caught.value.status == 3 and not caught.value.broken
    assert await session.ping(b"open") == b"open", "the session stays open"


async def test_stop_session_then_the_cli_works(
    session: RpcSession, line: SerialLine, emulator: FlipperEmulator
) -> None:
    await session.ping(b"a")
    await session.stop()
    assert not session.active
    output = await line.command("device_info", prompt=PROMPT, within_s=5.0)
    assert key_values(output)["hardware_name"] == "Unyana"
    with pytest.raises(RpcError, match="no RPC session"):
        await session.ping()
    again = RpcSession(line, within_s=2.0)
    await again.start()
    assert await again.ping(b"b") == b"b"
    await again.stop()
    assert emulator.sent == ["start_rpc_session", "device_info", "start_rpc_session"]


async def test_truncated_frame_breaks_the_session(
    line: SerialLine, emulator: FlipperEmulator
) -> None:
    session = RpcSession(line, within_s=0.5)
    await session.start()
    emulator.truncate_next_rpc_frame()
    with pytest.raises(RpcError, match="truncated") as caught:
        await session.device_info()
    assert caught.value.broken and session.broken
    with pytest.raises(RpcError):
        await session.ping()


async def test_oversized_varint_breaks_the_session(
    line: SerialLine, emulator: FlipperEmulator
) -> None:
    session = RpcSession(line, within_s=2.0)
    await session.start()
    emulator.oversized_varint_next_rpc_frame()
    with pytest.raises(RpcError, match="longer than 5 bytes") as caught:
        await session.ping(b"x")
    assert caught.value.broken


# --- the driver ----------------------------------------------------------------------------------


@pytest.fixture
async def driver(emulator: FlipperEmulator) -> AsyncIterator[tuple[FlipperDriver, list[str]]]:
    assert emulator.path is not None
    audited: list[str] = []
    flipper = FlipperDriver("flipper-1", emulator.path, {})
    flipper.host = RecordingHost(audited=audited)
    flipper.rpc_within_s = 1.0
    await flipper.start()
    yield flipper, audited
    await flipper.stop()


async def test_driver_reads_over_rpc_and_audits_it(
    driver: tuple[FlipperDriver, list[str]], emulator: FlipperEmulator
) -> None:
    flipper, audited = driver
    data = bytes(range(256)) * 4 + b"\r\n>: \x03"
    emulator.state.put_file("/ext/apps_data/blob.bin", data)
    assert await flipper.read_file("/ext/apps_data/blob.bin") == data
    result = await flipper.files("read", "/ext/subghz/garage.sub")
    assert result["text"].startswith("Filetype: Flipper SubGhz") and result["size"] == len(
        emulator.state.files["/ext/subghz/garage.sub"] or b""
    )
    assert audited[-4:] == [
        "start_rpc_session",
        "rpc storage_stat /ext/subghz/garage.sub",
        "rpc storage_read /ext/subghz/garage.sub",
        "rpc stop_session",
    ]
    assert emulator.rpc_log[-3:] == [
        "storage_stat /ext/subghz/garage.sub",
        "storage_read /ext/subghz/garage.sub",
        "stop_session",
    ]
    assert [line for line in emulator.sent if line] == [
        line for line in audited if line and not line.startswith("rpc ")
    ], "every CLI line the device ran was audited"
    listed = await flipper.files("list", "/ext/subghz")  # the CLI still works
    assert listed["entries"][0]["name"] == "garage.sub"


async def test_driver_refusals_keep_the_session_clean(
    driver: tuple[FlipperDriver, list[str]], emulator: FlipperEmulator
) -> None:
    flipper, _ = driver
    emulator.state.put_file("/ext/big.bin", bytes(64 * 1024 + 1))
    with pytest.raises(FlipperRefused, match="limited to"):
        await flipper.read_file("/ext/big.bin")
    with pytest.raises(FlipperRefused, match="not a file"):
        await flipper.read_file("/ext/subghz")
    with pytest.raises(FlipperRefused, match="only paths under"):
        await flipper.read_file("/etc/passwd")
    with pytest.raises(CliError, match="not exist"):
        await flipper.files("read", "/ext/nothing.txt")
    assert "storage_read /ext/big.bin" not in emulator.rpc_log
    assert emulator.rpc_log.count("stop_session") == 3
    assert key_values(await flipper.run("device_info"))["hardware_name"] == "Unyana"


@pytest.mark.parametrize("fault", ["truncate", "oversized"])
async def test_driver_recovers_from_a_broken_rpc_exchange(
    driver: tuple[FlipperDriver, list[str]], emulator: FlipperEmulator, fault: str
) -> None:
    flipper, _ = driver
    if fault == "truncate":
        emulator.truncate_next_rpc_frame()
    else:
        emulator.oversized_varint_next_rpc_frame()
    with pytest.raises(RpcError) as caught:
        await flipper.read_file("/ext/subghz/garage.sub")
    assert caught.value.broken
    assert "stop_session" not in emulator.rpc_log, "the port was reopened instead"
    # a fresh shell: the CLI and the next RPC read both work
    assert key_values(await flipper.run("device_info"))["hardware_name"] == "Unyana"
    assert (await flipper.read_file("/ext/subghz/garage.sub")).startswith(b"Filetype:")
    assert flipper.status().state == "online"


# --- after bad input, as the firmware does (rpc.c, rpc_system.c, rpc_storage.c) -----------------

DECODE_ERROR_ANSWER = bytes.fromhex("0410022200")
"""Empty with command_id 0 and ERROR_DECODE: what rpc.c sends before closing the session."""


@pytest.mark.parametrize(
    ("sent", "what"),
    [
        (bytes.fromhex("050803ffffff"), "a frame that does not decode"),
        (bytes.fromhex("00"), "an empty request"),
        (bytes.fromhex("05080a820500"), "a content number outside the oneof (80)"),
        (bytes.fromhex("0608033a020801"), "a list request whose path is a varint"),
    ],
)
def test_a_request_that_does_not_decode_closes_the_session(
    emulator: FlipperEmulator, sent: bytes, what: str
) -> None:
    port = raw_rpc(emulator)
    try:
        port.write(sent)
        answer = port.read_until(EMU_PROMPT)
        assert answer == DECODE_ERROR_ANSWER + EMU_PROMPT, what
        port.write(b"uptime\r")  # the text shell again
        assert b"Uptime: " in port.read_until(EMU_PROMPT)
    finally:
        port.close()
    assert emulator.rpc_log == ["decode_error"]
    assert unframe(DECODE_ERROR_ANSWER)[0] == Main(command_id=0, command_status=2, content=Empty())


def test_a_ping_with_has_next_is_refused(emulator: FlipperEmulator) -> None:
    port = raw_rpc(emulator)
    try:
        port.write(frame(Main(command_id=7, has_next=True, content=PingRequest(b"x"))))
        answer = unframe(port.read(7))[0]
        assert answer == Main(command_id=7, command_status=15, content=Empty())
        port.write(frame(Main(command_id=8, content=PingRequest(b"y"))))
        assert unframe(port.read(9))[0] == Main(command_id=8, content=PingResponse(b"y"))
    finally:
        port.close()


async def test_the_session_closes_after_a_decode_error_and_a_new_one_works(
    line: SerialLine, emulator: FlipperEmulator
) -> None:
    session = RpcSession(line, within_s=2.0)
    await session.start()
    emulator.replace_next_rpc_request(bytes.fromhex("0803ffffff"))
    with pytest.raises(RpcSessionClosed) as caught:
        await session.ping(b"lost")
    assert caught.value.status == 2 and not session.active
    await line.read_until(PROMPT, within_s=2.0)  # the firmware is back in its text shell
    output = await line.command("device_info", prompt=PROMPT, within_s=5.0)
    assert key_values(output)["hardware_name"] == "Unyana"
    again = RpcSession(line, within_s=2.0)
    await again.start()
    assert await again.ping(b"found") == b"found"


@pytest.mark.parametrize("garbled", [bytes.fromhex("0803ffffff"), b""])
async def test_driver_retries_once_when_the_flipper_closes_the_session(
    driver: tuple[FlipperDriver, list[str]], emulator: FlipperEmulator, garbled: bytes
) -> None:
    flipper, audited = driver
    emulator.replace_next_rpc_request(garbled)
    assert (await flipper.read_file("/ext/subghz/garage.sub")).startswith(b"Filetype:")
    assert emulator.rpc_log == [
        "decode_error",
        "storage_stat /ext/subghz/garage.sub",
        "storage_read /ext/subghz/garage.sub",
        "stop_session",
    ]
    assert audited.count("start_rpc_session") == 2, "one retried command"
    assert key_values(await flipper.run("device_info"))["hardware_name"] == "Unyana"
    emulator.replace_next_rpc_request(garbled)
    await flipper.signal()
    assert emulator.state.alerts == 1
