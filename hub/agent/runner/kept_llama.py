"""llama-cpp-python's ``Llama`` with the runner's prompt cache (:mod:`prefix_cache`) behind it.

``Llama._create_completion`` already asks its ``cache`` for the state that shares the longest
beginning with a prompt, restores it when that beats what the context holds, and hands the
state after each completion back to the cache. This module plugs :class:`PrefixCache` into that
seam and replaces ``save_state``/``load_state`` with ones that copy llama.cpp's state only: the
library's copy the logits buffer too (hundreds of megabytes for a large vocabulary), which this
runner never reads (it samples inside llama.cpp and asks for no log-probabilities).

It also counts the prompt tokens each generation really evaluated, which is what the cache is
for, so the hub can say it; samples with a grammar the way llama.cpp's own tools do
(:mod:`checked_grammar`); and, given an :class:`~hub.agent.runner.idle_cores.IdleCores`,
decodes with the cores no other process is using (looked at again while it decodes).

Imported by the runner process only (it imports llama.cpp).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import Llama, LlamaState
from llama_cpp.llama_cache import BaseLlamaCache

from hub.agent.runner.checked_grammar import CheckedGrammarSampler
from hub.agent.runner.idle_cores import IdleCores
from hub.agent.runner.prefix_cache import EntryFolder, PrefixCache, as_tokens


class CacheSeam(BaseLlamaCache):
    """The shape ``Llama`` expects of a cache, over a :class:`PrefixCache`."""

    def __init__(self, cache: PrefixCache) -> None:
        super().__init__(cache.capacity_bytes)
        self.cache = cache
        self.persist_next = False  # the next state kept goes to the folder at once

    @property
    def cache_size(self) -> int:
        return self.cache.used_bytes

    def __getitem__(self, key: Sequence[int]) -> LlamaState:
        entry, _ = self.cache.best(key)
        if entry is None:
            raise KeyError("no kept state shares a token with this prompt")
        n = len(entry.tokens)
        return LlamaState(
            input_ids=entry.tokens,
            scores=np.empty((0, 0), dtype=np.single),
            n_tokens=n,
            llama_state=entry.state,
            llama_state_size=len(entry.state),
            seed=entry.seed,
        )

    def __contains__(self, key: Sequence[int]) -> bool:
        return self.cache.best(key)[0] is not None

    def __setitem__(self, key: Sequence[int], value: LlamaState) -> None:
        self.cache.put(key, value.llama_state, value.seed, persist=self.persist_next)
        self.persist_next = False


class KeptLlama(Llama):
    """``Llama`` whose states are llama.cpp's bytes alone, with a count of evaluated tokens."""

    def __init__(
        self,
        *args: Any,
        cache_bytes: int = 0,
        cache_dir: str = "",
        idle_cores: IdleCores | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.idle_cores = idle_cores
        self.threads = int(self.context_params.n_threads)
        folder = EntryFolder(Path(cache_dir), self.identity()) if cache_dir else None
        self.prompt_cache = PrefixCache(cache_bytes, folder)
        self.prompt_evaluated: int | None = None
        self.prompt_length = 0
        self.seam: CacheSeam | None = None
        if cache_bytes > 0:
            self.prompt_cache.take_back()
            self.seam = CacheSeam(self.prompt_cache)
            self.set_cache(self.seam)

    def keep_on_disk_next(self) -> None:
        """The state after the next generation is written to the cache's folder at once."""
        if self.seam is not None:
            self.seam.persist_next = True

    def keep_state(self) -> None:
        """Keep what the context holds now, as a finished generation does. A generation stopped
        early (its reader had what it needed: a first sentence to check) is often followed by
        another from the same prompt after a check that read another prompt in between; without
        this, that one read the whole prompt again (measured: 677 tokens, 17 s on 2 cores)."""
        if self.seam is not None and self.n_tokens:
            self.seam[self.input_ids[: self.n_tokens].tolist()] = self.save_state()

    def identity(self) -> str:
        """What a kept state is only valid for: this model file, this llama.cpp build, this
        context size."""
        stat = os.stat(self.model_path)
        return (
            f"{os.path.basename(self.model_path)}:{stat.st_size}:{stat.st_mtime_ns}:"
            f"{llama_cpp.__version__}:{self.n_ctx()}"
        )

    def begin(self) -> None:
        """Start counting for one generation, with the cores that are free now."""
        self.prompt_evaluated = None
        self.prompt_length = 0
        self.use_free_cores()

    def use_free_cores(self) -> None:
        if self.idle_cores is None:
            return
        threads = self.idle_cores.look()
        if threads != self.threads:
            llama_cpp.llama_set_n_threads(self._ctx.ctx, threads, threads)
            self.threads = threads

    def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
        grammar = kwargs.pop("grammar", None)  # Llama passes every setting by name
        chain = super()._init_sampler(*args, **kwargs)
        if grammar is None:
            return chain
        return CheckedGrammarSampler.build(chain, self._model.vocab, grammar, self._n_vocab)

    def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
        self.prompt_length = len(tokens)
        return super().generate(tokens, *args, **kwargs)

    def eval(self, tokens: Sequence[int]) -> None:
        if self.prompt_evaluated is None:  # the first evaluation of a generation is its prompt
            self.prompt_evaluated = len(tokens)
        elif self.idle_cores is not None and self.idle_cores.due():
            self.use_free_cores()
        super().eval(tokens)

    def save_state(self) -> LlamaState:
        size = int(llama_cpp.llama_state_get_size(self._ctx.ctx))
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size))
        if written > size:
            raise RuntimeError("llama.cpp wrote more state than it asked room for")
        n = self.n_tokens
        return LlamaState(
            input_ids=as_tokens(self.input_ids[:n]).copy(),
            scores=np.empty((0, 0), dtype=np.single),
            n_tokens=n,
            llama_state=ctypes.string_at(buffer, written),
            llama_state_size=written,
            seed=self._seed,
        )

    def load_state(self, state: LlamaState) -> None:
        n = int(state.n_tokens)
        size = int(state.llama_state_size)
        data = (ctypes.c_uint8 * size).from_buffer_copy(state.llama_state)
        if int(llama_cpp.llama_state_set_data(self._ctx.ctx, data, size)) != size:
            raise RuntimeError("llama.cpp did not take the kept state")
        self.input_ids[:n] = state.input_ids[:n]
        self.n_tokens = n
        self._requires_eval = True
        self._seed = state.seed
