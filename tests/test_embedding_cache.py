"""The embedding cache's chunks: what a crash can leave of them is lost cache, never a wrong
vector (its writes skip the folder's fsync: fsutil.atomic_write, sync_dir=False)."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np

from memwiki.index.embedding_cache import MAX_CHUNKS, EmbeddingCache

KEY = {"provider": "hash", "model": "test", "dim": 8}


def shas(n: int, salt: str) -> list[str]:
    return [hashlib.sha256(f"{salt}-{i}".encode()).hexdigest() for i in range(n)]


def vectors(n: int, seed: int) -> np.ndarray:
    """Unit rows, as every embedder writes them (the cache refuses any other row)."""
    raw = np.random.default_rng(seed).standard_normal((n, 8))
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def test_chunks_round_trip_and_compact(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache", KEY)
    written = {}
    for i in range(MAX_CHUNKS + 3):  # past the compaction
        keys, vecs = shas(3, f"c{i}"), vectors(3, i)
        cache.add(keys, vecs)
        written.update(zip(keys, vecs, strict=True))
    found = cache.lookup(list(written))
    assert found.keys() == written.keys()
    assert all(np.array_equal(found[k], v) for k, v in written.items())
    assert len(list(cache.directory.glob("chunk-*.keys.npy"))) < MAX_CHUNKS


def test_what_a_crash_can_leave_is_lost_cache_not_a_wrong_vector(tmp_path):
    """A chunk whose vectors' name did not survive, or whose files are cut short or zeroed:
    lookup skips it and finds the rest; later chunks are written as usual."""
    folder = tmp_path / "cache"
    cache = EmbeddingCache(folder, KEY)
    good, lost, cut, zeroed = (shas(4, s) for s in ("good", "lost", "cut", "zero"))
    for n, keys in enumerate((good, lost, cut, zeroed)):
        cache.add(keys, vectors(4, n))
    chunks = sorted(cache.directory.glob("chunk-*.keys.npy"))
    vecs_of = [c.with_name(c.name.replace(".keys.", ".vecs.")) for c in chunks]
    vecs_of[1].unlink()  # the keys file's rename survived, the vectors' did not
    vecs_of[2].write_bytes(vecs_of[2].read_bytes()[:100])
    chunks[3].write_bytes(b"\0" * chunks[3].stat().st_size)
    found = cache.lookup(good + lost + cut + zeroed)
    assert set(found) == set(good)
    assert np.array_equal(np.stack([found[k] for k in good]), vectors(4, 0))
    again = shas(2, "again")
    cache.add(again, vectors(2, 9))
    assert set(cache.lookup(again + lost)) == set(again)


def test_compaction_merges_the_newest_chunks_and_changes_no_lookup(tmp_path):
    """With a large chunk and many small ones, a compaction rewrites only the small ones;
    every lookup (a text cached twice with different vectors: the newer one) is the same
    before and after, however many compactions run."""
    folder = tmp_path / "cache"
    cache = EmbeddingCache(folder, KEY)
    big = shas(500, "big")
    cache.add(big, vectors(500, 1))
    big_file = sorted(cache.directory.glob("chunk-*.keys.npy"))[0]
    before = big_file.stat()
    expected = dict(zip(big, vectors(500, 1), strict=True))
    rng = np.random.default_rng(5)
    for i in range(3 * MAX_CHUNKS):
        # some texts again, with other vectors (a newer embedding of the same text)
        keys = shas(2, f"s{i}") + [big[int(rng.integers(500))]]
        vecs = vectors(3, 100 + i)
        cache.add(keys, vecs)
        expected.update(zip(keys, vecs, strict=True))
        if i % 7 == 0 or i > 3 * MAX_CHUNKS - 3:
            found = cache.lookup(list(expected))
            assert found.keys() == expected.keys()
            assert all(np.array_equal(found[k], v) for k, v in expected.items()), i
    assert big_file.exists() and big_file.stat().st_ino == before.st_ino  # never rewritten
    assert len(list(cache.directory.glob("chunk-*.keys.npy"))) <= MAX_CHUNKS


def test_past_the_limit_everything_is_merged_and_the_newest_kept(tmp_path, monkeypatch):
    from memwiki.index import embedding_cache

    monkeypatch.setattr(embedding_cache, "CACHE_LIMIT", 40)  # a small cache, same code
    cache = EmbeddingCache(tmp_path / "cache", KEY)
    added: list[str] = []
    for i in range(MAX_CHUNKS + 1):
        keys = shas(2, f"k{i}")
        cache.add(keys, vectors(2, i))
        added += keys
    chunks = sorted(cache.directory.glob("chunk-*.keys.npy"))
    assert len(chunks) == 1
    assert set(cache.lookup(added)) == set(added[-40:])


KILLER = """
import os, signal, sys
import numpy as np
from memwiki import fsutil
from memwiki.index.embedding_cache import EmbeddingCache
real = fsutil.atomic_write
def die_after_the_vectors(path, sync_dir=True):
    if path.name.endswith(".keys.npy"):
        os.kill(os.getpid(), signal.SIGKILL)  # the vectors' file is renamed, the keys' not
    return real(path, sync_dir)
