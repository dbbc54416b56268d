"""The early update of a speculative retrieve (index/forkscan.py: early, covers, confirm).

The scan child names the first changed file it meets; the parent indexes that file at
once, while the walk goes on, and checks the child's findings against it at the end.
Real children, real locks, real kill -9; the threshold is lowered so that a small wiki
takes the path of a 50,000-file one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forkscan import apply_edits, make, write

from memwiki.config import load
from memwiki.index import forkscan, freshness
from memwiki.index import manifest as mf
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve
from memwiki.wiki import Wiki


def count_walks(monkeypatch, walks: list[int]) -> None:
    """Count every walk of the wiki: the scan's (index/freshness.py) and the writer's."""
    for module in (mf, freshness):
        real = module.walk
        monkeypatch.setattr(
            module, "walk", lambda *a, _r=real, **kw: walks.append(1) or _r(*a, **kw)
        )


pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the forked scan is Linux-only")

QUERY = "zebracorn billing webhook"


def environ(wiki: Wiki) -> dict:
    return {"HOME": str(wiki.root.parent), "MEMWIKI_EMBED": "hash"}


def index_of(wiki: Wiki) -> Index:
    return Index(wiki, load({"wiki": str(wiki.root)}, environ=environ(wiki)), notify=lambda m: None)


def ranked(wiki: Wiki) -> list[tuple[str, float]]:
    found = retrieve(wiki, QUERY, index=index_of(wiki), notify=lambda m: None)
    return [(r.path, round(r.score, 9)) for r in found.results]


def rebuilt(wiki: Wiki, where: Path) -> list[tuple[str, float]]:
    """The answer of a fresh index of the same files, scanned in-process."""
    clone = where / "rebuilt"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(wiki.root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    return ranked(Wiki(clone))


def no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def wait_until(check, seconds: float = 10.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if check():
            return True
        time.sleep(0.005)
    return False


def finished(pid: int) -> bool:
    """The child has exited (a zombie: its findings are all in the pipe), not yet reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@pytest.fixture
def speculating(monkeypatch):
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)


def speculative(index: Index):
    snap = index.snapshot(need_vectors=True, speculate=True)
    assert snap.pending_scan is not None
    assert wait_until(lambda: forkscan.stale(snap))
    return snap


