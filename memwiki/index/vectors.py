"""Item vectors: the float32 matrix beside the index, and the embedding cache keyed by text sha256."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CACHE_LIMIT = 50_000  # vectors kept for texts no longer in the wiki
MAX_CHUNKS = 32


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
    """Write the matrix atomically (temp file, fsync, rename)."""
    from ..fsutil import atomic_write

    with atomic_write(path) as fh:
        np.save(fh, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)


class EmbeddingCache:
    """sha256 of an item's text -> its vector, for one {provider, model, dim}.

    The current matrix already holds the vectors of every item in the wiki; this
    cache keeps the ones that left it (an edit, a branch switch, a deleted file), so
    that text coming back is never embedded twice. It is a folder of small chunk
    files: an update appends one, and nothing is read unless a lookup misses.
    """

    def __init__(self, directory: Path, model_key: dict):
        self.directory = directory
        self.model_key = model_key
        self._loaded: dict[str, np.ndarray] | None = None

    def _chunks(self) -> list[Path]:
        return sorted(self.directory.glob("chunk-*.npz"))

    def _valid(self) -> bool:
        try:
            return json.loads((self.directory / "model.json").read_text()) == self.model_key
        except (OSError, ValueError):
            return False

    def _load(self) -> dict[str, np.ndarray]:
        if self._loaded is None:
            self._loaded = {}
            if self._valid():
                for chunk in self._chunks():
                    try:
                        with np.load(chunk, allow_pickle=False) as data:
                            for key, vec in zip(data["keys"], data["vecs"], strict=True):
                                self._loaded[str(key)] = vec
                    except Exception:  # a damaged chunk is only lost cache
                        continue
        return self._loaded

    def lookup(self, shas: list[str]) -> dict[str, np.ndarray]:
        """The cached vectors among shas."""
        if not shas:
            return {}
        vectors = self._load()
        return {s: vectors[s] for s in shas if s in vectors}

    def add(self, shas: list[str], vecs: np.ndarray) -> None:
        """Remember vectors in a new chunk file; compacts when chunks pile up."""
        if not shas:
            return
        from ..fsutil import atomic_write_bytes, atomic_write_text

        self.directory.mkdir(parents=True, exist_ok=True)
        if not self._valid():
            for chunk in self._chunks():
                chunk.unlink(missing_ok=True)
            atomic_write_text(self.directory / "model.json", json.dumps(self.model_key))
        chunks = self._chunks()
        seq = int(chunks[-1].stem.split("-")[1]) + 1 if chunks else 0
        atomic_write_bytes(self.directory / f"chunk-{seq:08d}.npz", _npz(shas, vecs))
        if self._loaded is not None:
            self._loaded.update(zip(shas, vecs, strict=True))
        if len(chunks) + 1 > MAX_CHUNKS:
            self._compact()

    def _compact(self) -> None:
        from ..fsutil import atomic_write_bytes

        self._loaded = None
        vectors = self._load()
        keys = list(vectors)[-CACHE_LIMIT:]
        old = self._chunks()
        seq = int(old[-1].stem.split("-")[1]) + 1
        vecs = np.stack([vectors[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)
        atomic_write_bytes(self.directory / f"chunk-{seq:08d}.npz", _npz(keys, vecs))
        for chunk in old:
            chunk.unlink(missing_ok=True)


def _npz(shas: list[str], vecs: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, keys=np.array(shas), vecs=np.asarray(vecs, dtype=np.float32))
    return buf.getvalue()


def top_n(
    matrix: np.ndarray, query: np.ndarray, n: int, mask: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """Rows with the highest cosine similarity to the (normalised) query: (row, score)."""
    if matrix.shape[0] == 0:
        return []
    scores = matrix @ query.astype(np.float32)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    n = min(n, scores.shape[0])
    idx = np.argpartition(-scores, n - 1)[:n]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return [(int(i), float(scores[i])) for i in idx if np.isfinite(scores[i])]


def fill_matrix(
    directory: Path,
    root: Path,
    old,
    new,
    added_rows,
    items,
    embedder,
    key: dict,
    keep=None,
    notify=None,
) -> tuple[int, np.ndarray]:
    """Write new.vectors_file: kept rows copied, the rest from the old matrix, the cache or the embedder.

    Returns how many texts were embedded, and the matrix (so a reader need not load it
    again). Rows left without a vector (no embedder in this process) are recorded in
    new.unembedded and masked out of vector search.
    """
    old_matrix = None
    if old is not None and old.vectors_file and old.embedder == key:
        try:
            old_matrix = load_matrix(directory / old.vectors_file, len(old.rows), key["dim"])
        except (OSError, ValueError):
            old_matrix = None
    matrix = np.zeros((len(new.rows), key["dim"]), dtype=np.float32)
    if keep is not None and old_matrix is not None:
        # Kept rows are copied in one numpy operation: this runs on every edit.
        matrix[: len(keep)] = old_matrix[np.asarray(keep, dtype=np.int64)]
        todo = set(added_rows) | {n for n, o in enumerate(keep) if o in old.unembedded}
    else:
        todo = set(range(len(new.rows)))
    known: dict[str, np.ndarray] = {}
    if old_matrix is not None and todo:
        # Text that moved (a rename, another track) keeps its vector.
        wanted = {new.rows[i].sha for i in todo}
        for i, r in enumerate(old.rows):
            if r.sha in wanted and i not in old.unembedded:
                known.setdefault(r.sha, old_matrix[i])
    cache = EmbeddingCache(directory / "cache", key)
    want = [i for i in sorted(todo) if new.rows[i].sha not in known]
    known.update(cache.lookup([new.rows[i].sha for i in want]))
    texts: dict[str, str] = {}
    if embedder is not None:
        by_sha = {it.sha: it.embed_text for it in items}
        for i in sorted(todo):
            sha = new.rows[i].sha
            if sha not in known and sha not in texts:
                texts[sha] = by_sha.get(sha) or embed_text_of(root, new.rows[i])
        if texts:
            fresh = embed_with_progress(embedder, list(texts.values()), notify)
            known.update(zip(texts, fresh, strict=True))
            cache.add(list(texts), fresh)
    missing: set[int] = set()
    for i in sorted(todo):
        vec = known.get(new.rows[i].sha)
        if vec is None:
            missing.add(i)
        else:
            matrix[i] = vec
    if old_matrix is not None and keep is not None:
        kept = set(keep)
        left = [i for i in range(len(old.rows)) if i not in kept and i not in old.unembedded]
        cache.add([old.rows[i].sha for i in left], old_matrix[left] if left else matrix[:0])
    new.embedder = key
    new.unembedded = missing
    new.vectors_file = f"vectors-{new.generation}.npy"
    save_matrix(directory / new.vectors_file, matrix)
    return len(texts), matrix


def embed_text_of(root: Path, row) -> str:
    """Re-create an item's embedding text from the file on disk."""
    from .chunker import Item

    lines = (root / row.path).read_text(encoding="utf-8").splitlines()
    text = "\n".join(lines[row.start_line - 1 : row.end_line]).strip()
    return Item(
        row.path,
        row.track,
        row.name,
        row.description,
        row.tags,
        row.heading,
        row.start_line,
        row.end_line,
        text,
    ).embed_text