fsutil.atomic_write = die_after_the_vectors
cache = EmbeddingCache(__import__("pathlib").Path(sys.argv[1]), {"provider": "hash", "model": "test", "dim": 8})
cache.add(["%064d" % 7], np.ones((1, 8), dtype=np.float32))
"""


def test_a_process_killed_between_a_chunks_two_files_loses_only_that_chunk(tmp_path):
    """kill -9 after a chunk's vectors are renamed and before its keys are: the chunk is
    not there, the cache before it is, and the next chunk (the same number) is written."""
    import os
    import signal
    import subprocess
    import sys

    folder = tmp_path / "cache"
    cache = EmbeddingCache(folder, KEY)
    first = shas(3, "first")
    cache.add(first, vectors(3, 1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIKI_")}
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(folder)], env=env, timeout=60, capture_output=True
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert len(list(cache.directory.glob("chunk-*.vecs.npy"))) == 2  # the orphan vectors
    assert len(list(cache.directory.glob("chunk-*.keys.npy"))) == 1
    assert set(cache.lookup([*first, f"{7:064d}"])) == set(first)
    again = shas(2, "again")
    cache.add(again, vectors(2, 2))
    found = cache.lookup(first + again)
    assert set(found) == set(first + again)
    assert np.array_equal(np.stack([found[k] for k in again]), vectors(2, 2))


def test_each_model_keeps_its_own_vectors_up_to_the_last_three(tmp_path):
    """Bug: the cache held one model's vectors, and the first vectors another model added
    emptied it, so switching the embedder back embedded everything again."""
    import time

    from memwiki.index.embedding_cache import MODELS_KEPT

    keys = [{"provider": "hash", "model": f"m{n}", "dim": 8} for n in range(MODELS_KEPT + 1)]
    texts = [shas(2, f"model{n}") for n in range(len(keys))]
    for n, key in enumerate(keys):
        EmbeddingCache(tmp_path / "cache", key).add(texts[n], vectors(2, n))
        time.sleep(0.01)  # folders are ranked by when they were last written
    for n, key in enumerate(keys):
        found = EmbeddingCache(tmp_path / "cache", key).lookup(texts[n])
        if n == 0:  # the oldest model beyond MODELS_KEPT is forgotten
            assert found == {}
        else:
            assert np.array_equal(np.stack([found[k] for k in texts[n]]), vectors(2, n))
        # one model's texts are never found under another model
        assert EmbeddingCache(tmp_path / "cache", key).lookup(texts[n - 1]) == {}
    assert len(list((tmp_path / "cache").glob("model-*"))) == MODELS_KEPT


def test_the_layout_before_model_folders_is_adopted(tmp_path):
    """Chunks written beside one model.json (the layout before per-model folders) are
    this model's cache when model.json names it, and removed when it names another."""
    import json

    folder = tmp_path / "cache"
    folder.mkdir()
    keys = shas(3, "legacy")
    np.save(folder / "chunk-00000000.vecs.npy", vectors(3, 4))
    np.save(folder / "chunk-00000000.keys.npy", np.array(keys, dtype="S64"))
    (folder / "model.json").write_text(json.dumps(KEY))
    other = EmbeddingCache(folder, {**KEY, "model": "other"})
    assert other.lookup(keys) == {}  # another model's: removed, never read as this one's
    assert not list(folder.glob("chunk-*")) and not (folder / "model.json").exists()
    np.save(folder / "chunk-00000000.vecs.npy", vectors(3, 4))
    np.save(folder / "chunk-00000000.keys.npy", np.array(keys, dtype="S64"))
    (folder / "model.json").write_text(json.dumps(KEY))
    found = EmbeddingCache(folder, KEY).lookup(keys)
    assert np.array_equal(np.stack([found[k] for k in keys]), vectors(3, 4))
    assert not list(folder.glob("chunk-*")) and not (folder / "model.json").exists()


