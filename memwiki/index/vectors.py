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
    import io

    from ..fsutil import atomic_write_bytes

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)
    atomic_write_bytes(path, buf.getvalue())


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