def test_the_named_file_is_indexed_while_the_scan_still_runs(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    before = index.committed_state()[0].files["memory/note-5.md"].sha256
    write(wiki.root, "memory/note-5.md", "zebracorn edit")
    snap = speculative(index)
    pending = snap.pending_scan
    assert pending.hint == "memory/note-5.md"
    fresh = forkscan.settle(index, snap)
    assert fresh is not snap and fresh.pending_scan is pending and pending.applied
    assert not forkscan.stale(fresh)  # it holds the change the child announced
    assert fresh.state.files["memory/note-5.md"].sha256 != before
    assert forkscan.confirm(index, fresh) is fresh  # the findings name nothing else
    fresh.close()
    assert no_children()
    assert ranked(wiki) == rebuilt(wiki, tmp_path)


def test_the_rest_of_the_findings_is_indexed_without_a_second_walk(
    tmp_path, monkeypatch, speculating
) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    for i in (2, 6, 9):
        write(wiki.root, f"memory/note-{i}.md", f"zebracorn edit {i}")
    (wiki.root / "memory/note-4.md").unlink()
    snap = speculative(index)
    walks: list[int] = []
    count_walks(monkeypatch, walks)
    early = forkscan.settle(index, snap)
    assert early.pending_scan is not None and early.pending_scan.applied
    final = forkscan.confirm(index, early)
    assert final is not early and final.pending_scan is None
    assert walks == []  # the parent never walked: the child's findings did the rest
    files = final.state.files
    assert "memory/note-4.md" not in files
    for i in (2, 6, 9):
        entry = files[f"memory/note-{i}.md"]
        assert entry.sha256 == freshness.file_sha256(wiki.root / f"memory/note-{i}.md")
    final.close()
    assert no_children()
    assert ranked(wiki) == rebuilt(wiki, tmp_path)


def test_a_file_changed_again_after_the_childs_look_is_scanned_again(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    write(wiki.root, "memory/note-3.md", "zebracorn first edit")
    snap = speculative(index)
    assert wait_until(lambda: finished(snap.pending_scan.pid))  # findings: the first edit
    time.sleep(0.01)  # a later mtime on any file system clock
    write(wiki.root, "memory/note-3.md", "zebracorn second edit, longer than the first")
    early = forkscan.settle(index, snap)  # indexes the second edit
    final = forkscan.confirm(index, early)  # the child saw the first: not held, scan again
    assert final is not early
    assert final.state.files["memory/note-3.md"].sha256 == freshness.file_sha256(
        wiki.root / "memory/note-3.md"
    )
    final.close()
    assert no_children()
    assert ranked(wiki) == rebuilt(wiki, tmp_path)


def test_a_word_that_comes_while_the_findings_are_awaited_is_read_as_one(
    tmp_path, monkeypatch, speculating
) -> None:
    # The search ended before the child met the changed file: the parent already waits
    # for the findings when the word comes. It is read as the word it is, and the
    # findings after it are used (no scan in the parent).
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    write(wiki.root, "memory/note-4.md", "zebracorn late in the walk")
    real_scan = freshness.scan

    def slow(root, state, on_change=None):
        time.sleep(0.3)  # in the child: the parent is waiting by then
        return real_scan(root, state, on_change)

    monkeypatch.setattr(freshness, "scan", slow)
    snap = index.snapshot(need_vectors=True, speculate=True)
    pending = snap.pending_scan
    assert pending is not None and pending._head is None
    walks: list[int] = []
    count_walks(monkeypatch, walks)
    final = forkscan.confirm(index, snap)
    assert pending.hint == "memory/note-4.md"
    assert walks == []
    assert final.state.files["memory/note-4.md"].sha256 == freshness.file_sha256(
        wiki.root / "memory/note-4.md"
    )
    final.close()
    assert no_children()


def test_a_held_lock_leaves_the_update_to_the_findings(tmp_path, speculating) -> None:
    # Another writer holds the lock: no early update, and no wait for it yet; the
    # confirmation waits (as a reader always did) and updates once the lock is free.
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    write(wiki.root, "memory/note-1.md", "zebracorn while locked")
    holder = index_of(wiki).lock()
    assert holder.try_acquire()
    snap = speculative(index)
    started = time.monotonic()
    assert forkscan.early(index, snap) is None
    assert time.monotonic() - started < 1.0  # did not wait for the lock
    threading.Timer(0.3, holder.release).start()
    final = forkscan.settle(index, snap)
    assert final.pending_scan is None and not final.stale
    assert final.state.files["memory/note-1.md"].sha256 == freshness.file_sha256(
        wiki.root / "memory/note-1.md"
    )
    final.close()
    assert no_children()


def test_a_deleted_hinted_file_is_never_kept(tmp_path, speculating) -> None:
    wiki = make(tmp_path)
    index = index_of(wiki)
    index.update()
    write(wiki.root, "memory/note-8.md", "zebracorn soon gone")
    snap = speculative(index)
    (wiki.root / "memory/note-8.md").unlink()  # gone before the parent looks at it
    final = forkscan.confirm(index, forkscan.settle(index, snap))
    assert "memory/note-8.md" not in final.state.files
    final.close()
    assert no_children()
    assert ranked(wiki) == rebuilt(wiki, tmp_path)


def edit_lists(least: int, most: int):
    op = st.tuples(st.sampled_from(["edit", "add", "delete", "touch"]), st.integers(0, 15))
    return st.lists(op, min_size=least, max_size=most)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds=st.lists(edit_lists(1, 4), min_size=1, max_size=3))
def test_early_updates_leave_the_index_a_rebuild_gives(
    tmp_path_factory, monkeypatch, rounds
) -> None:
    # Rounds of edits, each followed by a speculative retrieve whose first search waits
    # for the child's word (so the early path is taken whenever a stat changed): every
    # answer, ranks and scores, is a fresh rebuild's, and so are the index's rows.
    base = tmp_path_factory.mktemp("early")
    wiki = make(base)
    index_of(wiki).update()
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)
    real = forkscan.stale

    def spoken(snap) -> bool:
        pending = snap.pending_scan
        if pending is not None and not pending.applied:
            wait_until(lambda: pending.announced() or pending._head is not None)
        return real(snap)

    monkeypatch.setattr(forkscan, "stale", spoken)
    for edits in rounds:
        apply_edits(wiki, edits)
        assert ranked(wiki) == rebuilt(wiki, base), edits
        assert no_children()
    mine = index_of(wiki).committed_state()[0]
    fresh = index_of(Wiki(base / "rebuilt")).committed_state()[0]
    assert sorted(r.id for r in mine.rows) == sorted(r.id for r in fresh.rows)
    assert {k: v.sha256 for k, v in mine.files.items()} == {
        k: v.sha256 for k, v in fresh.files.items()
    }


KILLER = """
import os, sys
from memwiki.config import load
from memwiki.index import forkscan, {module}
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve
from memwiki.wiki import Wiki

forkscan.SPECULATE_MIN_FILES = 1
real = {module}.{function}

def killed(*args, **kw):
    if {after}:
        real(*args, **kw)
    os.kill(os.getpid(), 9)

{module}.{function} = killed
wiki = Wiki(sys.argv[1])
config = load({{"wiki": sys.argv[1]}}, environ={{"HOME": sys.argv[2], "MEMWIKI_EMBED": "hash"}})
retrieve(wiki, "zebracorn", index=Index(wiki, config, notify=lambda m: None))
"""

POINTS = [
    ("vectors", "save_matrix", False),  # writing the new vector segment
    ("vectors", "save_matrix", True),  # segment written, Whoosh not yet committed
    ("bm25_update", "update", True),  # Whoosh committed, state.pkl not yet written
    ("manifest", "save", True),  # state.pkl committed, old files not yet cleaned up
]


@pytest.mark.parametrize(("module", "function", "after"), POINTS)
def test_a_retrieve_killed_in_its_early_update_is_repaired(
    tmp_path, module, function, after
) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update()
    write(wiki.root, "memory/note-5.md", "zebracorn edit before the kill")
    script = KILLER.format(module=module, function=function, after=after)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(wiki.root), str(tmp_path)],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr.decode()[-500:]
    assert ranked(wiki) == rebuilt(wiki, tmp_path)  # the next retrieve repairs or resumes
    assert [p for p, _ in ranked(wiki)][:1] == ["memory/note-5.md"]
