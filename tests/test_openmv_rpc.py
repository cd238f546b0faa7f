"""OpenMV's RPC protocol: the host's codec against upstream's arithmetic (property tests and fixed
values), then ``RpcHost`` against the Nicla Vision emulator through real pyserial on its pty. The
emulator has a codec of its own: the two only meet on the wire."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Iterator

import pytest
import serial
from hypothesis import given
from hypothesis import strategies as st

from drivers.nicla_vision.openmv_rpc import (
    ACK_COMMAND_DATA,
    ACK_COMMAND_HEADER,
    COMMAND_DATA,
    COMMAND_HEADER,
    MAX_COMMAND_DATA,
    POLL_RESULT_DATA,
    POLL_RESULT_HEADER,
    READ_TIMEOUT_S,
    RESULT_DATA,
    RESULT_HEADER,
    BadMagic,
    CrcMismatch,
    PacketError,
    PacketTruncated,
    RpcHost,
    RpcLinkError,
    RpcUnknownFunction,
    command_header,
    crc16,
    decode_packet,
    encode_packet,
    name_hash,
)
from drivers.transports.serial import SerialLine
from firmware_bridges.emulators.nicla_vision import NiclaVisionEmulator

MAGICS = st.sampled_from([COMMAND_HEADER, COMMAND_DATA, RESULT_HEADER, RESULT_DATA])


def upstream_hash(name: str) -> int:
    """``rpc._hash`` as tools/rpc/rpc.py writes it (ord of each character, masked at the end)."""
    h = 5381
    for ch in name:
        h = ((h << 5) + h) ^ ord(ch)
    return h & 0xFFFFFFFF


def upstream_crc(data: bytes) -> int:
    """``rpc.__def_crc_16``, bit by bit."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = (crc << 1) ^ (0x1021 if crc & 0x8000 else 0)
    return crc & 0xFFFF


# --- the codec ------------------------------------------------------------------------------------


def test_known_hashes_and_packets() -> None:
    assert name_hash("") == 5381
    assert name_hash("a") == 0x0002B5C4
    assert name_hash("status") == 0x7F9E0971
    assert name_hash("jpeg_image_snapshot") == 0xCB59AA16
    assert name_hash("jpeg_image_read") == 0x317282A8
    assert crc16(b"123456789") == 0x29B1  # CRC-16/CCITT-FALSE's check value
    assert bytes.fromhex("0912e495") == ACK_COMMAND_HEADER
    assert bytes.fromhex("d1ab983f") == ACK_COMMAND_DATA
    assert bytes.fromhex("219061ab") == POLL_RESULT_HEADER
    assert bytes.fromhex("ba1d552f") == POLL_RESULT_DATA
    assert command_header("status", b"") == bytes.fromhex("091271099e7f00000000c5bb")


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_hash_is_upstreams_for_ascii_names(name: str) -> None:
    assert name_hash(name) == upstream_hash(name)


@given(st.binary(max_size=300))
def test_crc_is_upstreams(data: bytes) -> None:
    assert crc16(data) == upstream_crc(data)


@given(MAGICS, st.binary(max_size=300))
def test_round_trip(magic: int, payload: bytes) -> None:
    packet = encode_packet(magic, payload)
    assert len(packet) == len(payload) + 4
    assert decode_packet(packet, magic=magic, size=len(payload)) == payload


@given(MAGICS, st.binary(max_size=200), st.data())
def test_any_single_byte_corruption_is_detected(
    magic: int, payload: bytes, data: st.DataObject
) -> None:
    packet = bytearray(encode_packet(magic, payload))
    index = data.draw(st.integers(0, len(packet) - 1))
    packet[index] ^= data.draw(st.integers(1, 255))
    with pytest.raises(PacketError) as caught:
        decode_packet(bytes(packet), magic=magic, size=len(payload))
    assert isinstance(caught.value, BadMagic if index < 2 else CrcMismatch)


@given(MAGICS, st.binary(max_size=200), st.data())
def test_truncated_input_never_decodes(magic: int, payload: bytes, data: st.DataObject) -> None:
    packet = encode_packet(magic, payload)
    cut = data.draw(st.integers(0, len(packet) - 1))
    with pytest.raises(PacketTruncated):
        decode_packet(packet[:cut], magic=magic, size=len(payload))


@given(MAGICS, st.binary(max_size=50), st.binary(min_size=1, max_size=10))
def test_trailing_bytes_never_decode(magic: int, payload: bytes, extra: bytes) -> None:
    with pytest.raises(PacketError):
        decode_packet(encode_packet(magic, payload) + extra, magic=magic, size=len(payload))


