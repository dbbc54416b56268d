"""The freshness scan in a forked child (index/forkscan.py): same answers, edits seen, no child left.

The speculation starts at SPECULATE_MIN_FILES files; here the threshold is lowered so
that a small real wiki takes the same path as a 50,000-file one.
"""

from __future__ import annotations

import os
import signal
import sys
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


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(["edit", "add", "delete", "touch"]), st.integers(0, 15)),
        min_size=1,
        max_size=5,
    )
)
def test_edits_made_before_a_retrieve_are_in_its_answer(
    tmp_path_factory, monkeypatch, edits
) -> None:
    # Whatever changed since the last update, the speculative retrieve answers exactly as
    # an in-process scan (the old path) does on the same files.
    base = tmp_path_factory.mktemp("spec")
    wiki = make(base)
    index_of(wiki).update(need_vectors=False)
    for op, i in edits:
        path = wiki.root / f"memory/note-{i}.md"
        if op == "edit" or op == "add":
            write(wiki.root, f"memory/note-{i}.md", f"zebracorn {op} {i}")
        elif op == "delete":
            path.unlink(missing_ok=True)
        elif path.exists():
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
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
