"""The search's process-wide caches (posting lists and length columns: index/bm25_postings.py;
vector products: index/vector_products.py) used by several threads at once, as the
retrieves of a server answering several agents use them. The caches are made small so
that they evict on almost every call, as a long-lived process's do once they are full."""

from __future__ import annotations

import random
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from memwiki.index import bm25, bm25_postings, bm25_update, vector_products
from memwiki.index.chunker import chunk

WORDS = ["webhook", "secret", "rotation", "kafka", "billing", "release", "staging", "oncall"]


def _in_threads(work: Callable[[int], None], threads: int = 8) -> list[str]:
    """work(n) in each of threads threads started together; the exceptions they raised."""
    errors: list[str] = []

    def run(n: int) -> None:
        try:
            work(n)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns often: a race shows in a few calls
    try:
        started = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(threads)]
        for thread in started:
            thread.start()
        for thread in started:
            thread.join(60)
    finally:
        sys.setswitchinterval(switch)
    assert not any(thread.is_alive() for thread in started)
    return errors


def test_vector_products_from_threads_at_once(monkeypatch) -> None:
    """Bug: the oldest product was evicted as `del cache[next(iter(cache))]`, unguarded: two
    threads evicting at once raised RuntimeError ("dictionary changed size during
    iteration") or KeyError out of a hybrid retrieve. Found by 8 threads retrieving over
    10 wikis while another saved edits (1 RuntimeError in 3,199 retrieves at the real
    size); here, before the fix, about 60 errors in every run."""
    monkeypatch.setattr(vector_products, "KEEP", 1)
    parts = [np.random.default_rng(n).random((6, 8), dtype=np.float32) for n in range(4)]
    wrong: list[int] = []

    def work(n: int) -> None:
        query = np.full(8, n + 1, dtype=np.float32)
        for i in range(20_000):
            part = parts[i % 4]
            got = vector_products.product(part, ("segment", i % 4), query, np.matmul)
            if not np.array_equal(got, part @ query):
                wrong.append(i)

    assert _in_threads(work) == []
    assert wrong == []
    assert len(vector_products._PRODUCTS) <= 1


def _segments(directory) -> None:
    rng = random.Random(5)
    for batch in range(3):  # three segments
        items = []
        for i in range(20):
            body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
            items += chunk(
                f"# Note {i}\n\n{body}\n", 1, path=f"memory/b{batch}n{i}.md",
                track="memory", name=f"b{batch}n{i}", description=f"note {i}",
            )  # fmt: skip
        if batch == 0:
            bm25.create(directory, items)
        else:
            bm25_update.update(directory, [], items, optimize=False)


def test_posting_lists_and_length_columns_from_threads_at_once(tmp_path, monkeypatch) -> None:
    """Bug: a posting list was looked up in two steps (`get`, then `move_to_end`) and a
    length column too (`key in cache`, then `cache[key]`), and both evicted unguarded: a
    thread whose entry another had just evicted raised KeyError out of retrieve, and the
    count of cached postings drifted from the lists held (a list read by two threads at
    once was counted twice), so a long-lived server's cache held less and less."""
    directory = tmp_path / "bm25"
    _segments(directory)
    searcher = bm25.open_searcher(directory)
    try:
        leaves = [leaf for leaf, _ in bm25.leaf_readers(searcher.reader())]
        assert len(leaves) == 3
        expected = {
            (n, field, word): list(bm25_postings.postings(leaf, field, word)[0])
            for n, leaf in enumerate(leaves)
            for field in ("heading", "body")
            for word in WORDS[:4]
        }
        columns = {(n, f): bm25_postings.length_bytes(leaves[n], f) for n, f, _ in expected}
        # empty and small: every thread reads lists, inserts and evicts
        monkeypatch.setattr(bm25_postings, "_LISTS", OrderedDict())
        monkeypatch.setattr(bm25_postings, "_HELD", [0])
        monkeypatch.setattr(bm25_postings, "_COLUMNS", {})
        monkeypatch.setattr(bm25_postings, "CACHE_POSTINGS", 100)
        monkeypatch.setattr(bm25_postings, "CACHE_COLUMNS", 2)
        wrong: list[tuple] = []
        keys = sorted(expected)

        def work(seed: int) -> None:
            rnd = random.Random(seed)
            for _ in range(3000):
                n, field, word = key = rnd.choice(keys)
                if list(bm25_postings.postings(leaves[n], field, word)[0]) != expected[key]:
                    wrong.append(key)
                if bm25_postings.length_bytes(leaves[n], field) != columns[(n, field)]:
                    wrong.append((n, field))

        assert _in_threads(work) == []
        assert wrong == []
        held = sum(found.count for found in bm25_postings._LISTS.values())
        assert bm25_postings._HELD[0] == held  # the count is the cached lists' own
    finally:
        searcher.close()