def test_a_chunk_damaged_behind_a_sound_header_is_never_a_vector(tmp_path):
    """Bug: a chunk whose header survived but whose data did not (zeroed, overwritten,
    another width) was used as it was: NaN, zero or long rows were copied into the index
    as vectors, and a chunk of another width failed every later update (exit 70)."""
    key = {**KEY, "dim": 8}
    cache = EmbeddingCache(tmp_path / "cache", key)
    good, wide, nan, zero, long = (shas(2, s) for s in ("good", "wide", "nan", "zero", "long"))
    unit = vectors(2, 1)
    for keys in (good, wide, nan, zero, long):
        cache.add(keys, unit)
    chunks = sorted(cache.directory.glob("chunk-*.vecs.npy"))
    np.save(chunks[1], np.ones((2, 3), dtype=np.float32) / np.sqrt(3))
    np.save(chunks[2], np.full((2, 8), np.nan, dtype=np.float32))
    np.save(chunks[3], np.zeros((2, 8), dtype=np.float32))
    np.save(chunks[4], unit * 40)
    found = cache.lookup(good + wide + nan + zero + long)
    assert set(found) == set(good)
    for n in range(MAX_CHUNKS):  # past a compaction, which merges the damaged chunks too
        cache.add(shas(1, f"later{n}"), unit[:1])
    assert set(cache.lookup(good + wide + nan + zero + long)) == set(good)


def test_something_else_where_the_cache_belongs_is_cleared(tmp_path):
    """Bug: a file where the cache folder belongs (or a folder where a chunk belongs) failed
    every later update with exit 70 until the user deleted it by hand."""
    root = tmp_path / "cache"
    root.write_text("not a folder")
    cache = EmbeddingCache(root, KEY)
    assert cache.lookup(shas(1, "x")) == {}
    cache.add(shas(2, "a"), vectors(2, 1))
    assert set(cache.lookup(shas(2, "a"))) == set(shas(2, "a"))
    shutil.rmtree(cache.directory)
    cache.directory.write_text("not a folder either")
    cache.add(shas(2, "b"), vectors(2, 2))
    assert set(cache.lookup(shas(2, "b"))) == set(shas(2, "b"))
    (cache.directory / "chunk-00000001.keys.npy").mkdir()  # where the next chunk goes
    for n in range(MAX_CHUNKS + 1):  # and past a compaction
        cache.add(shas(1, f"c{n}"), vectors(1, n))
    found = cache.lookup(shas(2, "b") + shas(1, f"c{MAX_CHUNKS}"))
    assert set(found) == set(shas(2, "b") + shas(1, f"c{MAX_CHUNKS}"))
