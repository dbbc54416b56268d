"""Segmented vectors and the base + delta manifest: edits write what changed, and nothing else.

An edit appends one vector segment and tombstones the rows it replaces; compaction folds
them back. Whatever the sequence, the index must equal a rebuild (rows, vectors, BM25
scores, answers), and a process killed between writing a segment and committing the
manifest must leave an index the next command can read or repair.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_index import answers, assert_same_answers, assert_same_scores, cfg, write

from memwiki.index import manifest, segments
from memwiki.index.indexer import Index
from memwiki.wiki import Wiki

WORDS = "release billing staging kafka charts deploy go ledger webhook rollback".split()


def hash_cfg(root: Path):
    return cfg(root, MEMWIKI_EMBED="hash")


def facts(wiki: Wiki):
    """Rows, vectors and BM25 hits by item id, as a reader of the committed index sees them."""
    from memwiki.index import bm25

    snap = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).snapshot()
    matrix = snap.matrix()
    rows = {r.id: (r.sha, r.heading, r.path) for r in snap.state.rows}
    vectors = {r.id: np.asarray(matrix[i]) for i, r in enumerate(snap.state.rows)}
    hits = {q: dict(bm25.search(snap.bm25_dir, q, 50)) for q in ("billing deploy", "kafka go")}
    pending = {snap.state.rows[i].id for i in snap.state.unembedded}
    # the manifest's files too: what a later scan compares, what `list` and facts read
    files = {rel: (e.sha256, e.problem, e.meta) for rel, e in snap.state.files.items()}
    rows["files"] = files  # type: ignore[assignment]
    assert snap.state.indexed_files() == sum(1 for e in files.values() if e[1] is None)
    snap.close()
    return rows, vectors, hits, pending


def assert_equals_rebuild(wiki: Wiki, tmp: Path) -> None:
    clone = tmp / "rebuilt"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(wiki.root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    rows, vectors, hits, pending = facts(wiki)
    rows2, vectors2, hits2, _ = facts(Wiki(clone))
    assert rows == rows2
    for q in hits:
        assert_same_scores(hits[q], hits2[q])
    for key, vec in vectors.items():
        if key not in pending:
            np.testing.assert_array_equal(vec, vectors2[key])
    queries = ["billing deploy", "release staging go", "kafka charts ledger"]
    extra = {"MEMWIKI_EMBED": "hash"}
    assert_same_answers(answers(wiki, queries, **extra), answers(Wiki(clone), queries, **extra))


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "create", "delete", "bm25-edit"]),
        st.integers(0, 11),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=20),
    ),
    min_size=1,
    max_size=14,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=EDITS,
    compact_min=st.sampled_from([0, 6, 40, 10_000]),
    max_segments=st.sampled_from([1, 3, 8]),
)
def test_segmented_store_after_random_edits_equals_a_rebuild(
    tmp_path_factory, monkeypatch, ops, compact_min, max_segments
):
    monkeypatch.setattr(segments, "COMPACT_MIN", compact_min)
    monkeypatch.setattr(segments, "MAX_SEGMENTS", max_segments)
    base = tmp_path_factory.mktemp("seg")
    wiki, _ = Wiki.init(base / "w")
    for n in range(6):
        write(wiki.root, f"memory/n{n}.md", f"note {n}", f"## A\n{WORDS[n]} go\n## B\nledger {n}\n")
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    index.update()
    most = 1
    for op, n, words in ops:
        rel = f"memory/n{n}.md"
        if op == "delete":
            (wiki.root / rel).unlink(missing_ok=True)
        else:
            body = "## A\n" + " ".join(words) + "\n" + "## B\n" * (len(words) % 2) + "go\n"
            write(wiki.root, rel, f"note {n} {words[0]}", body)
        state = index.update(need_vectors=op != "bm25-edit").state
        most = max(most, len(state.segments))
        assert sum(r for _, r in state.segments) == state.physical_rows
        assert len(state.rows) == state.physical_rows - len(state.dead)
        # what the next process reads back is what this one committed
        loaded = manifest.load(wiki.sidecar / "index" / "state.pkl")
        assert dict(loaded.files) == dict(state.files) and list(loaded.rows) == list(state.rows)
        assert loaded.unembedded == state.unembedded and loaded.dead == state.dead
    if compact_min == 10_000 and max_segments == 8 and any(op != "delete" for op, _, _ in ops):
        assert most > 1  # the appended path ran (a deletion only marks rows dead)
    assert_equals_rebuild(wiki, base)


def big_wiki(root: Path, files: int = 60) -> Wiki:
    wiki, _ = Wiki.init(root)
    for n in range(files):
        body = "".join(f"## Part {k}\n{WORDS[(n + k) % 10]} {n} {k}\n" for k in range(5))
        write(wiki.root, f"memory/f{n:03d}.md", f"file {n}", body)
    return wiki


def test_an_edit_writes_one_small_segment_and_keeps_the_base(tmp_path):
    wiki = big_wiki(tmp_path / "w")
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    built = index.update().state
    idx = wiki.sidecar / "index"
    base_files = {p.name: p.stat().st_mtime_ns for p in idx.glob("manifest-*.bin")}
    base_files.update({p.name: p.stat().st_mtime_ns for p in idx.glob("vectors-*.npy")})
    head = (idx / "state.pkl").stat().st_size
    write(wiki.root, "memory/f007.md", "file 7", "## Only\nwebhook rotation\n## Two\nkafka\n")
    state = index.update().state
    assert state.base == built.base and state.segments[0] == built.segments[0]
    assert state.segments[1][1] == 2  # just the edited file's two items
    assert len(state.dead) == 5  # its five old items
    for name, mtime in base_files.items():  # the base is never rewritten
        assert (idx / name).stat().st_mtime_ns == mtime
    # state.pkl carries only the delta: much smaller than the base it rides on
    assert (idx / "state.pkl").stat().st_size < max(head, 4096)
    assert (idx / built.base).stat().st_size > 4 * (idx / "state.pkl").stat().st_size
    loaded = manifest.load(idx / "state.pkl")
    assert loaded.rows == state.rows and loaded.files == state.files
    assert_equals_rebuild(wiki, tmp_path)


def test_many_edits_compact_back_to_one_segment(tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "COMPACT_MIN", 12)
    wiki = big_wiki(tmp_path / "w", files=20)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    index.update()
    counts = []
    for n in range(6):
        write(wiki.root, f"memory/f{n:03d}.md", f"file {n}", f"## Only\nchanged {n}\n")
        counts.append(len(index.update().state.segments))
    assert max(counts) > 1 and 1 in counts[1:]  # grew, then compacted
    idx = wiki.sidecar / "index"
    state = manifest.load(idx / "state.pkl")
    named = {n for n, _ in state.segments} | {state.base}
    assert (
        len(list(idx.glob("vectors-*.npy")) + list(idx.glob("manifest-*.bin")))
        <= 2 * len(named) + 2
    )
    assert_equals_rebuild(wiki, tmp_path)


KILL_AT = {
    # after the new segment is written, before Whoosh commits
    "after-segment": "memwiki.index.bm25_update:update",
    # after the segment and the Whoosh commit, before state.pkl names them
    "before-manifest": "memwiki.index.manifest:save",
}

KILLER = """
import os, signal, sys, importlib
from memwiki.config import load
from memwiki.index.indexer import Index
from memwiki.wiki import Wiki
module, name = sys.argv[2].split(":")
mod = importlib.import_module(module)
real = getattr(mod, name)
def die(*a, **k):
    if name == "update":
        os.kill(os.getpid(), signal.SIGKILL)
    if name == "save" and not k.get("compact"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*a, **k)
