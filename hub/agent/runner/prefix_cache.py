"""The runner's prompt cache: llama.cpp states kept by the tokens they hold, so a prompt that
begins like one read before is not read again.

A chat turn on the embedded model is several generations whose prompts share long beginnings
(the system prompt and the tools, the conversation so far, the fixed examples of a yes/no
check) but alternate: a check between a call and its answer evicts what llama.cpp holds, and
without a cache the answer reads its whole prompt again. Reading a prompt is most of a turn on
a small machine (~30 ms a token for a 1.5B model on one core); restoring a state is a memory
copy (~28 KB a token for that model).

llama-cpp-python's own ``LlamaRAMCache`` keeps, with every state, a copy of the logits buffer
(n_batch × n_vocab floats: ~311 MB for a 152k vocabulary) that it does not count against its
capacity, so a cache of a few entries holds gigabytes. This one keeps the tokens and llama.cpp's
state only, counts every byte, and drops the least recently used entries past its capacity. An
entry whose tokens begin another entry's is dropped when the longer one arrives: restoring the
longer state and cutting it back serves every prompt the shorter one served.

The cache also outlives its runner: with a folder (:class:`EntryFolder`), what the runner
read ahead of the turns (the beginnings the hub warms at start) is written there at once, by a
thread of its own, and everything else it keeps when it stops (released after being idle, or
with the hub), newest first within a time budget; a file goes when its entry is dropped. The
next runner takes back the entries made with the same model, llama.cpp build and context size,
so it does not read the system prompt and the tools again. Nothing is written during a turn:
a state is tens of megabytes, and a turn makes two or three.

It knows nothing of llama.cpp: the runner hands it bytes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

Tokens = npt.NDArray[np.int32]

MAGIC = b"tinyhub-kv1\n"
HEADER = struct.Struct("<IIQq")  # identity length, token count, state length, seed
SUFFIX = ".kv"


def as_tokens(tokens: Sequence[int] | Tokens) -> Tokens:
    return np.asarray(tokens, dtype=np.int32)


def common_prefix(a: Tokens, b: Tokens) -> int:
    """How many tokens ``a`` and ``b`` share from the start."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


@dataclass(frozen=True)
class Entry:
    tokens: Tokens
    state: bytes
    seed: int = 0

    @property
    def size(self) -> int:
        return len(self.state) + self.tokens.nbytes


@dataclass
class CacheStats:
    capacity_bytes: int
    used_bytes: int = 0
    entries: int = 0
    hits: int = 0
    misses: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "capacityBytes": self.capacity_bytes,
            "usedBytes": self.used_bytes,
            "entries": self.entries,
            "hits": self.hits,
            "misses": self.misses,
        }


class PrefixCache:
    """States by their tokens, least recently used dropped first past ``capacity_bytes`` — a
    turn's own before what was read ahead."""

    def __init__(self, capacity_bytes: int, folder: EntryFolder | None = None) -> None:
        self.capacity_bytes = max(0, capacity_bytes)
        self.folder = folder
        self._entries: OrderedDict[bytes, Entry] = OrderedDict()
        self._on_disk: set[bytes] = set()
        self._read_ahead: set[bytes] = set()  # kept with ``persist``: dropped last
        self._used = 0
        self._hits = 0
        self._misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def used_bytes(self) -> int:
        return self._used

    def best(self, tokens: Sequence[int] | Tokens) -> tuple[Entry | None, int]:
        """The entry sharing the longest beginning with ``tokens``, and how long it is (the
        entry is marked as used); ``(None, 0)`` when none shares a token."""
        wanted = as_tokens(tokens)
        found, longest = None, 0
        for key, entry in self._entries.items():
            shared = common_prefix(entry.tokens, wanted)
            if shared > longest:
                found, longest = key, shared
        if found is None:
            self._misses += 1
            return None, 0
        self._entries.move_to_end(found)
        self._hits += 1
        return self._entries[found], longest

    def put(
        self, tokens: Sequence[int] | Tokens, state: bytes, seed: int = 0, persist: bool = False
    ) -> bool:
        """Keep ``state`` as the state after ``tokens`` (with ``persist``, written to the
        folder now); False when it alone is over capacity."""
        entry = Entry(as_tokens(tokens), state, seed)
        if not len(entry.tokens) or entry.size > self.capacity_bytes:
            return False
        for key in [k for k, e in self._entries.items() if self._covers(entry, e)]:
            self._drop(key)
        key = entry.tokens.tobytes()
        self._entries[key] = entry
        self._used += entry.size
        if persist:
            self._read_ahead.add(key)
        while self._used > self.capacity_bytes and self._entries:
            self._drop(self._least_wanted())
        if persist and self.folder is not None and key in self._entries:
            self.folder.write(entry)
            self._on_disk.add(key)
        return True

    def flush(self, budget_s: float) -> int:
        """Write the entries the folder does not hold yet, most recently used first, until
        ``budget_s`` has passed; the number written."""
        if self.folder is None:
            return 0
        deadline = time.monotonic() + budget_s
        written = 0
        for key in reversed(list(self._entries)):
            if time.monotonic() > deadline:
                break
            if key not in self._on_disk:
                self.folder.write_now(self._entries[key])
                self._on_disk.add(key)
                written += 1
        return written

    def take_back(self) -> int:
        """The entries the folder holds for this model, oldest first, as capacity allows (the
        files that do not fit are removed); the number taken."""
        if self.folder is None:
            return 0
        found = self.folder.entries()
        for entry in found:
            self.put(entry.tokens, entry.state, entry.seed)
            self._read_ahead.add(entry.tokens.tobytes())
        for entry in found:
            if entry.tokens.tobytes() in self._entries:
                self._on_disk.add(entry.tokens.tobytes())
            else:
                self.folder.remove(entry)
        return len(self._entries)

    def close(self) -> None:
        """Wait for the files still being written."""
        if self.folder is not None:
            self.folder.close()

    def clear(self) -> None:
        self._entries.clear()
        self._used = 0

    def stats(self) -> CacheStats:
        return CacheStats(
            self.capacity_bytes,
            self._used,
            len(self._entries),
            self._hits,
            self._misses,
        )

    @staticmethod
    def _covers(new: Entry, old: Entry) -> bool:
        """Whether ``new`` holds every token ``old`` does, so ``old`` serves nothing more."""
        n = len(old.tokens)
        return len(new.tokens) >= n and common_prefix(new.tokens, old.tokens) == n

    def _least_wanted(self) -> bytes:
        """The entry to drop first: the least recently used of a turn's own, and only when none
        is left, of what was read ahead (each serves every later turn that begins like it)."""
        for key in self._entries:
            if key not in self._read_ahead:
                return key
        return next(iter(self._entries))

    def _drop(self, key: bytes) -> None:
        self._read_ahead.discard(key)
        entry = self._entries.pop(key)
        self._used -= entry.size
        if key in self._on_disk and self.folder is not None:
            self._on_disk.discard(key)
            self.folder.remove(entry)


