"""The runner's prompt cache: states kept by their tokens, bounded in bytes, outliving the
runner in a folder; and the real runner reading a prompt it has seen before from it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hub.agent.embedded import SAMPLING, bundled_gguf
from hub.agent.runner.prefix_cache import (
    EntryFolder,
    PrefixCache,
    common_prefix,
    decode_entry,
    encode_entry,
)
from hub.agent.runner.process import Generation, RunnerSpec
from hub.agent.runner.supervisor import RunnerSupervisor


def test_the_entry_sharing_the_longest_beginning_is_found() -> None:
    cache = PrefixCache(10_000)
    cache.put([1, 2, 3, 4], b"a" * 10)
    cache.put([1, 2, 9], b"b" * 10)
    entry, shared = cache.best([1, 2, 3, 7])
    assert entry is not None and entry.state == b"a" * 10 and shared == 3
    assert cache.best([5, 6]) == (None, 0)
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries) == (1, 1, 2)


def test_a_longer_entry_replaces_the_one_it_begins_with() -> None:
    cache = PrefixCache(10_000)
    cache.put([1, 2], b"short")
    cache.put([1, 2, 3], b"longer")
    assert len(cache) == 1
    entry, shared = cache.best([1, 2])
    assert entry is not None and entry.state == b"longer" and shared == 2


def test_the_least_recently_used_go_first_and_every_byte_counts() -> None:
    cache = PrefixCache(3 * (100 + 4 * 2))  # three entries of 100 state bytes and 2 tokens
    for first in (1, 2, 3):
        cache.put([first, 0], bytes(100))
    cache.best([1, 0])  # used: 2 is now the oldest
    cache.put([4, 0], bytes(100))
    assert cache.best([2, 0]) == (None, 0)
    assert all(cache.best([n, 0])[0] is not None for n in (1, 3, 4))
    assert cache.used_bytes == 3 * 108 <= cache.capacity_bytes
    assert not cache.put([5, 0], bytes(1000)), "an entry over the whole capacity is not kept"


def test_what_was_read_ahead_is_dropped_after_every_turns_own() -> None:
    cache = PrefixCache(3 * 108)
    cache.put([1, 0], bytes(100), persist=True)  # read ahead: oldest, but kept
    cache.put([2, 0], bytes(100))
    cache.put([3, 0], bytes(100))
    cache.put([4, 0], bytes(100))
    assert cache.best([1, 0])[0] is not None, "what was read ahead stays"
    assert cache.best([2, 0]) == (None, 0), "the oldest of a turn's own went"
    for n in (5, 6):
        cache.put([n, 0], bytes(100))
    assert cache.best([1, 0])[0] is not None


def test_common_prefix_counts_from_the_start() -> None:
    a = np.array([1, 2, 3], dtype=np.int32)
    assert common_prefix(a, np.array([1, 2, 4], dtype=np.int32)) == 2
    assert common_prefix(a, np.array([1, 2, 3, 4], dtype=np.int32)) == 3
    assert common_prefix(a, np.array([], dtype=np.int32)) == 0


def test_what_was_read_ahead_is_written_at_once_the_rest_when_the_runner_stops(
    tmp_path: Path,
) -> None:
    first = PrefixCache(10_000, EntryFolder(tmp_path, "model-a"))
    first.put([1, 2, 3], b"state-1", seed=7, persist=True)
    first.put([9], b"state-3")
    first.close()
    assert len(list(tmp_path.glob("*.kv"))) == 1, "a turn's states are not written meanwhile"
    again = PrefixCache(10_000, EntryFolder(tmp_path, "model-a"))
    assert again.take_back() == 1
    again.put([1, 2, 3, 4], b"state-2")  # covers the first: its file goes too
    again.put([9], b"state-3")
    assert again.flush(budget_s=10) == 2
    again.close()
    assert len(list(tmp_path.glob("*.kv"))) == 2


def test_entries_outlive_the_cache_in_their_folder(tmp_path: Path) -> None:
    first = PrefixCache(10_000, EntryFolder(tmp_path, "model-a"))
    first.put([1, 2, 3], b"state-1", seed=7)
    first.put([1, 2, 3, 4], b"state-2")  # covers the first
    first.put([9], b"state-3")
    first.flush(budget_s=10)
    first.close()
    assert len(list(tmp_path.glob("*.kv"))) == 2
    again = PrefixCache(10_000, EntryFolder(tmp_path, "model-a"))
    assert again.take_back() == 2
    entry, shared = again.best([1, 2, 3, 4, 5])
    assert entry is not None and entry.state == b"state-2" and shared == 4


def test_entries_of_another_model_or_build_are_removed_not_loaded(tmp_path: Path) -> None:
    first = PrefixCache(10_000, EntryFolder(tmp_path, "model-a"))
    first.put([1, 2, 3], b"state", persist=True)
    first.close()
    other = PrefixCache(10_000, EntryFolder(tmp_path, "model-b"))
    assert other.take_back() == 0
    assert list(tmp_path.glob("*.kv")) == []


def test_a_cut_short_entry_is_not_taken() -> None:
    cache = PrefixCache(10_000)
    cache.put([1, 2], b"state")
    entry, _ = cache.best([1, 2])
    assert entry is not None
    data = encode_entry(entry, "model")
    assert decode_entry(data, "model") is not None
    assert decode_entry(data[:-1], "model") is None
    assert decode_entry(data, "other") is None
    assert decode_entry(b"junk", "model") is None


def test_files_that_do_not_fit_are_removed_on_take_back(tmp_path: Path) -> None:
    first = PrefixCache(10_000, EntryFolder(tmp_path, "m"))
    for n in range(5):
        first.put([n, 0], bytes(100), persist=True)
    first.close()
    small = PrefixCache(2 * 108, EntryFolder(tmp_path, "m"))
    assert small.take_back() == 2
    small.close()
    assert len(list(tmp_path.glob("*.kv"))) == 2


@pytest.mark.slow
async def test_the_runner_reads_a_prompt_once_and_a_new_runner_takes_it_back(
    tmp_path: Path,
) -> None:
    """SmolLM2 through the real runner: a prompt seen before (also after a check in between,
    which llama.cpp alone would have evicted) is not read again, not even by the next runner."""
    gguf = bundled_gguf()
    assert gguf is not None
    spec = RunnerSpec(gguf, 1024, 1, cache_mb=64, cache_dir=str(tmp_path / "kv"))
    long_system = "You are a helpful assistant. " * 40
    chat = [{"role": "system", "content": long_system}, {"role": "user", "content": "hi"}]
    other = [{"role": "user", "content": "Is this a question? Answer yes or no."}]

    async def read(runner: RunnerSupervisor, messages: list[dict[str, str]]) -> Generation:
        usage = Generation()
        async for _ in runner.generate(messages, 4, SAMPLING, usage):
            pass
        return usage

    runner = RunnerSupervisor(spec)
    try:
        first = await read(runner, chat)
        await read(runner, other)
        again = await read(runner, chat)
    finally:
        await runner.close()
    assert first.prompt_evaluated == first.prompt_tokens > 200
    assert again.prompt_evaluated <= 1, "restored from the cache, not read again"
    fresh = RunnerSupervisor(spec)
    try:
        warmed = await fresh.warm(chat)
        assert fresh.cache["entries"] >= 2
    finally:
        await fresh.close()
    assert warmed.prompt_evaluated <= 1, "the next runner took the states back from disk"


@pytest.mark.slow
async def test_a_generation_stopped_early_keeps_what_it_read(tmp_path: Path) -> None:
    """SmolLM2 through the real runner: a reply stopped at its first piece (the small-model
    step stops one once it has a sentence to check), a check on another prompt, then the same
    prompt again: the second reads only what is new."""
    gguf = bundled_gguf()
    assert gguf is not None
    spec = RunnerSpec(gguf, 1024, 1, cache_mb=64)
    chat = [
        {"role": "system", "content": "You are a helpful assistant. " * 40},
        {"role": "user", "content": "Write a long story about a lighthouse."},
    ]
    other = [{"role": "user", "content": "Is this a question? Answer yes or no."}]
    runner = RunnerSupervisor(spec)
    try:
        stopped = Generation()
        pieces = runner.generate(chat, 200, SAMPLING, stopped)
        assert await anext(pieces)
        await pieces.aclose()
        checked = Generation()
        async for _ in runner.generate(other, 2, SAMPLING, checked):
            pass
        again = Generation()
        async for _ in runner.generate(chat, 4, SAMPLING, again):
            pass
    finally:
        await runner.close()
    assert again.prompt_tokens > 200
    assert again.prompt_evaluated <= 2, f"read {again.prompt_evaluated} of the prompt again"
