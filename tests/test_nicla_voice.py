"""The Nicla Voice driver through the REAL bleak API and a real DriverManager, against the
emulated board behind bleak's backend seam (``firmware_bridges.emulators.nicla_voice``), plus
property tests of the wire format (chunk reassembly, μ-law).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.nicla_voice.driver import NiclaVoiceDriver
from drivers.nicla_voice.wire import (
    MULAW_MAX,
    AudioEnd,
    AudioHeader,
    BoardStatus,
    NiclaVoiceError,
    Reassembly,
    RecordRequest,
    Wake,
    audio_chunks,
    characteristic_uuid,
    data_chunk,
    mulaw_decode,
)
from drivers.transports.ble_presence import BleAdvertisements, held
from firmware_bridges.emulators.ble import GattChar, GattPeripheral, GattService
from firmware_bridges.emulators.nicla_voice import (
    DEFAULT_SOURCE,
    EmulatedNiclaVoice,
    demo_backend,
    linear_to_mulaw,
    mulaw_encode,
)
from harness.driver_host import RecordingHost
from harness.waits import until
from hub.drivers.manager import DriverManager
from media.audio import read_wav

ADDRESS = "F4:12:FA:6C:9D:21"


def mulaw_bound(samples: np.ndarray) -> np.ndarray:
    """The most a μ-law round trip may move a sample: half a quantisation step."""
    return (np.abs(samples.astype(np.int64)) + 132) / 32


@dataclass
class Rig:
    board: EmulatedNiclaVoice
    manager: DriverManager
    audited: list[str] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        found = self.manager.records()
        assert len(found) == 1, self.manager.records()
        return found[0]

    def driver(self) -> NiclaVoiceDriver:
        online = self.manager.online("nicla_voice")
        assert len(online) == 1 and isinstance(online[0], NiclaVoiceDriver), self.manager.records()
        return online[0]


def make_rig(board: EmulatedNiclaVoice, **config: Any) -> Rig:
    rig = Rig(board, manager=None)  # type: ignore[arg-type]
    rig.manager = DriverManager(
        [NiclaVoiceDriver],
        {
            "nicla_voice": {
                "backend": board.client_backend(),
                **config,
            }
        },
        host=RecordingHost(audited=rig.audited, events=rig.events),
        list_ports=lambda: [],
        advertisements=BleAdvertisements(0.02, board.scanner_backend()),
        backoff_min_s=0.0,
        probe_timeout_s=2.0,
    )
    return rig


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = make_rig(EmulatedNiclaVoice(address=ADDRESS, pace=0))
    await made.manager.scan()
    yield made
    await made.manager.stop()
    assert not held(), "a stopped driver no longer holds its address"


# -- discovery, presence, wakes ----------------------------------------------------------------


async def test_the_board_is_found_started_and_kept_while_it_does_not_advertise(rig: Rig) -> None:
    record = rig.record()
    assert (record["driver"], record["transport"], record["status"]) == (
        "nicla_voice",
        "ble",
        "online",
    ), record
    assert record["device_id"] == f"nicla_voice:{ADDRESS}"
    assert record["name"] == "Nicla Voice"
    assert "firmware tiny-nv 0.1.0" in record["detail"] and "battery 87%" in record["detail"]
    assert {"wake_word", "microphone"} <= set(rig.manager.capabilities())
    assert rig.board.connected and not rig.board.advertising
    assert ADDRESS in held()
    for _ in range(3):  # connected, it no longer advertises: the held link keeps it online
        await rig.manager.scan()
    assert rig.record()["status"] == "online"
    assert rig.board.connections == 1
    assert rig.audited == [], "starting writes nothing to the board"


async def test_wakes_become_events_on_the_sink(rig: Rig) -> None:
    driver = rig.driver()
    assert driver.summary()["last_wake"] is None
    assert rig.board.wake("NN0:hey_arduino")
    assert rig.board.wake("NN0:alexa")
    await until(lambda: len(rig.events) == 2)
    kinds = [(kind, detail["label"], device) for kind, detail, device in rig.events]
    assert kinds == [
        ("nicla_wake", "NN0:hey_arduino", f"nicla_voice:{ADDRESS}"),
        ("nicla_wake", "NN0:alexa", f"nicla_voice:{ADDRESS}"),
    ]
    detail = rig.events[-1][1]
    assert set(detail) == {"label", "uptime_ms", "at"}
    assert isinstance(detail["uptime_ms"], int) and isinstance(detail["at"], float)
    summary = driver.summary()
    assert summary["last_wake"] == {"label": "NN0:alexa", "at": detail["at"]}
    assert summary["last_seen"] == detail["at"], "the wake was the last thing heard"
    assert summary["fallback"] is False and summary["connected"] is True


async def test_a_long_label_at_the_minimum_mtu_arrives_cut() -> None:
    rig = make_rig(EmulatedNiclaVoice(address=ADDRESS, pace=0, mtu=23))
    try:
        await rig.manager.scan()
        rig.board.wake("NN0:a_rather_long_wake_label")  # 28 bytes; 20 fit one notification
        await until(lambda: len(rig.events) == 1)
        assert rig.events[0][1]["label"] == "NN0:a_rather_lo"
        assert rig.board.truncated == [33]
    finally:
        await rig.manager.stop()


async def test_status_notifications_update_the_summary(rig: Rig) -> None:
    driver = rig.driver()
    assert (driver.summary()["battery"], driver.summary()["firmware"]) == (87, "tiny-nv 0.1.0")
    rig.board.set_battery(42)
    await until(lambda: driver.summary()["battery"] == 42)
    rig.board.set_battery(None)
    await until(lambda: driver.summary()["battery"] is None)
    assert "battery" not in driver.status().detail


# -- recording ---------------------------------------------------------------------------------


@pytest.mark.parametrize("audio_format", ["mulaw", "pcm16"])
async def test_a_recording_is_a_wav_of_the_source(audio_format: str) -> None:
    rig = make_rig(EmulatedNiclaVoice(address=ADDRESS, pace=0), audio_format=audio_format)
    try:
        await rig.manager.scan()
        wav = await rig.driver().record(1.25)
    finally:
        await rig.manager.stop()
    pcm = read_wav(wav)
    assert (pcm.rate, pcm.channels, pcm.width, pcm.frames) == (16000, 1, 2, 20000)
    assert pcm.seconds == 1.25
    got = np.frombuffer(pcm.data, "<i2").astype(np.int64)
    want = rig.board.expected(1250).astype(np.int64)
    if audio_format == "pcm16":
        assert np.array_equal(got, want)
    else:
        assert np.all(np.abs(got - want) <= mulaw_bound(want))
    assert np.abs(want).max() > 1000, "the source is not silence"
    assert rig.audited == [f"record 1250 ms {audio_format}"]
    assert rig.board.takes == 1 and rig.board.truncated == []


async def test_a_recording_longer_than_the_source_is_padded_with_silence(rig: Rig) -> None:
    source_s = len(rig.board.samples) / 16000
    seconds = math.ceil(source_s) + 1.0
    pcm = read_wav(await rig.driver().record(seconds))
    got = np.frombuffer(pcm.data, "<i2")
    assert pcm.seconds == seconds
    assert not np.any(got[len(rig.board.samples) :]), "after the source: silence"


async def test_the_default_source_is_the_speech_fixture_when_present() -> None:
    board = EmulatedNiclaVoice(pace=0)
    if DEFAULT_SOURCE.exists():
        assert len(board.samples) == round(read_wav(DEFAULT_SOURCE.read_bytes()).seconds * 16000)
    else:  # the generated tone stands in
        assert len(board.samples) == 32000


async def test_at_the_minimum_mtu_chunks_fit_and_nothing_is_cut() -> None:
    rig = make_rig(EmulatedNiclaVoice(address=ADDRESS, pace=0, mtu=23))
    try:
        await rig.manager.scan()
        pcm = read_wav(await rig.driver().record(0.5))
    finally:
        await rig.manager.stop()
    assert pcm.frames == 8000
    assert rig.board.truncated == []
    assert rig.board.requests[0][6] == 20, "the hub asked for 20-byte notifications"
    assert rig.board.chunks_sent == math.ceil(8000 / 17)


async def test_a_missing_chunk_is_a_clear_error_and_the_board_stays_usable(rig: Rig) -> None:
    rig.board.drop_chunks = {17}
    with pytest.raises(NiclaVoiceError) as caught:
        await rig.driver().record(1.0)
    chunks = math.ceil(16000 / 241)
    assert f"chunk 17 of {chunks} never arrived" in str(caught.value)
    assert rig.audited == ["record 1000 ms mulaw"], "the take had ended: nothing to cancel"
    assert rig.record()["status"] == "online"
    rig.board.drop_chunks = set()
    assert read_wav(await rig.driver().record(1.0)).frames == 16000


async def test_an_identical_repeated_chunk_is_dropped(rig: Rig) -> None:
    clean = await rig.driver().record(1.0)
    rig.board.repeat_chunks = {1, 5, 66}
    assert await rig.driver().record(1.0) == clean


async def test_a_repeated_chunk_that_differs_is_an_error_and_the_take_cancelled(rig: Rig) -> None:
    rig.board.repeat_chunks = {5}
    rig.board.alter_repeats = True
    rig.board.pace = 20.0  # the board is still streaming when the hub gives up
    with pytest.raises(NiclaVoiceError, match="chunk 5 of 67 arrived twice with different bytes"):
        await rig.driver().record(1.0)
    assert rig.audited == ["record 1000 ms mulaw", "cancel"]
    assert rig.board.requests[-1] == b"\x02"
    await until(lambda: not rig.board.recording)


async def test_a_link_drop_mid_recording_goes_offline_and_comes_back(rig: Rig) -> None:
    rig.board.drop_link_at = 10
    with pytest.raises(NiclaVoiceError, match="link to the Nicla Voice dropped during the rec"):
        await rig.driver().record(1.0)
    rig.board.advertising = False  # and then out of range
    await rig.manager.scan()
    record = rig.record()
    assert record["status"] == "offline", record
    assert ADDRESS not in held()
    rig.board.advertising = True  # back in range
    rig.board.drop_link_at = None
    await rig.manager.scan()
    assert rig.record()["status"] == "online"
    assert rig.board.connections == 2
    assert read_wav(await rig.driver().record(0.5)).frames == 8000


async def test_bad_durations_are_refused_before_anything_is_written(rig: Rig) -> None:
    driver = rig.driver()
    for seconds in (30.5, 0, -1, math.nan, math.inf):
        with pytest.raises(NiclaVoiceError, match="at most 30 s"):
            await driver.record(seconds)
    with pytest.raises(NiclaVoiceError, match="must be a number"):
        await driver.record(True)
    assert rig.audited == [] and rig.board.requests == []


async def test_max_record_s_is_configurable() -> None:
    rig = make_rig(EmulatedNiclaVoice(address=ADDRESS, pace=0), max_record_s=2)
    try:
        await rig.manager.scan()
        with pytest.raises(NiclaVoiceError, match="at most 2 s"):
            await rig.driver().record(2.5)
        assert read_wav(await rig.driver().record(2)).frames == 32000
    finally:
        await rig.manager.stop()


async def test_one_recording_at_a_time(rig: Rig) -> None:
    rig.board.pace = 4.0
    driver = rig.driver()
    first = asyncio.create_task(driver.record(1.0))
    await until(lambda: rig.board.recording)
    assert driver.summary()["recording"] is True
    with pytest.raises(NiclaVoiceError, match="already recording"):
        await driver.record(1.0)
    assert read_wav(await first).frames == 16000
    assert rig.audited == ["record 1000 ms mulaw"]


async def test_a_silent_board_times_out_and_the_take_is_cancelled(rig: Rig) -> None:
    rig.board.ignore_requests = True
    driver = rig.driver()
    driver.record_factor, driver.record_margin_s = 0.0, 0.2
    with pytest.raises(NiclaVoiceError, match=r"did not finish within 0.2 s \(its header never"):
        await driver.record(0.1)
    assert rig.audited == ["record 100 ms mulaw", "cancel"]
    assert rig.board.requests[-1] == b"\x02"


async def test_a_board_side_audio_failure_is_reported(rig: Rig) -> None:
    rig.board.audio_fails_at = 3
    with pytest.raises(
        NiclaVoiceError, match=r"NDP could not deliver audio .* \(2 of 67 chunks had arrived"
    ):
        await rig.driver().record(1.0)


async def test_a_cancelled_caller_cancels_the_take(rig: Rig) -> None:
    rig.board.pace = 2.0
    task = asyncio.create_task(rig.driver().record(2.0))
    await until(lambda: rig.board.recording)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: rig.board.requests[-1:] == [b"\x02"])
    assert rig.audited == ["record 2000 ms mulaw", "cancel"]
    assert not rig.board.recording
    assert read_wav(await rig.driver().record(0.25)).frames == 4000, "the next take is clean"


# -- the stock example and other boards ----------------------------------------------------------


async def test_the_stock_blexademo_gives_wakes_and_refuses_to_record() -> None:
    board = EmulatedNiclaVoice(address=ADDRESS, stock_example=True, alert_reset_s=0.01)
    rig = make_rig(board)
    try:
        await rig.manager.scan()
        record = rig.record()
        assert (record["status"], record["name"]) == ("online", "BLExaDemo"), record
        assert "stock BLExaDemo" in record["detail"]
        assert board.wake("anything")
        await until(lambda: board.char("2a06").value == b"\x00")  # 2, then 0 again
        assert board.wake()
        await until(lambda: len(rig.events) == 2)
        await asyncio.sleep(0.05)
        assert [(k, d["label"], d["uptime_ms"]) for k, d, _ in rig.events] == [
            ("nicla_wake", "match", None),
            ("nicla_wake", "match", None),
        ]
        driver = rig.driver()
        assert driver.summary()["fallback"] is True
        assert driver.summary()["battery"] is None
        with pytest.raises(NiclaVoiceError, match="stock BLExaDemo sketch, which only reports"):
            await driver.record(1.0)
        assert rig.audited == []
    finally:
        await rig.manager.stop()


async def test_a_configured_service_uuid_and_a_nicla_voice_name() -> None:
    service = "0b5e0000-1111-4222-8333-444455556666"
    board = EmulatedNiclaVoice(address=ADDRESS, pace=0, service_uuid=service, name="Nicla Voice K")
    rig = make_rig(board, service_uuid=service)
    try:
        await rig.manager.scan()
        assert rig.record()["status"] == "online"
        board.wake("NN0:kitchen")
        await until(lambda: len(rig.events) == 1)
        assert read_wav(await rig.driver().record(0.25)).frames == 4000
        assert characteristic_uuid(service, 3) == "0b5e0003-1111-4222-8333-444455556666"
    finally:
        await rig.manager.stop()


async def test_a_nicla_voice_without_the_service_fails_with_a_sentence() -> None:
    other = GattChar("0000ffe1-0000-1000-8000-00805f9b34fb", 17, ("read",))
    board = GattPeripheral(
        address=ADDRESS,
        name="Nicla Voice (other sketch)",
        services=(GattService("0000ffe0-0000-1000-8000-00805f9b34fb", 16, (other,)),),
    )
    manager = DriverManager(
        [NiclaVoiceDriver],
        {"nicla_voice": {"backend": board.client_backend()}},
        list_ports=lambda: [],
        advertisements=BleAdvertisements(0.02, board.scanner_backend()),
    )
    try:
        await manager.scan()
        [record] = manager.records()
        assert record["status"] == "error"
        assert "offers neither the Nicla Voice service" in record["detail"], record
        assert not board.connected, "the failed start closed the link"
        assert ADDRESS not in held()
    finally:
        await manager.stop()


def test_bad_config_is_refused_with_a_sentence() -> None:
    for config, problem in (
        ({"service_uuid": "not-a-uuid"}, "is not a UUID"),
        ({"service_uuid": "180f"}, "SIG short UUID"),
        ({"max_record_s": 0}, "positive number"),
        ({"audio_format": "mp3"}, "mulaw or pcm16"),
    ):
        with pytest.raises(NiclaVoiceError, match=problem):
            NiclaVoiceDriver("nicla_voice:x", ADDRESS, config)


async def test_demo_backend_gives_a_working_board() -> None:
    client, scanner, board = demo_backend(pace=0)
    rig = make_rig(board)
    rig.manager = DriverManager(
        [NiclaVoiceDriver],
        {"nicla_voice": {"backend": client}},
        list_ports=lambda: [],
        advertisements=BleAdvertisements(0.02, scanner),
    )
    try:
        await rig.manager.scan()
        assert rig.record()["status"] == "online"
    finally:
        await rig.manager.stop()


# -- the wire format ---------------------------------------------------------------------------

all_int16 = np.arange(-32768, 32768, dtype=np.int16)


def test_mulaw_over_every_sample_stays_within_half_a_step() -> None:
    codes = np.frombuffer(mulaw_encode(all_int16), np.uint8)
    decoded = np.frombuffer(mulaw_decode(codes.tobytes()), "<i2").astype(np.int64)
    wide = all_int16.astype(np.int64)
    assert np.all(np.abs(decoded - wide) <= mulaw_bound(all_int16))
    assert np.all(np.sign(decoded) * np.sign(wide) >= 0), "the sign survives"
    every_code = np.frombuffer(mulaw_decode(bytes(range(256))), "<i2")
    assert int(np.abs(every_code.astype(np.int64)).max()) == MULAW_MAX
    again = mulaw_encode(every_code)
    assert [c for c in range(256) if again[c] != c] == [0x7F], "only -0 becomes +0"


@given(st.integers(-32768, 32767))
def test_mulaw_round_trip_bound(sample: int) -> None:
    code = linear_to_mulaw(sample)
    assert 0 <= code <= 255
    decoded = int(np.frombuffer(mulaw_decode(bytes([code])), "<i2")[0])
    assert abs(decoded - sample) <= (abs(sample) + 132) / 32
    assert abs(decoded) <= MULAW_MAX


def _take(audio: bytes, max_chunk: int, take: int = 7) -> list[bytes]:
    return audio_chunks(take, 0, 16000, audio, max_chunk)


def _feed(reassembly: Reassembly, chunks: list[bytes]) -> bool:
    done = False
    for chunk in chunks:
        done = reassembly.feed(chunk)
    return done


takes = st.tuples(st.binary(min_size=1, max_size=600), st.integers(20, 64))


@settings(max_examples=200)
@given(takes, st.randoms(use_true_random=False))
def test_any_order_of_the_data_chunks_reassembles(take: tuple[bytes, int], rnd: Any) -> None:
    audio, max_chunk = take
    header, *data, end = _take(audio, max_chunk)
    rnd.shuffle(data)
    reassembly = Reassembly(7, max_chunk - 3)
    assert _feed(reassembly, [header, *data, end])
    assert reassembly.audio == audio


@settings(max_examples=200)
@given(takes, st.randoms(use_true_random=False), st.data())
def test_any_order_with_a_gap_is_detected(
    take: tuple[bytes, int], rnd: Any, data: st.DataObject
) -> None:
    audio, max_chunk = take
    header, *chunks, end = _take(audio, max_chunk)
    gone = data.draw(st.sets(st.integers(1, len(chunks)), min_size=1))
    kept = [c for seq, c in enumerate(chunks, start=1) if seq not in gone]
    rnd.shuffle(kept)
    reassembly = Reassembly(7, max_chunk - 3)
    with pytest.raises(NiclaVoiceError, match=f"chunk {min(gone)} of {len(chunks)} never arrived"):
        _feed(reassembly, [header, *kept, end])


@settings(max_examples=100)
@given(takes, st.data())
def test_identical_duplicates_are_dropped_differing_ones_refused(
    take: tuple[bytes, int], data: st.DataObject
) -> None:
    audio, max_chunk = take
    header, *chunks, end = _take(audio, max_chunk)
    twice = data.draw(st.sets(st.integers(1, len(chunks)), min_size=1))
    doubled = [c for seq, c in enumerate(chunks, start=1) for _ in range(2 if seq in twice else 1)]
    reassembly = Reassembly(7, max_chunk - 3)
    assert _feed(reassembly, [header, *doubled, end])
    assert reassembly.audio == audio and reassembly.duplicates == len(twice)

    seq = min(twice)
    changed = bytearray(chunks[seq - 1])
    changed[-1] ^= 0xFF
    with pytest.raises(NiclaVoiceError, match=f"chunk {seq} of .* twice with different bytes"):
        _feed(Reassembly(7, max_chunk - 3), [header, *chunks, bytes(changed), end])


def test_an_earlier_takes_chunks_are_ignored() -> None:
    old = _take(b"old audio" * 10, 20, take=6)
    new = _take(b"new audio" * 10, 20, take=7)
    reassembly = Reassembly(7, 17)
    # the old take's tail (data, its end) arrives before the new header; a stray old header later
    assert _feed(reassembly, [*old[2:], new[0], old[0], *new[1:]])
    assert reassembly.audio == b"new audio" * 10
    assert reassembly.ignored == len(old) - 1


@pytest.mark.parametrize(
    ("chunks", "problem"),
    [
        ([b"\x00"], "cannot carry its seq"),
        ([b"\x00\x00Z"], "unknown kind 0x5a"),
        ([b"\x00\x00H\x07"], "header chunk is 4 bytes"),
        ([AudioHeader(7, 9, 16000, 10, 1).encode()], "audio format 9"),
        ([AudioHeader(7, 0, 50, 10, 1).encode()], "50 Hz"),
        ([AudioHeader(7, 1, 16000, 11, 1).encode()], "not a whole number of samples"),
        ([AudioHeader(7, 0, 16000, 100, 1).encode()], "100 bytes in 1 chunks of at most 17"),
        ([AudioHeader(7, 0, 16000, 10, 1).encode(), data_chunk(2, b"x")], "outside this take"),
        ([AudioHeader(7, 0, 16000, 30, 2).encode(), data_chunk(1, b"x" * 18)], "carries 18"),
        ([AudioEnd(0, 7, 3, 0).encode()], "refused the request"),
        ([AudioEnd(5, 7, 0, 4).encode()], "header chunk never arrived"),
        ([AudioHeader(7, 0, 16000, 20, 2).encode(), AudioEnd(3, 7, 0, 1).encode()], "sent 1"),
        (
            [
                AudioHeader(7, 0, 16000, 20, 2).encode(),
                *[data_chunk(seq, b"ab") for seq in (1, 2)],
                AudioEnd(3, 7, 0, 2).encode(),
            ],
            "received 4 of 20 audio bytes",
        ),
    ],
)
def test_malformed_takes_are_errors(chunks: list[bytes], problem: str) -> None:
    with pytest.raises(NiclaVoiceError, match=problem):
        _feed(Reassembly(7, 17), chunks)


@given(st.text(max_size=40), st.integers(0, 2**32 - 1))
def test_wake_codec_round_trip(label: str, uptime_ms: int) -> None:
    wire = Wake(label, uptime_ms).encode()
    assert len(wire) <= 5 + 32
    decoded = Wake.decode(wire)
    assert decoded.uptime_ms == uptime_ms
    assert label.encode().startswith(decoded.label.encode())
    if len(label.encode()) <= 32:
        assert decoded.label == label


def test_request_and_status_layouts() -> None:
    request = RecordRequest(2500, 0, 244, 9)
    assert request.encode() == bytes.fromhex("01c409000000f409")
    assert RecordRequest.decode(request.encode()) == request
    status = BoardStatus.decode(b"\x57\x01tiny-nv 0.1.0")
    assert status == BoardStatus(87, True, "tiny-nv 0.1.0")
    assert BoardStatus.decode(b"\xff\x00").battery is None
    assert AudioHeader(1, 0, 16000, 32000, 133).encode().hex() == "0000480100803e0000007d00008500"
    assert AudioEnd(134, 1, 0, 133).encode().hex() == "860045010085" + "00"


def test_the_sketch_and_readme_name_the_same_uuids() -> None:
    root = Path(__file__).resolve().parent.parent / "firmware_bridges" / "nicla_voice"
    sketch = (root / "nicla_voice.ino").read_text()
    readme = (root / "README.md").read_text()
    for number in range(5):
        uuid = characteristic_uuid("e0c80000-7a4b-4f4e-9a2f-6e6963766f69", number)
        assert uuid in sketch.lower() and uuid in readme.lower(), uuid
