"""Item vectors: memory-mapped float32 segments beside the index, written as an update needs."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from .embedding import embed_text_of, embed_with_progress
from .embedding_cache import EmbeddingCache, save_array, sound_rows

# Rows multiplied at a time by a search (24 MB at 384 dims). After each block the pages
# are given back (madvise DONTNEED): the file stays in the OS page cache, but a 50k-file
# wiki's 380 MB matrix no longer counts whole in the process's resident memory.
CHUNK_ROWS = 16_384


def load_matrix(source, rows: int, dim: int) -> np.ndarray:
    """Map the vector matrix read-only (a path or an open binary file); ValueError on a wrong shape.

    Memory-mapped, so a large wiki's matrix costs only the pages a search touches, and an
    already open file keeps answering after a writer has removed its name.
    """
    fh = open(source, "rb") if isinstance(source, str | Path) else source  # noqa: SIM115
    try:
        fh.seek(0)
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        if shape != (rows, dim) or dtype != np.float32 or fortran:
            raise ValueError(f"vector matrix has shape {shape}, expected {(rows, dim)}")
        if rows == 0:
            return np.zeros((0, dim), dtype=np.float32)
        mapped = np.memmap(fh, dtype=np.float32, mode="r", offset=fh.tell(), shape=shape)
        return mapped.view(np.ndarray)
    finally:
        if fh is not source:
            fh.close()


def save_matrix(path: Path, matrix: np.ndarray) -> None:
    """Write the matrix atomically (temp file, fsync, rename).

    Without the directory's fsync: only the `state.pkl` written next in the same
    directory names the segment, and its directory fsync makes both names durable.
    """
    from ..fsutil import atomic_write

    with atomic_write(path, sync_dir=False) as fh:
        save_array(fh, np.ascontiguousarray(matrix, dtype=np.float32))


def best_rows(scores: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The n highest finite scores as (row, score), best first (ties keep row order)."""
    n = min(n, scores.shape[0])
    if n <= 0:
        return []
    idx = np.argpartition(-scores, n - 1)[:n]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return [(int(i), float(scores[i])) for i in idx if np.isfinite(scores[i])]


class SegmentedMatrix:
    """The live rows of several memory-mapped vector segments, as one read-only matrix.

    `matrix @ query` scores every physical slot segment by segment and keeps the live
    ones, in order: row n is state.rows[n]. Indexing gathers rows without concatenating
    the segments.
    """

    def __init__(self, parts: list[np.ndarray], live: np.ndarray | None, keys: list | None = None):
        self.parts = parts
        self.live = live
        self.keys = keys or [None] * len(parts)  # the segments' files (vector_products)
        self.offsets = np.cumsum([0] + [p.shape[0] for p in parts])
        rows = int(self.offsets[-1]) if live is None else len(live)
        self.shape = (rows, parts[0].shape[1] if parts else 0)
        self.dtype = np.dtype(np.float32)

    def __len__(self) -> int:
        return self.shape[0]

    def __matmul__(self, query: np.ndarray) -> np.ndarray:
        from .vector_products import product

        scores = np.concatenate(
            [product(p, k, query, _product) for p, k in zip(self.parts, self.keys, strict=True)]
        )
        return scores if self.live is None else scores[self.live]

    def physical(self, slots: np.ndarray) -> np.ndarray:
        """The vectors of physical slots (an int array), in that order."""
        out = np.zeros((len(slots), self.shape[1]), dtype=np.float32)
        for n, part in enumerate(self.parts):
            lo, hi = self.offsets[n], self.offsets[n + 1]
            inside = (slots >= lo) & (slots < hi)
            if inside.any():
                out[inside] = part[slots[inside] - lo]
        return out

    def __getitem__(self, index):
        idx = np.arange(self.shape[0])[index]
        slots = idx if self.live is None else self.live[idx]
        rows = self.physical(np.atleast_1d(slots).astype(np.int64))
        return rows[0] if np.ndim(slots) == 0 else rows

    def __array__(self, dtype=None, copy=None):
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)


