"""The per-process cache of posting lists and length columns (index/bm25_postings.py).

A cached list must never outlive the segment it was read from: a rebuilt index, an
index of other files in the same folder, a seeded `random` that gives Whoosh the same
segment ids again. Every answer is compared with a fresh process's.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki.index import bm25, bm25_postings, bm25_update
from memwiki.index.chunker import chunk

WORDS = ["webhook", "secret", "rotation", "kafka", "billing", "release", "staging", "oncall"]


def items(seed: int, n: int = 30):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
        out.extend(
            chunk(
                f"# Note {i}\n\n{body}\n",
                1,
                path=f"memory/n{i}.md",
                track="memory",
                name=f"n{i}",
                description=f"note {i}",
            )
        )
    return out


def build(directory: Path, seed: int) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    random.seed(1234)  # the same segment ids every time (Whoosh draws them from `random`)
    bm25.create(directory, items(seed))


def search(directory: Path, query: str, limit: int = 10) -> list[tuple[str, float]]:
    found = bm25.search_hits(directory, query, limit)
    return [(i, round(s, 9)) for i, s in found.items]


FRESH = """
import json, sys
from pathlib import Path
from memwiki.index import bm25
found = bm25.search_hits(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
print(json.dumps([[i, round(s, 9)] for i, s in found.items]))
"""


def fresh(directory: Path, query: str, limit: int = 10) -> list[tuple[str, float]]:
    """The answer of a new process, whose cache is empty."""
    out = subprocess.run(
        [sys.executable, "-c", FRESH, str(directory), query, str(limit)],
        capture_output=True,
        check=True,
        timeout=60,
        text=True,
    ).stdout
    return [tuple(pair) for pair in json.loads(out)]


@pytest.mark.parametrize("query", ["webhook secret", "kafka billing release"])
def test_a_rebuild_in_the_same_folder_with_the_same_segment_ids_is_read_anew(
    tmp_path, query
) -> None:
    folder = tmp_path / "bm25-1"
    build(folder, seed=1)
    first = search(folder, query)
    assert first == fresh(folder, query)
    build(folder, seed=2)  # other files, the same folder, the same random segment ids
    assert search(folder, query) == fresh(folder, query) != first


def test_an_update_reads_the_new_segment_and_keeps_the_old_ones(tmp_path) -> None:
    folder = tmp_path / "bm25-1"
    build(folder, seed=3)
    search(folder, "webhook secret rotation")  # fills the cache
    held = len(bm25_postings._LISTS)
    new = items(4, n=3)
    bm25_update.update(folder, ["memory/n0.md", "memory/n1.md"], new, optimize=False)
    assert search(folder, "webhook secret rotation") == fresh(folder, "webhook secret rotation")
    assert len(bm25_postings._LISTS) > held  # the new segment's lists were read too


def test_a_small_bound_evicts_and_answers_the_same(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "bm25-1"
    build(folder, seed=5)
    monkeypatch.setattr(bm25_postings, "CACHE_POSTINGS", 5)
    monkeypatch.setattr(bm25_postings, "CACHE_COLUMNS", 1)
    for query in ("webhook", "secret billing", "kafka oncall staging"):
        assert search(folder, query) == fresh(folder, query)
        assert sum(b.count for b in bm25_postings._LISTS.values()) == bm25_postings._HELD[0]
        assert len(bm25_postings._LISTS) == 1 or bm25_postings._HELD[0] <= 5
        assert len(bm25_postings._COLUMNS) <= 1
