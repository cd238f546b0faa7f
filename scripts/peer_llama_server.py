"""``python -m llama_cpp.server`` with its RAM cache counting what each entry really holds.

llama-cpp-python's ``LlamaRAMCache`` measures itself by llama.cpp's state alone, while each
entry also holds a copy of the logits (``n_batch`` × vocabulary floats: 311 MB for Qwen2.5's
151,936 entries). Short prompts' states are a few megabytes, so a 1 GB cache kept hundreds of
entries and the server grew past 22 GB until the kernel killed it in the middle of a replay.
Here the cache counts both, so its size is the RAM it takes; everything else is the server as
its package ships it (``main`` parses the same arguments).
"""

from __future__ import annotations

from typing import Any

from llama_cpp.llama_cache import LlamaRAMCache
from llama_cpp.server.__main__ import main


def whole_size(cache: LlamaRAMCache) -> int:
    states: Any = cache.cache_state.values()
    return sum(int(s.llama_state_size) + int(s.scores.nbytes) for s in states)


LlamaRAMCache.cache_size = property(whole_size)  # type: ignore[assignment,method-assign]

if __name__ == "__main__":
    main()
