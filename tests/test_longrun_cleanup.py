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
from memwiki.fsutil import STALE_TEMP_S

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
    assert STALE_TEMP_S < DAY


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


def test_a_killed_index_writers_temporary_files_go_with_the_next_update(tmp_path):
    # Before: a SIGKILLed update's `.vectors-N.npy.XXXXXXXX.tmp` (found by killing 150
    # commands at random moments: one in 150 left one) stayed in .memwiki/index for ever.
    from memwiki import RecallFile, Wiki, load_config

    wiki, _ = Wiki.init(tmp_path / "wiki", config=load_config({"embed": "hash"}))
    wiki.save(RecallFile("memory", "a", "A", body="# A\nkafka retry\n"))
    assert wiki.retrieve("kafka").results
    index = wiki.sidecar / "index"
    killed = index / ".vectors-7.npy.k1ll3d00.tmp"
    killed.write_bytes(b"\0" * 65536)
    _date(killed, -3600)
    ahead = index / ".state.pkl.fut0re00.tmp"
    ahead.write_bytes(b"\0")
    _date(ahead, DAY)
    live = index / ".manifest-9.bin.l1ve0000.tmp"  # a write in flight
    live.write_bytes(b"\0")
    wiki.save(RecallFile("memory", "a", "A", body="# A\nkafka lag\n"))
    assert wiki.retrieve("kafka lag").results  # an update of the index
    assert not killed.exists() and not ahead.exists()
    assert live.exists()


def test_a_killed_cache_writers_temporary_file_goes_with_the_next_compaction(tmp_path):
    import numpy as np

    from memwiki.index.embedding_cache import MAX_CHUNKS, EmbeddingCache

    cache = EmbeddingCache(tmp_path / "cache", {"provider": "hash", "model": "t", "dim": 4})
    cache.add(["0" * 64], np.array([[1.0, 0, 0, 0]], dtype=np.float32))
    killed = cache.directory / ".chunk-00000021.keys.npy.89a6rsa3.tmp"
    killed.write_bytes(b"\0" * 4096)
    _date(killed, -3600)
    for i in range(1, MAX_CHUNKS + 1):
        cache.add([f"{i:064d}"], np.array([[0, 1.0, 0, 0]], dtype=np.float32))
    assert not killed.exists()
    assert len(cache.lookup([f"{i:064d}" for i in range(MAX_CHUNKS + 1)])) == MAX_CHUNKS + 1
