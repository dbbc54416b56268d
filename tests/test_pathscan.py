"""Where the scan child looks first (index/pathscan.py, FileView.recent, Base.recent).

The bug it prevents: at 50,000 files the walk met an edited file at a random point of the
directory order, so the parent had usually searched the stale index to the end before it
heard of the edit, and searched again: an edit cost a second search at 50k and not at 2k.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.index import columns, forkscan, pathscan
from memwiki.index.indexer import Index
from memwiki.wiki import Wiki


def write(root: Path, rel: str, text: str, mtime: float | None = None) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {path.stem}\ndescription: Notes on {text}\n---\n# {text}\n\n{text} body.\n",
        encoding="utf-8",
    )
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def built(tmp_path: Path, n: int = 40) -> tuple[Wiki, Index]:
    """A wiki whose files have distinct mtimes, note-i older than note-(i+1), all indexed."""
    wiki, _ = Wiki.init(tmp_path / "w")
    old = time.time() - 10_000
    for i in range(n):
        write(wiki.root, f"memory/note-{i:02d}.md", f"topic {i}", mtime=old + i)
    cfg = load({"wiki": str(wiki.root)}, environ={"HOME": str(tmp_path)})
    index = Index(wiki, cfg, notify=lambda m: None)
    index.update(full=True, need_vectors=False)
    return wiki, index


def state_of(index: Index):
    state, problem = index.committed_state()
    assert problem is None and state is not None
    return state


def test_a_base_lists_its_newest_files_first(tmp_path) -> None:
    _, index = built(tmp_path)
    files = state_of(index).files
    assert files.recent(5) == [f"memory/note-{i:02d}.md" for i in (39, 38, 37, 36, 35)]
    assert len(files.recent(100)) == columns.RECENT  # a base keeps only so many


def test_the_changes_since_the_base_come_first_and_deleted_files_never(tmp_path) -> None:
    wiki, index = built(tmp_path)
    write(wiki.root, "memory/note-03.md", "edited now")
    (wiki.root / "memory/note-39.md").unlink()
    index.update(need_vectors=False)
    files = state_of(index).files
    assert files.delta, "the update appended to the base (a compaction would hide this case)"
    recent = files.recent(4)
    assert recent[0] == "memory/note-03.md"
    assert "memory/note-39.md" not in recent
    assert recent[1:] == ["memory/note-38.md", "memory/note-37.md", "memory/note-36.md"]


def test_a_base_without_the_list_or_with_a_damaged_one_still_answers(tmp_path) -> None:
    wiki, index = built(tmp_path)
    write(wiki.root, "memory/note-07.md", "edited now")
    index.update(need_vectors=False)
    files = state_of(index).files
    files.base.recent = []  # written before the list existed
    assert files.recent(8) == ["memory/note-07.md"]
    files.base.recent = [10_000, -1, 2]  # out of range: skipped, never raised
    assert files.recent(8) == ["memory/note-07.md", "memory/note-02.md"]


def test_recent_change_names_an_edited_recent_file_and_nothing_else(tmp_path) -> None:
    wiki, index = built(tmp_path)
    state = state_of(index)
    assert pathscan.recent_change(wiki.root, state) is None  # nothing changed
    write(wiki.root, "memory/note-01.md", "old file edited")  # not among the recent ones
    assert pathscan.recent_change(wiki.root, state) is None  # the walk finds it
    write(wiki.root, "memory/note-38.md", "recent file edited")
    assert pathscan.recent_change(wiki.root, state) == "memory/note-38.md"


def test_a_changed_stat_with_an_old_mtime_is_left_to_the_walk(tmp_path) -> None:
    wiki, index = built(tmp_path)
    state = state_of(index)
    entry = state.files["memory/note-39.md"]
    # a copy that keeps its times: the walk's own hint skips it too (walk.Watch)
    write(wiki.root, "memory/note-39.md", "copied back", mtime=entry.mtime_ns / 1e9)
    assert pathscan.recent_change(wiki.root, state) is None


@pytest.mark.skipif(sys.platform != "linux", reason="the forked scan is Linux-only")
def test_the_child_names_the_recent_file_whatever_else_the_walk_meets(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)
    wiki, index = built(tmp_path)
    # the file the walk meets last (directory order is the file system's): without the
    # look at the recent files first, the walk names another changed file before it
    target = f"memory/{os.listdir(wiki.root / 'memory')[-1]}"
    write(wiki.root, target, "worked on")
    index.update(need_vectors=False)  # the target is now the file modified last
    time.sleep(0.01)
    for i in range(40):  # every file changed: the walk names the first it meets
        write(wiki.root, f"memory/note-{i:02d}.md", f"changed {i}")
    snap = index.snapshot(need_vectors=False, speculate=True)
    pending = snap.pending_scan
    assert pending is not None
    until = time.monotonic() + 10
    while not pending.announced() and time.monotonic() < until:
        time.sleep(0.005)
    assert pending.hint == target
    fresh = forkscan.confirm(index, snap)  # the findings still bring in every change
    for i in range(40):
        rel = f"memory/note-{i:02d}.md"
        assert fresh.state.files[rel].mtime_ns == os.stat(wiki.root / rel).st_mtime_ns
    fresh.close()
