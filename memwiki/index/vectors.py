"""Item vectors: the float32 matrix beside the index, and the embedding cache keyed by text sha256."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CACHE_LIMIT = 50_000  # vectors kept for texts no longer in the wiki
MAX_CHUNKS = 32


def load_matrix(path: Path, rows: int, dim: int) -> np.ndarray:
    """Load the vector matrix; raises ValueError when it does not have the expected shape."""
    matrix = np.load(path, allow_pickle=False)
    if matrix.shape != (rows, dim) or matrix.dtype != np.float32:
        raise ValueError(f"vector matrix has shape {matrix.shape}, expected {(rows, dim)}")
    return matrix


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
    directory: Path, root: Path, old, new, added_rows, items, embedder, key: dict, keep=None
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
            fresh = embed_with_progress(embedder, list(texts.values()))
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


def embed_with_progress(embedder, texts: list[str]) -> np.ndarray:
    """Embed texts, with a progress bar on stderr when it is a terminal and the job is large."""
    import sys

    if len(texts) <= EMBED_BATCH or not sys.stderr.isatty():
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    from rich.console import Console
    from rich.progress import Progress

    parts = []
    with Progress(transient=True, console=Console(file=sys.stderr)) as progress:
        task = progress.add_task("embedding", total=len(texts))
        for i in range(0, len(texts), EMBED_BATCH):
            parts.append(embedder.embed(texts[i : i + EMBED_BATCH]))
            progress.advance(task, len(parts[-1]))
    return np.concatenate(parts).astype(np.float32)
