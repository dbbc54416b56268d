"""Files whose mtime is ahead of the clock (an archive or a copy from a device whose clock
runs ahead, `touch -d tomorrow`): hashed once, not on every scan until that time comes,
while a file system whose own clock runs ahead keeps its racy edits seen."""

from __future__ import annotations

import os
import time

from test_clock_racy import index_of, note

from memwiki.index import freshness, manifest

DAY = 86_400 * 10**9


def hashed(monkeypatch) -> list[str]:
    read: list[str] = []
    real = freshness.file_sha256
    monkeypatch.setattr(freshness, "file_sha256", lambda p: read.append(p.name) or real(p))
    return read


def test_files_dated_tomorrow_are_hashed_once_not_on_every_scan(wiki, tmp_path, monkeypatch):
    tomorrow = time.time_ns() + DAY
    for n in range(20):
        path = wiki.root / f"memory/n{n}.md"
        note(path, f"word{n}")
        os.utime(path, ns=(tomorrow, tomorrow))
    time.sleep(2.1)  # the copy is older than the racy window of the scan that indexes it
    index = index_of(wiki, tmp_path)
    index.update(need_vectors=False)
    read = hashed(monkeypatch)
    changes, _ = freshness.scan(wiki.root, manifest.load(index.state_path))
    assert not changes and read == []
    # an edit is seen (a normal write stamps the clock's time)
    note(wiki.root / "memory/n3.md", "edited")
    changes, _ = freshness.scan(wiki.root, manifest.load(index.state_path))
    assert changes.changed == ["memory/n3.md"] and read == ["n3.md"]


def test_a_share_whose_clock_runs_ahead_keeps_its_racy_edits_seen(wiki, tmp_path):
    # A network file system stamps mtime and ctime with its own clock, here 30 s ahead: an
    # edit of the same size within the file's tick is told only by reading it again.
    path = wiki.root / "memory/alpha.md"
    note(path, "walrus")
    ahead = time.time_ns() + 30 * 10**9
    os.utime(path, ns=(ahead, ahead))  # the ctime is now: as recent as a share's write
    index = index_of(wiki, tmp_path)
    index.update(need_vectors=False)
    note(path, "narwal")
    os.utime(path, ns=(ahead, ahead))
    changes, _ = freshness.scan(wiki.root, manifest.load(index.state_path))
    assert changes.changed == ["memory/alpha.md"]
