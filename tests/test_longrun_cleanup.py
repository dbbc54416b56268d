"""Leftovers judged by their age are cleaned also when that age is negative (an mtime in the future).

A clock set back, a wiki or cache copied from a machine whose clock ran ahead, or `touch -d
tomorrow`: `now - mtime` is negative, never "older than the limit", and the leftover
stayed for ever (a killed write's temporary file in the wiki, a killed preparer's 90 MB
`.prepare-*` folder in the model cache).
"""

from __future__ import annotations

import os
import time

from memwiki.embed import prepared
from memwiki.git import repo as gitstore

DAY = 86400


def _date(path, offset_s: float) -> None:
    when = time.time() + offset_s
    os.utime(path, (when, when))


def test_a_killed_writes_temporary_file_dated_in_the_future_is_deleted_by_a_commit(wiki):
    stale = wiki.root / "memory" / ".note.md.ab12cd34.tmp"
    stale.write_text("half a fi")
    _date(stale, DAY)
    young = wiki.root / "memory" / ".other.md.ef56ab78.tmp"  # a write in flight: left alone
    young.write_text("being written")
    (wiki.root / "memory" / "note.md").write_text("---\ndescription: d\n---\n# Note\n")
    result = wiki.commit()
    assert result.created == ["memory/note.md"]
    assert not stale.exists()  # before: kept for ever
    assert young.exists()
    assert gitstore.STALE_TEMP_S < DAY


def test_a_dead_preparers_folder_dated_in_the_future_is_removed(tmp_path):
    cache = tmp_path / "models"
    abandoned = cache / ".prepare-k1ll3d"
    abandoned.mkdir(parents=True)
    (abandoned / "weights.bin").write_bytes(b"\0" * 4096)
    _date(abandoned, 30 * DAY)
    live = cache / ".prepare-l1ve"  # another preparer at work
    live.mkdir()
    prepared.remove_abandoned(cache)
    assert not abandoned.exists()  # before: kept for ever
    assert live.exists()