def test_a_packet_of_another_kind_is_refused() -> None:
    with pytest.raises(BadMagic, match="0x9021"):
        decode_packet(ACK_COMMAND_HEADER, magic=RESULT_HEADER, size=0)


# --- the wire, raw --------------------------------------------------------------------------------


@pytest.fixture
def emulator() -> Iterator[NiclaVisionEmulator]:
    device = NiclaVisionEmulator()
    device.start()
    yield device
    device.stop()


def exchange(port: serial.Serial, packet: bytes, size: int) -> bytes:
    """One try of a step as upstream's master does it: flush, write, read a short answer."""
    port.reset_input_buffer()
    port.write(packet)
    return bytes(port.read(size))


def test_the_emulator_answers_a_raw_exchange_byte_for_byte(emulator: NiclaVisionEmulator) -> None:
    """What upstream's master writes and reads, with pyserial and nothing of ours in between;
    every step is tried again until answered, as the master does (the board flushes first)."""
    assert emulator.path is not None
    port = serial.Serial(emulator.path, baudrate=115200, timeout=0.05)
    result = None
    try:
        for _ in range(100):
            if exchange(port, command_header("status", b""), 4) == ACK_COMMAND_HEADER:
                port.write(encode_packet(COMMAND_DATA))
                if port.read(4) == ACK_COMMAND_DATA:
                    break
        else:
            pytest.fail("the command was never acknowledged")
        for _ in range(100):
            header = exchange(port, POLL_RESULT_HEADER, 8)
            if len(header) == 8:
                (length,) = struct.unpack("<I", decode_packet(header, magic=RESULT_HEADER, size=4))
                port.write(POLL_RESULT_DATA)
                raw = port.read(length + 4)
                if len(raw) == length + 4:
                    result = decode_packet(raw, magic=RESULT_DATA, size=length)
                    break
    finally:
        port.close()
    assert result is not None and result.startswith(b'{"board":"Arduino Nicla Vision"')
    assert set(emulator.calls) == {"status"}


# --- RpcHost against the emulator -----------------------------------------------------------------


@pytest.fixture
async def line(emulator: NiclaVisionEmulator) -> AsyncIterator[SerialLine]:
    assert emulator.path is not None
    opened = SerialLine(read_timeout_s=READ_TIMEOUT_S)
    await opened.open(emulator.path)
    yield opened
    await opened.close()


@pytest.fixture
def host(line: SerialLine) -> RpcHost:
    return RpcHost(line)


async def snapshot(host: RpcHost) -> int:
    answer = await host.call("jpeg_image_snapshot", b"sensor.RGB565,sensor.QVGA,80", timeout_s=5)
    (size,) = struct.unpack("<I", answer)
    return int(size)


def collapsed(calls: list[str]) -> list[str]:
    """Calls with repeats in a row folded (a late acknowledgement re-runs a command)."""
    return [call for index, call in enumerate(calls) if not index or calls[index - 1] != call]


def read_args(offset: int, size: int) -> bytes:
    return struct.pack("<II", offset, size)


async def test_calls_and_results(host: RpcHost, emulator: NiclaVisionEmulator) -> None:
    size = await snapshot(host)
    photo = await host.call("jpeg_image_read", read_args(0, size), timeout_s=2)
    assert len(photo) == size and photo[:3] == b"\xff\xd8\xff"
    head = await host.call("jpeg_image_read", read_args(0, 100), timeout_s=2)
    assert head == photo[:100]
    assert collapsed(emulator.calls) == ["jpeg_image_snapshot", "jpeg_image_read"]
    failed = await host.call("jpeg_image_snapshot", b"sensor.RGB565,sensor.XGA", timeout_s=2)
    assert failed == b"ERR:ValueError: unknown sensor.XGA"


async def test_an_unknown_name_is_answered_empty(host: RpcHost) -> None:
    with pytest.raises(RpcUnknownFunction) as caught:
        await host.call("no_such_function", timeout_s=1)
    assert str(caught.value) == (
        "the Nicla Vision has no RPC function no_such_function; "
        "flash firmware_bridges/nicla_vision/main.py"
    )


async def test_a_damaged_result_is_asked_for_again(
    host: RpcHost, emulator: NiclaVisionEmulator
) -> None:
    size = await snapshot(host)
    clean = await host.call("jpeg_image_read", read_args(0, size), timeout_s=2)
    emulator.corrupt_next_packet(RESULT_DATA)
    emulator.truncate_next_packet(RESULT_DATA)
    again = await host.call("jpeg_image_read", read_args(0, size), timeout_s=2, attempts=3)
    assert again == clean
    assert host.repeated_calls == 2
    assert emulator.calls.count("jpeg_image_read") >= 4


