"""The embedding cache: vectors of texts that left the index, keyed by the text's sha256."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

CACHE_LIMIT = 50_000  # vectors kept for texts no longer in the wiki
MAX_CHUNKS = 32
#: Models whose vectors are kept (each in its own folder, at most CACHE_LIMIT vectors):
#: the one in use and the last ones switched away from, so that switching back (embed =
#: onnx -> ensemble -> onnx) takes their vectors instead of embedding the wiki again.
MODELS_KEPT = 3


#: How far from 1 a stored vector's length may be: every embedder writes unit rows (float32
#: rounding moves them by about 1e-7); anything else is damage, never a vector to use.
UNIT_TOLERANCE = 1e-3


def sound_rows(vecs: np.ndarray) -> np.ndarray:
    """Which rows are unit vectors, as every embedder writes them (a bool per row).

    A file whose header is intact but whose data was zeroed or overwritten loads without
    an error; its rows would be copied into the index as vectors (NaN, zero, or long
    enough to outscore every real match).
    """
    rows = np.asarray(vecs, dtype=np.float32)
    with np.errstate(all="ignore"):  # NaN and overflow: not a unit row
        # each row's squared length, without a temporary the size of the rows (a
        # compaction checks every vector of the index); |n^2 - 1| is about 2 |n - 1|
        squared = np.einsum("ij,ij->i", rows, rows)
        return np.abs(squared - 1.0) <= 2 * UNIT_TOLERANCE


def folder_of(model_key: dict) -> str:
    """The cache folder of one {provider, model, dim}."""
    text = json.dumps(model_key, sort_keys=True)
    return "model-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class EmbeddingCache:
    """sha256 of an item's text -> its vector, for one {provider, model, dim}.

    The vector segments already hold the vectors of every item in the wiki; this cache
    keeps the ones that left it (an edit, a branch switch, a deleted file, a switch to
    another model), and the background build's work in progress, so that text coming
    back is never embedded twice. Each model has a folder (folder_of) of chunk pairs:
    `chunk-N.keys.npy` (the shas) and `chunk-N.vecs.npy` (their vectors, same order). An
    update appends one pair; a lookup reads only the keys and maps the vectors it needs,
    so its cost does not grow with the vectors' size.
    """

    def __init__(self, directory: Path, model_key: dict):
        self.root = directory
        self.directory = directory / folder_of(model_key)
        self.model_key = model_key

    def _chunks(self) -> list[Path]:
        """The keys files of complete chunks (the vectors are written first)."""
        return sorted(self.directory.glob("chunk-*.keys.npy"))

    def _valid(self) -> bool:
        try:
            return json.loads((self.directory / "model.json").read_text()) == self.model_key
        except (OSError, ValueError):
            return False

    def lookup(self, shas: list[str]) -> dict[str, np.ndarray]:
        """The cached vectors among shas."""
        if not shas:
            return {}
        self._adopt_legacy()
        if not self._valid():
            return {}
        wanted = np.array(sorted(set(shas)), dtype="S64")
        found: dict[str, np.ndarray] = {}
        for keys_file in reversed(self._chunks()):
            try:
                keys = np.load(keys_file, allow_pickle=False)
                hits = np.flatnonzero(np.isin(keys, wanted))
                if len(hits):
                    vecs = np.load(_vecs_of(keys_file), mmap_mode="r", allow_pickle=False)
                    if vecs.shape != (len(keys), self.model_key["dim"]):
                        continue  # damaged or foreign: a wrong width once failed every update
                    rows = np.array(vecs[hits], dtype=np.float32)
                    for i, row, ok in zip(hits, rows, sound_rows(rows), strict=True):
                        if ok:
                            found.setdefault(keys[i].decode(), row)
            except Exception:  # a damaged chunk is only lost cache
                continue
            if len(found) == len(wanted):
                break
        return found

    def add(self, shas: list[str], vecs: np.ndarray) -> None:
        """Remember vectors in a new chunk; compacts when chunks pile up."""
        if not shas:
            return
        from ..fsutil import atomic_write_text

        self._adopt_legacy()
        self._make_room()
        if not self._valid():
            for stale in self.directory.glob("chunk-*"):
                stale.unlink(missing_ok=True)
            atomic_write_text(self.directory / "model.json", json.dumps(self.model_key))
        chunks = self._chunks()
        self._write(_seq(chunks[-1]) + 1 if chunks else 0, shas, vecs)
        if len(chunks) + 1 > MAX_CHUNKS:
            self._compact()
        self._forget_old_models()

    def _make_room(self) -> None:
        """The model's folder, made again where damage put something else in its place.

        A file where a folder belongs (or a folder where a chunk belongs) once failed every
        update with exit 70, for good: this is a cache, so it goes.
        """
        for folder in (self.root, self.directory):
            if folder.exists() and not folder.is_dir():
                folder.unlink()
        self.directory.mkdir(parents=True, exist_ok=True)
        for entry in self.directory.glob("chunk-*"):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)

    def _adopt_legacy(self) -> None:
        """The layout before per-model folders (chunks beside one model.json in the cache
        folder itself): this model's chunks move into its folder, another model's go."""
        legacy = self.root / "model.json"
        if not legacy.is_file():  # one stat on a lookup's path
            return
        try:
            mine = json.loads(legacy.read_text()) == self.model_key
        except (OSError, ValueError):
            mine = False
        with contextlib.suppress(OSError):  # a racing process may have moved them first
            if mine and not self.directory.exists():
                self.directory.mkdir(parents=True, exist_ok=True)
                for chunk in self.root.glob("chunk-*.npy"):
                    os.replace(chunk, self.directory / chunk.name)
                os.replace(legacy, self.directory / "model.json")
        for stale in self.root.glob("chunk-*"):  # and the older .npz chunks
            stale.unlink(missing_ok=True)
        legacy.unlink(missing_ok=True)

    def _forget_old_models(self) -> None:
        """Keep the folders of the MODELS_KEPT models written most recently (this one too)."""
        os.utime(self.directory)  # written now, even if only into existing chunks' names
        folders = []
        for folder in self.root.glob("model-*"):
            with contextlib.suppress(OSError):
                folders.append((folder.stat().st_mtime_ns, folder))
        folders.sort(reverse=True)
        for _, folder in folders[MODELS_KEPT:]:
            if folder != self.directory:
                shutil.rmtree(folder, ignore_errors=True)

    def _write(self, seq: int, shas: list[str], vecs) -> None:
        from ..fsutil import atomic_write

        # Each file's contents are fsynced before its rename, but not the folder after
        # it: a machine crash may lose a chunk's names (lookup skips a keys file whose
        # vectors are missing), which loses only cached vectors; a reader's inline update
        # after an edit writes a chunk, and the two folder fsyncs were on its path.
        keys_file = self.directory / f"chunk-{seq:08d}.keys.npy"
        with atomic_write(_vecs_of(keys_file), sync_dir=False) as fh:
            save_array(fh, np.ascontiguousarray(vecs, dtype=np.float32))
        with atomic_write(keys_file, sync_dir=False) as fh:  # last: a keys file, a complete chunk
            save_array(fh, np.array(shas, dtype="S64"))

    def _compact(self) -> None:
        """Merge chunks: the newest small ones while the cache is within CACHE_LIMIT, else all.

        Merging a run of the newest chunks into one newer chunk changes no lookup (a
        lookup takes a text's vector from the newest chunk holding it, and the merged
        chunk keeps the newest of each). Merging everything rewrote the whole cache
        every MAX_CHUNKS updates, on a reader's path: 250 ms for 30,000 cached vectors.
        """
        from ..fsutil import remove_stale_temps

        remove_stale_temps(self.directory)  # a killed writer's chunk, never finished
        old = self._chunks()
        counts = [_count(keys_file) for keys_file in old]
        if sum(counts) > CACHE_LIMIT:
            self._merge(old, limit=CACHE_LIMIT)
        else:
            self._merge(old[_newest_run(counts, keep=MAX_CHUNKS // 2) :])

    def _merge(self, old: list[Path], limit: int | None = None) -> None:
        """Replace these chunks (in order, oldest first) by one newer chunk."""
        if len(old) < 2 and limit is None:
            return
        vectors: dict[bytes, np.ndarray] = {}
        for keys_file in old:
            try:
                keys = np.load(keys_file, allow_pickle=False)
                vecs = np.load(_vecs_of(keys_file), allow_pickle=False)
            except Exception:  # a damaged chunk is only lost cache
                continue
            if vecs.shape != (len(keys), self.model_key["dim"]):
                continue  # as in lookup: stacked with the others it would fail every add
            vectors.update(zip(keys.tolist(), vecs, strict=True))
        keys = list(vectors)[-limit:] if limit is not None else list(vectors)
        if keys:
            vecs = np.stack([vectors[k] for k in keys])
            self._write(_seq(old[-1]) + 1, [k.decode() for k in keys], vecs)
        for keys_file in old:
            keys_file.unlink(missing_ok=True)
            _vecs_of(keys_file).unlink(missing_ok=True)


def _newest_run(counts: list[int], keep: int) -> int:
    """Where the run of newest chunks to merge starts: enough of them to leave at most
    `keep` older ones, and every older chunk no larger than the run so far (so chunks
    stay in tiers of growing size and a vector is rewritten about log2(size) times)."""
    start = max(0, min(keep, len(counts) - 2))
    total = sum(counts[start:])
    while start > 0 and counts[start - 1] <= total:
        start -= 1
        total += counts[start]
    return start


def _count(keys_file: Path) -> int:
    """How many keys a chunk holds (its file size; a damaged one counts as none)."""
    try:
        return max(0, keys_file.stat().st_size - 128) // 64
    except OSError:
        return 0


def _vecs_of(keys_file: Path) -> Path:
    return keys_file.with_name(keys_file.name.replace(".keys.npy", ".vecs.npy"))


def _seq(keys_file: Path) -> int:
    return int(keys_file.name.split("-")[1].split(".")[0])


class _Writes:
    """Only a file's write(): np.save then writes through it, not with ndarray.tofile."""

    def __init__(self, fh):
        self.write = fh.write


def save_array(fh, array: np.ndarray) -> None:
    """np.save of array to fh, a failed write raising OSError with its errno.

    numpy's own tofile turned a short write (a full disk, `ulimit -f`) into an OSError
    with no errno, "1152 requested and 992 written": an internal error (exit 70) where
    the command line says "No space left on device" (exit 5).
    """
    np.save(_Writes(fh), array, allow_pickle=False)