class EntryFolder:
    """Entries as files in a folder, one per entry, each named by its tokens and stamped with
    ``identity`` (the model file, the llama.cpp build, the context size): a state is only
    valid for the model and build that made it. Writes go through one thread, in order."""

    def __init__(self, path: Path, identity: str) -> None:
        self.path = path
        self.identity = identity
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kv-writer")

    def entries(self) -> list[Entry]:
        """Whole entries made for this identity, oldest first. A file made by another build or
        context size (or cut short) can never serve again, so it is removed."""
        if not self.path.is_dir():
            return []
        found = []
        for file in sorted(self.path.glob(f"*{SUFFIX}"), key=_modified):
            try:
                entry = decode_entry(file.read_bytes(), self.identity)
            except OSError:
                continue
            if entry is None:
                file.unlink(missing_ok=True)
            else:
                found.append(entry)
        return found

    def write(self, entry: Entry) -> None:
        self._writer.submit(self._write, entry)

    def write_now(self, entry: Entry) -> None:
        """Write in this thread, after what the writer still has to do."""
        self._writer.submit(self._write, entry).result()

    def remove(self, entry: Entry) -> None:
        self._writer.submit(self._remove, entry)

    def close(self) -> None:
        self._writer.shutdown(wait=True)

    def _write(self, entry: Entry) -> None:
        name = entry_name(entry.tokens)
        partial = self.path / f".{name}.{os.getpid()}.partial"
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(encode_entry(entry, self.identity))
            partial.replace(self.path / name)
        except OSError as exc:  # a full or read-only disk: the cache still works in RAM
            log.warning("prompt cache: could not write %s: %s", name, exc)
            partial.unlink(missing_ok=True)

    def _remove(self, entry: Entry) -> None:
        (self.path / entry_name(entry.tokens)).unlink(missing_ok=True)


def _modified(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def entry_name(tokens: Tokens) -> str:
    return hashlib.sha256(tokens.tobytes()).hexdigest()[:32] + SUFFIX


def encode_entry(entry: Entry, identity: str) -> bytes:
    said = identity.encode()
    header = HEADER.pack(len(said), len(entry.tokens), len(entry.state), entry.seed)
    return b"".join((MAGIC, header, said, entry.tokens.astype("<i4").tobytes(), entry.state))


def decode_entry(data: bytes, identity: str) -> Entry | None:
    """The entry in ``data`` when it is whole and made for ``identity``; else None."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + HEADER.size:
        return None
    at = len(MAGIC)
    said_len, n, state_len, seed = HEADER.unpack_from(data, at)
    at += HEADER.size
    if data[at : at + said_len] != identity.encode():
        return None
    at += said_len
    if len(data) != at + 4 * n + state_len:
        return None
    tokens = np.frombuffer(data, dtype="<i4", count=n, offset=at).astype(np.int32)
    return Entry(tokens, data[at + 4 * n :], seed)