@pytest.mark.parametrize(
    ("damage", "said"),
    [("corrupt", "CRC mismatch"), ("truncate", "stopped short")],
)
async def test_damage_without_retries_is_a_link_error(
    host: RpcHost, emulator: NiclaVisionEmulator, damage: str, said: str
) -> None:
    size = await snapshot(host)
    if damage == "corrupt":
        emulator.corrupt_next_packet(RESULT_DATA)
    else:
        emulator.truncate_next_packet(RESULT_DATA)
    with pytest.raises(RpcLinkError) as caught:
        await host.call("jpeg_image_read", read_args(0, size), timeout_s=2)
    assert said in str(caught.value) and not caught.value.gone
    assert str(caught.value).startswith("the Nicla Vision did not answer jpeg_image_read: ")
    assert (await host.call("jpeg_image_read", read_args(0, 4), timeout_s=2))[:2] == b"\xff\xd8"


@pytest.mark.parametrize(
    ("magic", "retries"), [(COMMAND_HEADER, 2), (COMMAND_DATA, 0), (RESULT_HEADER, 0)]
)
async def test_damaged_handshakes_resynchronise_within_the_call(
    host: RpcHost, emulator: NiclaVisionEmulator, magic: int, retries: int
) -> None:
    """Each side flushes and tries again. A damaged (or cut) data acknowledgement still says the
    board has the command: the host polls for its result rather than sending it again."""
    emulator.corrupt_next_packet(magic)
    status = await host.call("status", timeout_s=2)
    assert status.startswith(b"{")
    emulator.truncate_next_packet(magic)
    assert (await host.call("status", timeout_s=2)).startswith(b"{")
    assert host.repeated_calls == 0
    assert host.command_retries >= retries
    assert emulator.calls.count("status") >= 2  # more only if an ack came late


async def test_a_result_the_host_gave_up_on_is_taken_off_the_board(
    host: RpcHost, emulator: NiclaVisionEmulator
) -> None:
    """The board keeps a result for seconds (a busy host may be slow to fetch it); after a call
    its host abandoned, the next command finds the board serving that result. The host asks for
    it and drops it, and the board listens again (it would not for seconds otherwise)."""
    with pytest.raises(RpcLinkError, match="no result"):
        await host.call("video_burst", b"GRAYSCALE,QQVGA,50,6,200", timeout_s=0.2)
    status = await host.call("status", timeout_s=2, send_timeout_s=4)
    assert status.startswith(b"{")
    assert host.drained_results == 1
    assert emulator.calls[-2:] == ["video_burst", "status"]


async def test_a_silent_board_is_a_link_error(host: RpcHost, emulator: NiclaVisionEmulator) -> None:
    emulator.go_silent()
    with pytest.raises(RpcLinkError, match=r"did not answer status: no acknowledgement .* 0\.3 s"):
        await host.call("status", timeout_s=0.3, send_timeout_s=0.3)
    emulator.resume()
    assert (await host.call("status", timeout_s=2)).startswith(b"{")


async def test_a_result_over_the_limit_is_refused(line: SerialLine) -> None:
    small = RpcHost(line, max_result=16)
    with pytest.raises(RpcLinkError, match=r"announced a \d+-byte result \(the limit is 16\)"):
        await small.call("status", timeout_s=2)
    with pytest.raises(ValueError, match="limit"):
        await small.call("status", b"x" * (MAX_COMMAND_DATA + 1), timeout_s=1)


async def test_the_board_vanishing_mid_result(
    host: RpcHost, line: SerialLine, emulator: NiclaVisionEmulator
) -> None:
    size = await snapshot(host)
    emulator.vanish_mid_next_result()
    with pytest.raises(RpcLinkError) as caught:
        await host.call("jpeg_image_read", read_args(0, size), timeout_s=2, attempts=3)
    assert caught.value.gone and "went away" in str(caught.value)
    assert not line.is_open and not emulator.plugged


async def test_upstreams_cut_through_read(
    host: RpcHost, line: SerialLine, emulator: NiclaVisionEmulator
) -> None:
    """``jpeg_image_read`` with no argument: an empty result, then the JPEG raw (upstream's
    ``schedule_callback`` recipe), as the controller example reads it with ``get_bytes``."""
    size = await snapshot(host)
    with pytest.raises(RpcUnknownFunction):
        await host.call("jpeg_image_read", timeout_s=2)
    raw = await line.read_exactly(size, within_s=5)
    assert raw[:3] == b"\xff\xd8\xff" and raw.rstrip(b"\x00").endswith(b"\xff\xd9")