def dot_rows(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row's dot product with query, bit for bit the same wherever the row is.

    Not `rows @ query`: BLAS computes a row's product with other instructions depending on
    where the row falls in its block of rows and how many rows the matrix has, so the same
    vector scored 4 different float32 values in matrices of 1-1,000 rows, and an index
    after edits (rows in several segments, dead rows between them) ranked two exactly
    tied files differently from a rebuild (tests/test_index_segments.py). einsum's loop
    does the same sums for every row, in every alignment, as fast (16 ms for 250,000 x
    384 against 16.6 for BLAS, docs/retrieval.md).
    """
    return np.einsum("ij,j->i", rows, query, optimize=False)


def product(matrix, query: np.ndarray) -> np.ndarray:
    """matrix @ query for a mapped array or a SegmentedMatrix, by dot_rows."""
    if isinstance(matrix, SegmentedMatrix):
        return matrix @ query
    return _product(matrix, query)


def _product(part: np.ndarray, query: np.ndarray) -> np.ndarray:
    """dot_rows(part, query) block by block, each block's mapped pages released after use."""
    query = np.asarray(query, dtype=part.dtype)
    if part.shape[0] <= CHUNK_ROWS:
        return dot_rows(part, query)
    out = np.empty(part.shape[0], dtype=part.dtype)
    for lo in range(0, part.shape[0], CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, part.shape[0])
        out[lo:hi] = dot_rows(part[lo:hi], query)
        _release(part, lo, hi)
    return out


def _release(part: np.ndarray, lo: int, hi: int) -> None:
    """Drop rows lo:hi of a read-only mapped matrix from this process's resident pages."""
    import mmap

    memmap = part.base
    mm = getattr(memmap, "_mmap", None)
    if not isinstance(memmap, np.memmap) or mm is None or not hasattr(mmap, "MADV_DONTNEED"):
        return
    row = part.shape[1] * part.itemsize
    first = memmap.offset % mmap.ALLOCATIONGRANULARITY  # where the data starts in the map
    page = mmap.PAGESIZE
    start = -(-(first + lo * row) // page) * page
    end = (first + hi * row) // page * page
    if end > start:
        with contextlib.suppress(OSError, ValueError):  # only a memory saving
            mm.madvise(mmap.MADV_DONTNEED, start, end - start)


def open_matrix(directory: Path, state, sources=None):
    """The vectors of state.rows: one mapped array, or a SegmentedMatrix over the segments.

    sources: the segment files already open (Snapshot.open), else they are opened here.
    ValueError when a segment has the wrong shape.
    """
    dim = state.embedder["dim"]
    sources = sources or [directory / name for name, _ in state.segments]
    parts = [
        load_matrix(src, rows, dim) for src, (_, rows) in zip(sources, state.segments, strict=True)
    ]
    if sum(rows for _, rows in state.segments) != state.physical_rows:
        raise ValueError("vector segments do not cover the manifest's rows")
    if len(parts) == 1 and not state.dead and len(parts[0]) <= CHUNK_ROWS:
        return parts[0]
    live = None
    if state.dead:
        keep = np.ones(state.physical_rows, dtype=bool)
        keep[np.fromiter(state.dead, dtype=np.int64, count=len(state.dead))] = False
        live = np.flatnonzero(keep)
    from .vector_products import identity

    return SegmentedMatrix(parts, live, [identity(src) for src in sources])


def damaged_rows(matrix, state) -> int:
    """How many rows of state that have a vector are not unit vectors (doctor's check).

    Reads the whole matrix block by block: for `memwiki doctor`, not for a query.
    """
    skip = state.unembedded
    bad = 0
    for lo in range(0, len(matrix), CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, len(matrix))
        unsound = np.flatnonzero(~sound_rows(np.asarray(matrix[lo:hi]))) + lo
        bad += sum(1 for n in unsound.tolist() if n not in skip)
    return bad


def old_vectors(directory: Path, old, key: dict) -> SegmentedMatrix | None:
    """old's vectors as one SegmentedMatrix, or None when it has none of this model (or they
    cannot be read): then an update cannot append to them."""
    if old is None or not old.segments or old.embedder != key:
        return None
    try:
        matrix = open_matrix(directory, old)
    except (OSError, ValueError):
        return None
    return matrix if isinstance(matrix, SegmentedMatrix) else SegmentedMatrix([matrix], None)


class VectorBlock:
    """The vectors an update writes (plan.rows, in order), computed before anything is written."""

    def __init__(self, block: np.ndarray, missing: set[int], embedded: int, old_matrix, cache):
        self.block, self.missing, self.embedded = block, missing, embedded
        self.old_matrix, self.cache = old_matrix, cache


def vector_block(
    directory: Path, root: Path, old, plan, items, embedder, key: dict, notify=None, held=False
) -> VectorBlock:
    """The vectors of plan.rows: from the old segments (kept or moved text), the embedding
    cache, or the embedder; the physical slots left without one are in `missing`.

    held: old's matrix as old_vectors() opened it (False: open it here)."""
    old_matrix = old_vectors(directory, old, key) if held is False else held
    if old_matrix is None and not plan.compact:
        raise ValueError("an appended segment needs the old vectors")
    rows = plan.rows
    block = np.zeros((len(rows), key["dim"]), dtype=np.float32)
    copied = sorted(plan.source.items()) if old_matrix is not None else []
    damaged: set[int] = set()
    if copied and old_matrix is not None:
        # Kept rows are copied in one numpy operation (a compaction runs on every row).
        at = np.asarray([n for n, _ in copied], dtype=np.int64)
        block[at] = old_matrix.physical(np.asarray([s for _, s in copied], dtype=np.int64))
        # A segment zeroed or overwritten behind a sound header: its rows are embedded
        # again, not copied on (so `reindex --full` repairs it, docs/retrieval.md).
        damaged = set(at[~sound_rows(block)[at]].tolist())  # the block in place: no copy
        block[sorted(damaged)] = 0.0
    todo = [
        n for n in range(len(rows)) if n not in plan.source or old_matrix is None or n in damaged
    ]
    known: dict[str, np.ndarray] = {}
    if old_matrix is not None and todo:
        known = _held_vectors(old, {rows[n].sha for n in todo}, old_matrix)
    cache = EmbeddingCache(directory / "cache", key)
    want = [rows[n].sha for n in todo]
    known.update(cache.lookup([s for s in want if s not in known]))
    texts: dict[str, str] = {}
    if embedder is not None:
        by_sha = {it.sha: it.embed_text for it in items}
        for n in todo:
            row = rows[n]
            if row.sha not in known and row.sha not in texts:
                texts[row.sha] = by_sha.get(row.sha) or embed_text_of(root, row)
        if texts:
            shas = list(texts)

            def keep(positions: list[int], vecs: np.ndarray) -> None:  # on Ctrl-C
                cache.add([shas[i] for i in positions], vecs)

            fresh = embed_with_progress(embedder, list(texts.values()), notify, keep)
            known.update(zip(texts, fresh, strict=True))
    missing = set(plan.unembedded)
    for n in todo:
        vec = known.get(rows[n].sha)
        if vec is None:
            missing.add(plan.first_slot + n)
        else:
            block[n] = vec
    return VectorBlock(block, missing, len(texts), old_matrix, cache)


def write_vectors(
    directory: Path, root: Path, old, new, plan, items, embedder, key: dict, notify=None,
    computed: VectorBlock | None = None,
) -> tuple[int, object]:  # fmt: skip
    """Write the vectors of plan: a new segment of the written rows, or one compacted file.

    computed: vector_block's result, when the update was prepared before (index/deferred.py).
    Returns how many texts were embedded, and the new matrix (so a reader need
    not open it again). Rows left without a vector (no embedder in this process) are
    recorded in new.unembedded_slots and masked out of vector search.
    """
    from .segments import MAX_SEGMENTS

    got = computed or vector_block(directory, root, old, plan, items, embedder, key, notify)
    block, rows, dim = got.block, plan.rows, key["dim"]
    if got.old_matrix is not None:
        _cache_departed(got.cache, old, plan, got.old_matrix)
    elif old is not None and old.segments and old.embedder not in (None, key):
        _cache_other_model(directory, old)
    new.embedder = key
    new.unembedded_slots = set(got.missing)
    new.changed()
    name = f"vectors-{new.generation}.npy"
    if plan.compact:
        save_matrix(directory / name, block)
        new.segments = [(name, len(rows))]
    else:
        new.segments = list(old.segments)
        if len(new.segments) > MAX_SEGMENTS:  # merge the appended segments into one
            tail = [directory / f for f, _ in new.segments[1:]]
            parts = [
                load_matrix(p, count, dim)
                for p, (_, count) in zip(tail, new.segments[1:], strict=True)
            ]
            block = np.concatenate([*parts, block])
            new.segments = new.segments[:1]
        if len(block):
            save_matrix(directory / name, block)
            new.segments.append((name, len(block)))
    return got.embedded, block if plan.compact else open_matrix(directory, new)


def appended_matrix(old_matrix, new, block: np.ndarray) -> SegmentedMatrix:
    """The matrix of new.rows before new's segment is written: old's segments and the block."""
    keep = np.ones(new.physical_rows, dtype=bool)
    if new.dead:
        keep[np.fromiter(new.dead, dtype=np.int64, count=len(new.dead))] = False
    return SegmentedMatrix(
        [*old_matrix.parts, block], np.flatnonzero(keep), [*old_matrix.keys, None]
    )


def _held_vectors(old, wanted: set[str], old_matrix) -> dict[str, np.ndarray]:
    """Vectors the old index holds for these texts: a rename, another track, a copied section.

    Found through the manifest's sha index, so an edit looks up its own rows' texts only.
    """
    rows = old.rows
    found: dict[str, int] = {}
    for sha in wanted:
        slot = rows.slot_of_sha(sha, old.unembedded_slots)
        if slot is not None:
            found[sha] = slot
    if not found:
        return {}
    vecs = old_matrix.physical(np.asarray(list(found.values()), dtype=np.int64))
    return {sha: vec for sha, vec, ok in zip(found, vecs, sound_rows(vecs), strict=True) if ok}


def _cache_other_model(directory: Path, old) -> None:
    """The vectors of the model switched away from go to its cache (at most CACHE_LIMIT):
    switching back takes them instead of embedding the wiki again. Damaged ones are not
    kept; the new model's vectors are written either way."""
    from .embedding_cache import CACHE_LIMIT

    try:
        matrix = open_matrix(directory, old)
        rows, skip = old.rows, old.unembedded
        live = [n for n in range(len(rows)) if n not in skip][:CACHE_LIMIT]
        if live:
            vecs = np.asarray(matrix[np.asarray(live, dtype=np.int64)], dtype=np.float32)
            EmbeddingCache(directory / "cache", old.embedder).add([rows[n].sha for n in live], vecs)
    except (OSError, ValueError):
        return


def _cache_departed(cache, old, plan, old_matrix) -> None:
    """Vectors of rows that left the index go to the cache: their text may come back."""
    staying = {r.sha for r in plan.rows}
    rows = old.rows
    left = [
        s
        for s in plan.departed
        if s not in old.unembedded_slots and rows.at_slot(s).sha not in staying
    ]
    if left:
        cache.add(
            [rows.at_slot(s).sha for s in left],
            old_matrix.physical(np.asarray(left, dtype=np.int64)),
        )
