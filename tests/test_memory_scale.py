"""Memory that scales: a fact costs its row on disk, not kilobytes of the hub's RAM; a person's
vectors reach memory only for their search, within a byte bound; a data dir from before keeps
its vectors. The figures at 100,000 facts are ``scripts/bench memory_scale``'s.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hub.memory import vectors as vector_module
from hub.memory.vector_store import COLLECTION, VECTORS_FILE, chroma_client
from hub.runtime.hub import Hub
from tests.conftest import settings_for

# Learns in a fresh hub process after a warm-up; its RSS must grow by less than this. Holding
# every vector in Chroma's in-memory index grew it by 13.6 MB over 600 learns (~23 KB a fact).
LEARNS = 600
MOST_GROWTH_MB = 6.0
GROWTH = textwrap.dedent(
    """
    import re, sys
    from pathlib import Path
    from hub.config import load_settings
    from hub.runtime.hub import Hub

    def rss_kb():
        status = Path("/proc/self/status").read_text()
        return int(re.search(r"VmRSS:\\s+(\\d+) kB", status).group(1))

    home = Path(sys.argv[1])
    hub = Hub.open(load_settings(home=home, environ={}, overrides={"port": 0}))
    me = hub.owner.id
    for i in range(100):
        hub.memory.learn(me, f"warming up with fact {i} about the allotment")
    hub.memory.recall(me, "allotment")
    before = rss_kb()
    for i in range(int(sys.argv[2])):
        hub.memory.learn(me, f"Note {i}: the parcel for flat {i} came on day {i * 7}.")
    print(rss_kb() - before)
    hub.close()
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc to read RSS from")
def test_learning_facts_does_not_grow_the_hub_by_kilobytes_a_fact(tmp_path: Path) -> None:
    grown = subprocess.run(
        [sys.executable, "-c", GROWTH, str(tmp_path / "home"), str(LEARNS)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    grown_mb = int(grown.stdout.split()[-1]) / 1024
    assert grown_mb < MOST_GROWTH_MB, f"RSS grew {grown_mb:.1f} MB over {LEARNS} learns"


def test_vectors_are_rows_on_disk_and_chroma_holds_none_of_them(home: Path) -> None:
    hub = Hub.open(settings_for(home))
    try:
        fact = hub.memory.learn(hub.owner.id, "The boiler is serviced every March.")
        assert hub.memory.vectors.count(hub.owner.id) == 1
        assert (home / VECTORS_FILE).exists()
        names = {c.name for c in hub.memory.vectors.client.list_collections()}
        assert COLLECTION not in names
        assert [f.id for f in hub.memory.recall(hub.owner.id, "when is the boiler due?")] == [
            fact.id
        ]
    finally:
        hub.close()


def test_the_people_kept_in_memory_are_bounded_in_bytes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = Hub.open(settings_for(home))
    try:
        people = [hub.owner.id, *(hub.identity.add_user(f"p{i}").id for i in range(4))]
        for person in people:
            for i in range(20):
                hub.memory.learn(person, f"fact {i} of a person who likes tea")
        one_person = 20 * 384 * 4
        monkeypatch.setattr(vector_module, "CACHED_BYTES", 2 * one_person)
        for person in people:
            assert len(hub.memory.recall(person, "tea")) == 5
        kept = hub.memory.vectors._people
        assert list(kept) == people[-2:]  # the two most recently searched
    finally:
        hub.close()


def test_a_data_dir_from_before_keeps_its_vectors(home: Path) -> None:
    """Vectors an embedded Chroma kept are moved into vectors.db on the first open, and the
    Chroma collection is dropped."""
    hub = Hub.open(settings_for(home))
    me = hub.owner.id
    facts = [hub.memory.learn(me, text) for text in ("I keep bees.", "My sister is Mia.")]
    rows = hub.memory.vectors.store.person(me)
    hub.close()
    (home / VECTORS_FILE).unlink()
    client = chroma_client(home / "chroma", "")  # as the hub before kept them
    collection = client.get_or_create_collection(COLLECTION, embedding_function=None)
    collection.add(ids=rows[0], embeddings=rows[1], metadatas=[{"userId": me}] * len(rows[0]))
    client.close()
    reopened = Hub.open(settings_for(home))
    try:
        found = reopened.memory.recall(me, "who is my sister?", limit=1)
        assert [f.id for f in found] == [facts[1].id]
        ids, matrix = reopened.memory.vectors.store.person(me)
        assert sorted(ids) == sorted(rows[0])
        assert np.allclose(matrix[np.argsort(ids)], rows[1][np.argsort(rows[0])])
        names = {c.name for c in reopened.memory.vectors.client.list_collections()}
        assert COLLECTION not in names
    finally:
        reopened.close()


def test_chroma_is_opened_once_whoever_asks_first(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first request's memory and the start-up repair's universe reach for Chroma at once, on
    a data dir whose vectors Chroma still keeps: one client is made, and both get on (two
    clients of one path made at once race inside Chroma: "'RustBindingsAPI' object has no
    attribute 'bindings'")."""
    hub = Hub.open(settings_for(home))
    me = hub.owner.id
    sister = hub.memory.learn(me, "My sister is Mia.")
    rows = hub.memory.vectors.store.person(me)
    hub.close()
    (home / VECTORS_FILE).unlink()
    client = chroma_client(home / "chroma", "")
    collection = client.get_or_create_collection(COLLECTION, embedding_function=None)
    collection.add(ids=rows[0], embeddings=rows[1], metadatas=[{"userId": me}] * len(rows[0]))
    client.close()

    opened: list[Path | None] = []
    real = vector_module.chroma_client

    def counted(path: Path | None, url: str) -> Any:
        opened.append(path)
        return real(path, url)

    monkeypatch.setattr(vector_module, "chroma_client", counted)
    reopened = Hub.open(settings_for(home))
    try:
        start = threading.Barrier(3)

        def after_start(work: Callable[[], Any]) -> Callable[[], Any]:
            return lambda: (start.wait(), work())[1]

        with ThreadPoolExecutor(3) as pool:
            found = pool.submit(after_start(lambda: reopened.memory.recall(me, "sister?")))
            repaired = pool.submit(after_start(reopened.universe.index_missing))
            listed = pool.submit(after_start(lambda: reopened.memory.vectors.store.person(me)))
            assert [f.id for f in found.result()] == [sister.id]
            repaired.result()
            assert listed.result()[0] == rows[0]
        assert len(opened) == 1
    finally:
        reopened.close()
