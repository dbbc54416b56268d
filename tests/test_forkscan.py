"""The freshness scan in a forked child (index/forkscan.py): same answers, edits seen, no child left.

The speculation starts at SPECULATE_MIN_FILES files; here the threshold is lowered so
that a small real wiki takes the same path as a 50,000-file one.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki.config import load
from memwiki.index import forkscan
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve
from memwiki.wiki import Wiki

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the forked scan is Linux-only")

TOPICS = ["billing", "webhook", "kafka", "postgres", "release", "dashboard", "secrets", "oncall"]


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {path.stem}\ndescription: Notes on {text}\n---\n# {text}\n\n{text} details.\n",
        encoding="utf-8",
    )


def make(tmp_path: Path, n: int = 12) -> Wiki:
    wiki, _ = Wiki.init(tmp_path / "w")
    for i in range(n):
        write(wiki.root, f"memory/note-{i}.md", f"{TOPICS[i % len(TOPICS)]} topic {i}")
    return wiki


def index_of(wiki: Wiki) -> Index:
    cfg = load({"wiki": str(wiki.root)}, environ={"HOME": str(wiki.root.parent)})
    return Index(wiki, cfg, notify=lambda m: None)


def answer(wiki: Wiki, query: str, **kw) -> list[tuple[str, float]]:
    found = retrieve(wiki, query, mode="bm25", index=index_of(wiki), notify=lambda m: None, **kw)
    return [(r.path, round(r.score, 9)) for r in found.results]


def no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)  # a child still running, or one never reaped
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def speculating(monkeypatch):
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)


def test_small_wikis_are_scanned_in_process(tmp_path, monkeypatch) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 10_000)
    snap = index.snapshot(need_vectors=False, speculate=True)
    assert snap.pending_scan is None
    snap.close()


def test_an_unchanged_wiki_answers_from_the_first_search(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update(need_vectors=False)
    snap = index.snapshot(need_vectors=False, speculate=True)
    assert snap.pending_scan is not None  # the path a large wiki takes
    assert forkscan.confirm(index, snap) is snap
    snap.close()
    assert no_children()


def edit_lists(least: int, most: int):
    """Lists of (edit | add | delete | touch, note number) for apply_edits."""
    op = st.tuples(st.sampled_from(["edit", "add", "delete", "touch"]), st.integers(0, 15))
    return st.lists(op, min_size=least, max_size=most)


def apply_edits(wiki, edits: list[tuple[str, int]]) -> None:
    """Edit, add, delete or touch (a new mtime, the same bytes) memory/note-<i>.md."""
    for op, i in edits:
        path = wiki.root / f"memory/note-{i}.md"
        if op in ("edit", "add"):
            write(wiki.root, f"memory/note-{i}.md", f"zebracorn {op} {i}")
        elif op == "delete":
            path.unlink(missing_ok=True)
        elif path.exists():
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=edit_lists(1, 5))
def test_edits_made_before_a_retrieve_are_in_its_answer(
    tmp_path_factory, monkeypatch, edits
) -> None:
    # Whatever changed since the last update, the speculative retrieve answers exactly as
    # an in-process scan (the old path) does on the same files.
    base = tmp_path_factory.mktemp("spec")
    wiki = make(base)
    index_of(wiki).update(need_vectors=False)
    apply_edits(wiki, edits)
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)
    fast = answer(wiki, "zebracorn billing webhook")
    marked = answer(wiki, "zebracorn")
    assert no_children()
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 10**9)
    assert fast == answer(wiki, "zebracorn billing webhook")
    on_disk = {
        p.relative_to(wiki.root).as_posix()
        for p in (wiki.root / "memory").glob("*.md")
        if "zebracorn" in p.read_text()
    }
    assert {p for p, _ in marked} == on_disk


def test_a_killed_child_falls_back_to_a_scan_in_process(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update(need_vectors=False)
    write(wiki.root, "memory/new.md", "zebracorn arrives")
    snap = index.snapshot(need_vectors=False, speculate=True)
    os.kill(snap.pending_scan.pid, signal.SIGKILL)
    fresh = forkscan.confirm(index, snap)
    assert fresh is not snap and fresh.pending_scan is None
    assert "memory/new.md" in fresh.state.files
    fresh.close()
    assert no_children()


def test_a_snapshot_closed_unconfirmed_leaves_no_child(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update(need_vectors=False)
    snap = index.snapshot(need_vectors=False, speculate=True)
    assert snap.pending_scan is not None
    snap.close()
    assert snap.pending_scan is None and no_children()


def test_the_cli_retrieve_sees_an_edit_on_the_speculative_path(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    assert answer(wiki, "webhook")  # builds the index
    write(wiki.root, "memory/note-3.md", "zebracorn replaced the webhook notes")
    found = retrieve(wiki, "zebracorn", mode="bm25", index=index_of(wiki), notify=lambda m: None)
    assert [r.path for r in found.results][:1] == ["memory/note-3.md"]
    assert found.index["updated_files"] == 1
    assert no_children()


def wait_until(check, seconds: float = 10.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_the_child_announces_a_change_before_its_findings(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update(need_vectors=False)
    write(wiki.root, "memory/note-5.md", "zebracorn edit")
    snap = index.snapshot(need_vectors=False, speculate=True)
    assert wait_until(lambda: forkscan.stale(snap))
    fresh = forkscan.confirm(index, snap)
    assert fresh is not snap and fresh.pending_scan is None
    assert (
        fresh.state.files["memory/note-5.md"].sha256 != snap.state.files["memory/note-5.md"].sha256
    )
    fresh.close()
    assert no_children()


def test_an_unchanged_wiki_is_never_announced_stale(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update(need_vectors=False)
    snap = index.snapshot(need_vectors=False, speculate=True)
    pending = snap.pending_scan
    assert wait_until(lambda: pending.announced() or pending._head is not None)
    assert not forkscan.stale(snap)
    assert forkscan.confirm(index, snap) is snap
    snap.close()
    assert no_children()


def test_a_killed_child_counts_as_stale_and_falls_back(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update(need_vectors=False)
    write(wiki.root, "memory/new.md", "zebracorn arrives")
    snap = index.snapshot(need_vectors=False, speculate=True)
    os.kill(snap.pending_scan.pid, signal.SIGKILL)
    # dead at once (end of file, no word) or after its hint: stale either way
    assert wait_until(lambda: forkscan.stale(snap))
    fresh = forkscan.confirm(index, snap)  # scans in-process
    assert fresh is not snap and "memory/new.md" in fresh.state.files
    fresh.close()
    assert no_children()


def hold_first_search(monkeypatch) -> tuple[list, list]:
    """Hold the first BM25 search of a speculative snapshot until its child has spoken.

    Returns (the snapshots opened, the generations whose vectors were multiplied): with
    the child's word in before the search, what follows no longer depends on timing.
    """
    from memwiki.index import bm25, vector_search

    real_bm25, real_vectors, real_open = bm25.search_hits, vector_search.vector_hits, Index.snapshot
    opened: list = []
    products: list[int] = []

    def spoken(snap) -> bool:
        pending = snap.pending_scan
        return pending is None or pending.announced() or pending._head is not None

    def held(directory, *args, **kw):
        if opened and opened[-1].pending_scan is not None:
            assert wait_until(lambda: spoken(opened[-1]))
        return real_bm25(directory, *args, **kw)

    def counted(snap, *args, **kw):
        products.append(snap.state.generation)
        return real_vectors(snap, *args, **kw)

    def remember(self, *args, **kw):
        snap = real_open(self, *args, **kw)
        opened.append(snap)
        return snap

    monkeypatch.setattr(Index, "snapshot", remember)
    monkeypatch.setattr(bm25, "search_hits", held)
    monkeypatch.setattr(vector_search, "vector_hits", counted)
    return opened, products


def test_a_stale_search_is_abandoned_for_the_named_file_indexed_at_once(
    tmp_path, monkeypatch, speculating
) -> None:
    # The first BM25 search waits for the child's word, so the first search is then known
    # stale: it stops there (no vectors, no files), the file the child named is indexed
    # while the scan runs (forkscan.early), and only the updated index is searched after.
    # The child's findings hold nothing more, so there is no third search.
    from memwiki.index import search, vectors

    wiki = make(tmp_path, n=40)
    hashed = {"HOME": str(wiki.root.parent), "MEMWIKI_EMBED": "hash"}
    config = load({"wiki": str(wiki.root)}, environ=hashed)
    Index(wiki, config, notify=lambda m: None).update()
    write(wiki.root, "memory/note-3.md", "an earlier edit makes two vector segments")
    Index(wiki, config, notify=lambda m: None).update()
    write(wiki.root, "memory/note-7.md", "zebracorn replaced the kafka notes")
    opened, products = hold_first_search(monkeypatch)
    multiplied: list[int] = []
    real_product, real_rollup, real_now = vectors._product, search._rollup, Index.snapshot_now
    rolled: list[int] = []
    early: list = []

    def counted_product(part, query):
        multiplied.append(part.shape[0])
        return real_product(part, query)

    def counted_rollup(snap, *args):
        rolled.append(snap.state.generation)
        return real_rollup(snap, *args)

    def counted_now(self, *args):
        early.append(real_now(self, *args))
        return early[-1]

    monkeypatch.setattr(vectors, "_product", counted_product)
    monkeypatch.setattr(search, "_rollup", counted_rollup)
    monkeypatch.setattr(Index, "snapshot_now", counted_now)
    found = retrieve(wiki, "zebracorn kafka", index=Index(wiki, config), notify=lambda m: None)
    assert len(opened) == 1 and len(early) == 1  # one stale snapshot, one early update
    stale, fresh = opened[0], early[0]
    assert stale.pending_scan is None and fresh.pending_scan is None  # settled
    assert products == [fresh.state.generation]  # the stale snapshot was never multiplied
    assert rolled == [fresh.state.generation]  # nor its files read
    assert len(stale.state.segments) == 2 and len(fresh.state.segments) == 3
    assert len(multiplied) == 3
    assert [r.path for r in found.results][:1] == ["memory/note-7.md"]
    assert found.index["updated_files"] == 1
    assert no_children()
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 10**9)
    clone = tmp_path / "clone"
    shutil.copytree(wiki.root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    c = load({"wiki": str(clone)}, environ=hashed)
    rebuilt = retrieve(Wiki(clone), "zebracorn kafka", index=Index(Wiki(clone), c))
    assert [(r.path, round(r.score, 9)) for r in found.results] == [
        (r.path, round(r.score, 9)) for r in rebuilt.results
    ]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=edit_lists(0, 4))
def test_an_abandoned_search_answers_as_a_scan_in_process(
    tmp_path_factory, monkeypatch, edits
) -> None:
    base = tmp_path_factory.mktemp("abandon")
    wiki = make(base)
    hashed = {"HOME": str(base), "MEMWIKI_EMBED": "hash"}
    config = load({"wiki": str(wiki.root)}, environ=hashed)
    Index(wiki, config, notify=lambda m: None).update()
    apply_edits(wiki, edits)
    clone = base / "clone"
    shutil.copytree(wiki.root, clone, symlinks=True)  # the same files, and the same index

    def ranked(w, speculate_from: int) -> list[tuple[str, float]]:
        monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", speculate_from)
        c = load({"wiki": str(w.root)}, environ=hashed)
        found = retrieve(w, "zebracorn billing webhook", index=Index(w, c), notify=lambda m: None)
        return [(r.path, round(r.score, 9)) for r in found.results]

    hold_first_search(monkeypatch)
    assert ranked(wiki, 1) == ranked(Wiki(clone), 10**9)
    assert no_children()
