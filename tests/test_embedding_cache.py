"""The embedding cache's chunks: what a crash can leave of them is lost cache, never a wrong
vector (its writes skip the folder's fsync: fsutil.atomic_write, sync_dir=False)."""

from __future__ import annotations

import hashlib

import numpy as np

from memwiki.index.embedding_cache import MAX_CHUNKS, EmbeddingCache

KEY = {"provider": "hash", "model": "test", "dim": 8}


def shas(n: int, salt: str) -> list[str]:
    return [hashlib.sha256(f"{salt}-{i}".encode()).hexdigest() for i in range(n)]


def vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)


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
    assert len(list((tmp_path / "cache").glob("chunk-*.keys.npy"))) < MAX_CHUNKS


def test_what_a_crash_can_leave_is_lost_cache_not_a_wrong_vector(tmp_path):
    """A chunk whose vectors' name did not survive, or whose files are cut short or zeroed:
    lookup skips it and finds the rest; later chunks are written as usual."""
    folder = tmp_path / "cache"
    cache = EmbeddingCache(folder, KEY)
    good, lost, cut, zeroed = (shas(4, s) for s in ("good", "lost", "cut", "zero"))
    for n, keys in enumerate((good, lost, cut, zeroed)):
        cache.add(keys, vectors(4, n))
    chunks = sorted(folder.glob("chunk-*.keys.npy"))
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
