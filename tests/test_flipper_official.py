"""The Flipper RPC checked with the official protobuf messages (``tests/flipper_official``).

Two things are held against code we did not write: the driver's hand-written codec (every
message it knows, byte for byte both ways, and every ``content`` number of the official oneof)
and the emulator's answers on its pty (requests encoded and answers decoded by the official
``PB.Main``, values compared with the emulated device's state).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
import serial
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.flipper.rpc import (
    AudiovisualAlertRequest,
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
    StatRequest,
    StatResponse,
    StopSession,
    Unknown,
    decode_main,
    encode_main,
)
from firmware_bridges.emulators.flipper import PROMPT, FlipperEmulator, FlipperState
from tests.flipper_official import flipper_pb2
from tests.flipper_official.client import OfficialClient

PbMain = flipper_pb2.Main
STATUS = flipper_pb2.CommandStatus

# --- the driver's codec against the official messages -----------------------------------------


def _set_file(target: Message, file: File) -> None:
    target.SetInParent()
    target.type = file.type  # type: ignore[attr-defined]
    target.name = file.name  # type: ignore[attr-defined]
    target.size = file.size  # type: ignore[attr-defined]
    target.data = file.data  # type: ignore[attr-defined]


def official(message: Main) -> Message:
    """The same message built with the official classes."""
    out = PbMain(
        command_id=message.command_id,
        command_status=message.command_status,
        has_next=message.has_next,
    )
    content = message.content
    simple: dict[type, str] = {
        Empty: "empty",
        StopSession: "stop_session",
        DeviceInfoRequest: "system_device_info_request",
        PowerInfoRequest: "system_power_info_request",
        AudiovisualAlertRequest: "system_play_audiovisual_alert_request",
    }
    if content is None:
        return out
    if type(content) in simple:
        getattr(out, simple[type(content)]).SetInParent()
    elif isinstance(content, PingRequest | PingResponse):
        name = "request" if isinstance(content, PingRequest) else "response"
        getattr(out, f"system_ping_{name}").data = content.data
    elif isinstance(content, DeviceInfoResponse | PowerInfoResponse):
        name = "device" if isinstance(content, DeviceInfoResponse) else "power"
        field = getattr(out, f"system_{name}_info_response")
        field.key, field.value = content.key, content.value
    elif isinstance(content, ListRequest | ReadRequest | StatRequest):
        kind = {ListRequest: "list", ReadRequest: "read", StatRequest: "stat"}[type(content)]
        getattr(out, f"storage_{kind}_request").path = content.path
    elif isinstance(content, ListResponse):
        out.storage_list_response.SetInParent()
        for file in content.files:
            _set_file(out.storage_list_response.file.add(), file)
    elif isinstance(content, ReadResponse | StatResponse):
        kind = "read" if isinstance(content, ReadResponse) else "stat"
        response = getattr(out, f"storage_{kind}_response")
        response.SetInParent()
        if content.file is not None:
            _set_file(response.file, content.file)
    else:  # pragma: no cover - the strategies below make only the messages above
        raise AssertionError(f"no official counterpart for {content!r}")
    return out


uint32 = st.integers(min_value=0, max_value=2**32 - 1)
texts = st.text(max_size=30)
files = st.builds(File, st.sampled_from([0, 1]), texts, uint32, st.binary(max_size=600))
contents: st.SearchStrategy[Content] = st.one_of(
    st.just(Empty()),
    st.just(StopSession()),
    st.just(DeviceInfoRequest()),
    st.just(PowerInfoRequest()),
    st.just(AudiovisualAlertRequest()),
    st.builds(PingRequest, st.binary(max_size=64)),
    st.builds(PingResponse, st.binary(max_size=64)),
    st.builds(DeviceInfoResponse, texts, texts),
    st.builds(PowerInfoResponse, texts, texts),
    st.builds(ListRequest, st.text(max_size=255)),
    st.builds(ReadRequest, st.text(max_size=255)),
    st.builds(StatRequest, st.text(max_size=255)),
    st.builds(ListResponse, st.lists(files, max_size=8).map(tuple)),
    st.builds(ReadResponse, st.none() | files),
    st.builds(StatResponse, st.none() | files),
)
mains = st.builds(
    Main,
    command_id=uint32,
    command_status=st.integers(min_value=0, max_value=22),
    has_next=st.booleans(),
    content=contents,
)


@settings(deadline=None)  # a loaded machine makes an example slow, not wrong
@given(mains)
def test_the_codec_is_byte_identical_to_the_official_messages(message: Main) -> None:
    reference = official(message)
    assert encode_main(message) == reference.SerializeToString()
    assert decode_main(reference.SerializeToString()) == message
    assert PbMain.FromString(encode_main(message)) == reference


CONTENT_ONEOF = PbMain.DESCRIPTOR.oneofs_by_name["content"].fields


@pytest.mark.parametrize("field", CONTENT_ONEOF, ids=[f.name for f in CONTENT_ONEOF])
def test_every_official_content_number_is_kept(field: object) -> None:
    """A content the driver has no class for is kept as ``Unknown``, never dropped: encoded
    again, it is the official message it came from."""
    name = getattr(field, "name")  # noqa: B009 - a protobuf FieldDescriptor
    reference = PbMain(command_id=5)
    getattr(reference, name).SetInParent()
    decoded = decode_main(reference.SerializeToString())
    assert decoded.content is not None, name
    assert PbMain.FromString(encode_main(decoded)).WhichOneof("content") == name
    if isinstance(decoded.content, Unknown):
        assert decoded.content.number == getattr(field, "number")  # noqa: B009


# --- the emulator answering official requests on its pty --------------------------------------


def _mark(name: str) -> Callable[[Message], None]:
    return lambda m: getattr(m, name).SetInParent()


def _path(name: str, path: str) -> Callable[[Message], None]:
    def fill(message: Message) -> None:
        getattr(message, name).path = path

    return fill


@pytest.fixture
def emulator() -> Iterator[FlipperEmulator]:
    with FlipperEmulator(FlipperState()) as device:
        yield device


@pytest.fixture
def client(emulator: FlipperEmulator) -> Iterator[OfficialClient]:
    assert emulator.path is not None
    port = serial.Serial(emulator.path, timeout=10.0)
    assert port.read_until(PROMPT).endswith(PROMPT)
    port.write(b"start_rpc_session\r")
    assert port.read_until(b"\n") == b"start_rpc_session\r\n"
    yield OfficialClient(port)
    port.close()


def test_system_requests(client: OfficialClient, emulator: FlipperEmulator) -> None:
    state = emulator.state

    def ping(message: Message) -> None:
        message.system_ping_request.data = b"\x00\xffpong"

    (pong,) = client.call(ping)
    assert pong.WhichOneof("content") == "system_ping_response"
    assert pong.system_ping_response.data == b"\x00\xffpong"
    info = client.call(_mark("system_device_info_request"))
    assert [
        (p.system_device_info_response.key, p.system_device_info_response.value) for p in info
    ] == (state.device_info("_"))
    power = client.call(_mark("system_power_info_request"))
    assert [
        (p.system_power_info_response.key, p.system_power_info_response.value) for p in power
    ] == (state.power_info("_"))
    (version,) = client.call(_mark("system_protobuf_version_request"))
    answer = version.system_protobuf_version_response
    assert (answer.major, answer.minor) == state.protobuf_version
    (alert,) = client.call(_mark("system_play_audiovisual_alert_request"))
    assert (alert.command_status, alert.WhichOneof("content")) == (STATUS.Value("OK"), "empty")
    assert state.alerts == 1


def test_get_datetime_is_the_device_clock(
    client: OfficialClient, emulator: FlipperEmulator
) -> None:
    wanted = datetime(2031, 3, 4, 5, 6, 7)
    emulator.state.clock_offset = wanted - datetime.now()
    (answer,) = client.call(_mark("system_get_datetime_request"))
    told = answer.system_get_datetime_response.datetime
    assert (told.year, told.month, told.day, told.hour, told.minute) == (2031, 3, 4, 5, 6)
    assert told.weekday == wanted.isoweekday()


def test_a_ping_with_has_next_is_invalid(client: OfficialClient) -> None:
    client.send(lambda m: m.system_ping_request.SetInParent(), has_next=True)
    refused = client.answer()
    assert refused.command_status == STATUS.Value("ERROR_INVALID_PARAMETERS")
    (pong,) = client.call(_mark("system_ping_request"))
    assert pong.command_status == STATUS.Value("OK")


def test_storage_requests(client: OfficialClient, emulator: FlipperEmulator) -> None:
    state = emulator.state
    (root,) = client.call(_path("storage_list_request", "/"))
    assert [(f.name, f.type) for f in root.storage_list_response.file] == [
        ("any", 1),
        ("int", 1),
        ("ext", 1),
    ]
    (listing,) = client.call(_path("storage_list_request", "/ext/subghz"))
    garage = state.files["/ext/subghz/garage.sub"] or b""
    assert [(f.name, f.type, f.size) for f in listing.storage_list_response.file] == [
        ("garage.sub", 0, len(garage))
    ]
    state.put_file("/ext/blob.bin", bytes(range(256)) * 5)
    parts = client.call(_path("storage_read_request", "/ext/blob.bin"))
    assert b"".join(p.storage_read_response.file.data for p in parts) == bytes(range(256)) * 5
    assert [p.storage_read_response.file.size for p in parts] == [0, 0, 0], "only data is set"
    (stat,) = client.call(_path("storage_stat_request", "/ext/subghz"))
    assert stat.storage_stat_response.file.type == 1
    (md5,) = client.call(_path("storage_md5sum_request", "/ext/subghz/garage.sub"))
    assert md5.storage_md5sum_response.md5sum == hashlib.md5(garage).hexdigest()
    (stamp,) = client.call(_path("storage_timestamp_request", "/ext/subghz/garage.sub"))
    assert stamp.storage_timestamp_response.timestamp == state.stamp("/ext")
    (internal,) = client.call(_path("storage_info_request", "/int"))
    assert (
        internal.storage_info_response.total_space,
        internal.storage_info_response.free_space,
    ) == (state.int_total_bytes, state.int_free_bytes())
    (card,) = client.call(_path("storage_info_request", "/ext"))
    assert (card.storage_info_response.total_space, card.storage_info_response.free_space) == (
        state.sd_total_kib * 1024,
        state.sd_free_kib() * 1024,
    )


@pytest.mark.parametrize(
    ("request_name", "status"),
    [
        ("storage_md5sum_request", "ERROR_STORAGE_NOT_EXIST"),
        ("storage_read_request", "ERROR_STORAGE_NOT_EXIST"),
    ],
)
def test_storage_errors_are_empty_answers(
    client: OfficialClient, request_name: str, status: str
) -> None:
    (answer,) = client.call(_path(request_name, "/ext/nothing.txt"))
    assert (answer.command_status, answer.WhichOneof("content")) == (STATUS.Value(status), "empty")
    (bad_name,) = client.call(_path(request_name, "/etc/passwd"))
    assert bad_name.command_status == STATUS.Value("ERROR_STORAGE_INVALID_NAME")


def test_a_decode_error_closes_the_session(client: OfficialClient) -> None:
    client.port.write(bytes.fromhex("050803ffffff"))
    answer = client.answer()
    assert (answer.command_id, answer.command_status, answer.WhichOneof("content")) == (
        0,
        STATUS.Value("ERROR_DECODE"),
        "empty",
    )
    assert client.port.read_until(PROMPT) == PROMPT, "back in the text shell"
    client.port.write(b"uptime\r")
    assert b"Uptime: " in client.port.read_until(PROMPT)


def test_stop_session_is_answered_with_empty(client: OfficialClient) -> None:
    (stopped,) = client.call(_mark("stop_session"))
    assert (stopped.command_status, stopped.WhichOneof("content")) == (STATUS.Value("OK"), "empty")
    assert client.port.read_until(PROMPT) == PROMPT