setattr(mod, name, die)
cfg = load({"wiki": sys.argv[1]}, environ={"HOME": sys.argv[3], "MEMWIKI_EMBED": "hash"})
Index(Wiki(sys.argv[1]), cfg, notify=lambda m: None).update()
"""


@pytest.mark.parametrize("point", sorted(KILL_AT))
def test_kill_9_between_segment_and_manifest_leaves_a_usable_index(tmp_path, point):
    wiki = big_wiki(tmp_path / "w", files=30)
    Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
    write(wiki.root, "memory/f003.md", "file 3", "## Only\nwebhook secret rotation\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIKI_")}
    env["MEMWIKI_MODEL_CACHE"] = os.environ["MEMWIKI_MODEL_CACHE"]  # shared: see conftest
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(wiki.root), KILL_AT[point], str(tmp_path)],
        env=env,
        timeout=120,
        capture_output=True,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    idx = wiki.sidecar / "index"
    assert len(list(idx.glob("vectors-*.npy"))) == 2  # the orphan segment was written
    messages: list[str] = []
    from memwiki.index.search import retrieve

    result = retrieve(
        wiki, "webhook secret rotation", config=hash_cfg(wiki.root), notify=messages.append
    )
    assert result.paths()[0] == "memory/f003.md"
    assert len(messages) <= 1  # at most the one "rebuilding" line
    assert_equals_rebuild(wiki, tmp_path)


def test_a_vanished_base_is_repaired(tmp_path):
    wiki = big_wiki(tmp_path / "w", files=10)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    state = index.update().state
    (wiki.sidecar / "index" / state.base).unlink()
    messages: list[str] = []
    fresh = Index(wiki, hash_cfg(wiki.root), notify=messages.append)
    assert len(fresh.snapshot().state.rows) == len(state.rows)
    assert any("rebuilding" in m for m in messages)


def test_blockwise_product_equals_the_whole_and_gives_pages_back(tmp_path, monkeypatch):
    from memwiki.index import vectors

    rng = np.random.default_rng(3)
    whole = rng.standard_normal((5000, 384)).astype(np.float32)
    vectors.save_matrix(tmp_path / "v.npy", whole)
    query = rng.standard_normal(384).astype(np.float32)
    monkeypatch.setattr(vectors, "CHUNK_ROWS", 1000)
    state = manifest.State(embedder={"dim": 384}, segments=[("v.npy", 5000)])
    state.extra = [None] * 5000  # type: ignore[list-item]
    mapped = vectors.open_matrix(tmp_path, state)
    assert isinstance(mapped, vectors.SegmentedMatrix)
    # bit for bit: every row's product is the same whatever block it is computed in
    np.testing.assert_array_equal(mapped @ query, vectors.dot_rows(whole, query))
    np.testing.assert_array_equal(mapped[[4999, 3, 1000]], whole[[4999, 3, 1000]])
    state.dead = {0, 2500}
    live = vectors.open_matrix(tmp_path, state)
    expected = vectors.dot_rows(np.delete(whole, [0, 2500], axis=0), query)
    np.testing.assert_array_equal(live @ query, expected)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 70),
    at=st.integers(0, 69),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_vector_scores_the_same_wherever_it_sits(rows, at, seed):
    # BLAS (`matrix @ query`) gave one vector 4 different float32 scores across positions
    # and matrix sizes, which swapped two tied files after edits (vectors.dot_rows).
    from memwiki.index import vectors

    rng = np.random.default_rng(seed)
    vec = rng.standard_normal(384).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    alone = vectors.dot_rows(vec[None, :], query)[0]
    matrix = rng.standard_normal((rows, 384)).astype(np.float32)
    matrix[at % rows] = vec
    assert vectors.dot_rows(matrix, query)[at % rows] == alone
    parts = vectors.SegmentedMatrix([matrix[: at % rows + 1], matrix[at % rows + 1 :]], None)
    assert (parts @ query)[at % rows] == alone
