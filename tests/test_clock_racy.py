"""Edits that keep a file's size and land in the mtime tick of the index's read of it ("racy
git"): the racy window must be measured from when the scan looked, not from when the
index was saved, or a slow update (embedding, a laptop suspended mid-way) loses the edit
for good.

A file system whose mtimes step by 2 s (FAT, exFAT; 1 s on HFS+ and ext3) is simulated
with os.utime: the edit is stamped with the tick its first version had.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.index import freshness, manifest, writing
from memwiki.index.indexer import Index
from memwiki.layout import RACY_NS
from memwiki.wiki import Wiki


def note(path: Path, word: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {path.stem}\ndescription: a note\n---\n\nIt is {word}.\n")


def index_of(wiki: Wiki, home: Path) -> Index:
    cfg = load({"wiki": str(wiki.root)}, environ={"HOME": str(home), "MEMWIKI_EMBED": "hash"})
    return Index(Wiki.open(wiki.root, cfg), cfg, notify=lambda m: None)


def edit_in_the_tick_then_wait(monkeypatch, path: Path, tick: int) -> None:
    """Make the next manifest save slow, with the file edited in its tick first: the save
    comes more than the racy window after the tick, as after a long embedding."""
    save = manifest.save

    def slow_save(*args, **kwargs):
        if path.read_text().endswith("walrus.\n"):
            note(path, "narwal")  # the same size
            os.utime(path, ns=(tick, tick))
        while time.time_ns() < tick + RACY_NS + 100_000_000:
            time.sleep(0.02)
        return save(*args, **kwargs)

    monkeypatch.setattr(manifest, "save", slow_save)


def found(wiki: Wiki, home: Path, word: str) -> list[str]:
    cfg = load({"wiki": str(wiki.root)}, environ={"HOME": str(home), "MEMWIKI_EMBED": "hash"})
    return Wiki.open(wiki.root, cfg).retrieve(word, mode="bm25").paths()


@pytest.mark.parametrize("full", [False, True], ids=["update", "full-build"])
def test_an_edit_in_the_tick_of_a_slow_updates_read_is_seen_next_time(
    wiki, tmp_path, monkeypatch, full
):
    note(wiki.root / "memory/other.md", "elsewhere")
    index_of(wiki, tmp_path).update(need_vectors=False)
    path = wiki.root / "memory/alpha.md"
    note(path, "walrus")
    tick = time.time_ns() - 1_500_000_000  # written in a 2 s tick that began 1.5 s ago
    os.utime(path, ns=(tick, tick))
    edit_in_the_tick_then_wait(monkeypatch, path, tick)
    index_of(wiki, tmp_path).update(full=full, need_vectors=False)
    monkeypatch.undo()
    assert found(wiki, tmp_path, "walrus") == []
    assert found(wiki, tmp_path, "narwal") == ["memory/alpha.md"]


def test_an_update_of_named_files_keeps_the_racy_window_of_the_others(wiki, tmp_path):
    # The forked scan's early update (forkscan.early) re-reads one file; the racy file it
    # did not look at must still be read by the next scan.
    path = wiki.root / "memory/alpha.md"
    note(path, "walrus")
    note(wiki.root / "memory/beta.md", "first")
    tick = time.time_ns() - 1_500_000_000
    os.utime(path, ns=(tick, tick))
    index = index_of(wiki, tmp_path)
    index.update(need_vectors=False)
    note(path, "narwal")
    os.utime(path, ns=(tick, tick))  # the same tick, the same size: only a read tells
    while time.time_ns() < tick + RACY_NS + 100_000_000:
        time.sleep(0.02)
    note(wiki.root / "memory/beta.md", "again")
    state = manifest.load(index.state_path)
    assert state is not None
    changes, stats = freshness.scan_paths(wiki.root, state, ["memory/beta.md"])
    assert changes.changed == ["memory/beta.md"]
    with index.lock():
        writing.apply(index, state, changes, stats, need_vectors=False)
    assert found(wiki, tmp_path, "narwal") == ["memory/alpha.md"]


def test_lints_link_cache_reads_again_a_note_edited_in_the_tick_of_a_slow_run(wiki, monkeypatch):
    from memwiki import links

    path = wiki.root / "memory/alpha.md"
    path.write_text("---\nname: alpha\ndescription: a note\n---\n\nSee [[walrus]].\n")
    tick = time.time_ns() - 1_500_000_000
    os.utime(path, ns=(tick, tick))
    save = links.LinkCache.save

    def slow_save(self, notes):
        path.write_text(path.read_text().replace("walrus", "narwal"))  # the same size
        os.utime(path, ns=(tick, tick))
        while time.time_ns() < tick + RACY_NS + 100_000_000:
            time.sleep(0.02)
        save(self, notes)

    monkeypatch.setattr(links.LinkCache, "save", slow_save)
    links.LinkIndex(wiki)
    monkeypatch.undo()
    found = links.LinkIndex(wiki).links["memory/alpha.md"]
    assert [link.name for link in found] == ["narwal"]


def test_files_written_just_before_a_build_leave_the_racy_window_once_read_again(
    wiki, tmp_path, monkeypatch
):
    # A clone or a checkout writes every file a moment before the build reads them: all in
    # the build's racy window. The first retrieve that reads them again, unchanged, moves
    # the window past them; they were read again by every retrieve until the next edit.
    for n in range(writing.SETTLE_MIN + 6):
        note(wiki.root / f"memory/n{n}.md", f"word{n}")
    index_of(wiki, tmp_path).update(need_vectors=False)
    time.sleep(RACY_NS / 1e9 + 0.1)
    read: list[str] = []
    real = freshness.file_sha256
    monkeypatch.setattr(freshness, "file_sha256", lambda p: read.append(p.name) or real(p))
    assert found(wiki, tmp_path, "word3") == ["memory/n3.md"]
    assert len(read) == writing.SETTLE_MIN + 6  # read again, found unchanged
    read.clear()
    assert found(wiki, tmp_path, "word3") == ["memory/n3.md"]
    assert read == []
    note(wiki.root / "memory/n5.md", "edited")  # and an edit is still seen
    assert found(wiki, tmp_path, "edited") == ["memory/n5.md"] and read == ["n5.md"]


def test_a_same_size_edit_whose_old_mtime_is_put_back_is_seen(wiki, tmp_path):
    # `touch -r`, `touch -d`, `cp -p`, an archive or a deploy that stamps one fixed time:
    # size and mtime as the index knows them, long before its window; the ctime, which
    # no one can set, tells.
    path = wiki.root / "memory/version.md"
    note(path, "v1.2.3")
    old = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(old, old))
    assert found(wiki, tmp_path, "v1.2.3") == ["memory/version.md"]
    note(path, "v1.2.4")
    os.utime(path, ns=(old, old))
    assert found(wiki, tmp_path, "v1.2.4") == ["memory/version.md"]
    assert found(wiki, tmp_path, "v1.2.3") == []