EMBED_BATCH = 64


def prefill_cache(directory: Path, root: Path, state, embedder, key: dict, notify) -> int:
    """Embed every item of state that has no vector yet into the embedding cache.

    Runs without the writer lock (a background build): readers and writers go on, and
    the locked update that follows only copies vectors from the cache. Work is saved in
    slices, so a killed build loses at most one slice. Returns how many were embedded.
    """
    import hashlib
    import time

    reuse = bool(state.vectors_file) and state.embedder == key
    todo = sorted(state.unembedded) if reuse else range(len(state.rows))
    cache = EmbeddingCache(directory / "cache", key)
    shas = [state.rows[i].sha for i in todo]
    known = cache.lookup(shas)
    texts: dict[str, str] = {}
    for i in todo:
        row = state.rows[i]
        if row.sha in known or row.sha in texts:
            continue
        try:
            text = embed_text_of(root, row)
        except (OSError, UnicodeDecodeError):
            continue
        # The file may have changed since the state was written: keep only exact texts.
        if hashlib.sha256(text.encode("utf-8")).hexdigest() == row.sha:
            texts[row.sha] = text
    total = len(texts)
    if not total:
        return 0
    keys, values = list(texts), list(texts.values())
    step = max(EMBED_BATCH, total // 10)
    started = time.monotonic()
    notify(f"embedding {total} items in the background")
    for start in range(0, total, step):
        vecs = np.asarray(embedder.embed(values[start : start + step]), dtype=np.float32)
        cache.add(keys[start : start + step], vecs)
        done = min(total, start + step)
        rate = done / max(time.monotonic() - started, 1e-9)
        notify(
            f"embedding {done}/{total} items ({100 * done // total}%, {rate:.0f} items/s, "
            f"about {(total - done) / rate:.0f} s left)"
        )
    return total


PROGRESS_EVERY_S = 5.0


def embed_with_progress(embedder, texts: list[str], notify=None) -> np.ndarray:
    """Embed texts; large jobs report progress on stderr.

    A terminal gets a rich bar; anything else (a log, an agent's pipe) gets plain lines
    through notify, every 10% or every 5 seconds, whichever comes first, so that a
    long first build never looks like a hang. notify=None: silent.
    """
    import sys
    import time

    if len(texts) <= EMBED_BATCH or notify is None:
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    parts = []
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import Progress

        with Progress(transient=True, console=Console(file=sys.stderr)) as progress:
            task = progress.add_task("embedding", total=len(texts))
            for i in range(0, len(texts), EMBED_BATCH):
                parts.append(embedder.embed(texts[i : i + EMBED_BATCH]))
                progress.advance(task, len(parts[-1]))
        return np.concatenate(parts).astype(np.float32)
    total, done = len(texts), 0
    started = last_time = time.monotonic()
    last_share = 0
    notify(f"embedding {total} items")
    for i in range(0, total, EMBED_BATCH):
        parts.append(embedder.embed(texts[i : i + EMBED_BATCH]))
        done += len(parts[-1])
        now, share = time.monotonic(), done * 10 // total
        if done < total and (share > last_share or now - last_time >= PROGRESS_EVERY_S):
            rate = done / max(now - started, 1e-9)
            notify(
                f"embedding {done}/{total} items ({100 * done // total}%, "
                f"{rate:.0f} items/s, about {(total - done) / rate:.0f} s left)"
            )
            last_time, last_share = now, share
    notify(f"embedded {total} items in {time.monotonic() - started:.1f} s")
    return np.concatenate(parts).astype(np.float32)
