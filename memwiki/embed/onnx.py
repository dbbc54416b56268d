"""Sentence embeddings from a local ONNX transformer: tokenise, run, mean-pool, L2-normalise.

onnxruntime, tokenizers and numpy are imported here, never by ``memwiki.embed`` itself,
so that commands which do not embed never pay for them.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from ..errors import StorageError
from ..fsutil import atomic_write_text, file_sha256, identity_facts

if TYPE_CHECKING:
    from collections.abc import Sequence

#: all-MiniLM-L6-v2 was trained with this max_seq_length; longer input only adds cost.
MAX_TOKENS = 256
#: Texts per onnxruntime call; sorted by length first so each batch pads little.
BATCH_SIZE = 32
STAMP_NAME = "model-verified.json"

_ID_DTYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


def _read_stamp(stamp_file: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(stamp_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def known_sha256(path: Path, stamp_dir: Path | None = None) -> str:
    """path's sha256, hashed once per inode, size and mtime and remembered in the stamp."""
    path = Path(path).resolve()
    facts = identity_facts(path)
    stamp_file = Path(stamp_dir) / STAMP_NAME if stamp_dir is not None else None
    entries = _read_stamp(stamp_file) if stamp_file is not None else {}
    entry = entries.get(str(path))
    sha = entry.get("sha256") if isinstance(entry, dict) else None
    if isinstance(sha, str) and entry == {**facts, "sha256": sha}:
        return sha
    actual = file_sha256(path)
    if stamp_file is not None:
        entries[str(path)] = {**facts, "sha256": actual}
        with contextlib.suppress(OSError):  # the stamp only saves time
            atomic_write_text(stamp_file, json.dumps({"files": entries}, indent=1) + "\n")
    return actual


def verify_file(path: Path, expected: str, stamp_dir: Path | None = None) -> bool:
    """Check path against expected sha256; True if it was hashed, False if the stamp vouched."""
    path = Path(path).resolve()
    facts = identity_facts(path)
    stamp_file = Path(stamp_dir) / STAMP_NAME if stamp_dir is not None else None
    entries = _read_stamp(stamp_file) if stamp_file is not None else {}
    entry = entries.get(str(path))
    # Same inode, size and mtime as when we last hashed it: the content has not been
    # replaced, so the 23 MB hash is skipped on every cold start after the first.
    if entry == {**facts, "sha256": expected}:
        return False
    actual = file_sha256(path)
    if actual != expected:
        raise StorageError(
            f"{path}: sha256 {actual[:16]}… does not match the pinned {expected[:16]}…; "
            "reinstall the package that ships it"
        )
    if stamp_file is not None:
        entries[str(path)] = {**facts, "sha256": actual}
        # The stamp only saves time: a read-only cache directory must not stop embedding.
        with contextlib.suppress(OSError):
            atomic_write_text(stamp_file, json.dumps({"files": entries}, indent=1) + "\n")
    return True


def _usable_cpus() -> int:
    # sched_getaffinity honours taskset/cgroup pinning but exists only on Linux.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _session_options(threads: int | None = None, prepared: bool = False) -> ort.SessionOptions:
    opts = ort.SessionOptions()
    if prepared:
        # Prepacking would copy the prepared model's mapped float weights into 90 MB of
        # fresh memory (a session of 49 instead of 10 ms, docs/retrieval.md), and it changes
        # the order of the sums: without it the vectors are bit for bit those of the
        # shipped file, so an index is the same whichever process embedded which item.
        opts.add_session_config_entry("session.disable_prepacking", "1")
    # Measured on a 2-core machine: any optimisation level from "basic" up constant-folds
    # the int8 weights back into a 90 MB float graph, which doubles the cold start
    # (about 0.2 s instead of 0.1 s to load and run one query) for no throughput gain
    # beyond noise (about 28 texts/s of 150 words either way).
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # Threads beyond the cores we may run on only contend; past 4 this small model gains little.
    # One query (retrieve, the hook) asks for a single thread: no pool to start and no
    # spinning workers, measured 0.21 instead of 0.28 CPU s for a cold session + first query.
    opts.intra_op_num_threads = threads or max(1, min(_usable_cpus(), 4))
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    return opts


class OnnxEmbedder:
    """A sentence-transformers style model (token embeddings, mean pooled) run by onnxruntime."""

    provider = "onnx"

    def __init__(
        self,
        model_path: Path | str,
        tokenizer_path: Path | str,
        model_name: str,
        verify_sha256: str | None = None,
        stamp_dir: Path | str | None = None,
        tokenizer_sha256: str | None = None,
        threads: int | None = None,
        prepared_dir: Path | str | None = None,
    ):
        """prepared_dir: the cache of prepared models (embed/prepared.py), used when it
        holds this model (only a pinned one: verify_sha256 names it) and, in a process that
        embeds in batches (threads None), filled when it does not."""
        model_path, tokenizer_path = Path(model_path), Path(tokenizer_path)
        stamp = Path(stamp_dir) if stamp_dir is not None else None
        if verify_sha256 is not None:
            verify_file(model_path, verify_sha256, stamp)
        if tokenizer_sha256 is not None:
            verify_file(tokenizer_path, tokenizer_sha256, stamp)
        self.model = model_name
        self.model_path = model_path
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads every text to 128 and truncates there; we want
        # the model's full 256-token window and padding per batch instead.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        #: prepared: the session runs the prepared copy; wants_prepared: there is no copy yet
        #: and a later load would be faster with one (a caller may prepare it in the background)
        self.prepared = self.wants_prepared = False
        self._session = self._open_session(model_path, verify_sha256, prepared_dir, threads)
        self._inputs = {
            i.name: _ID_DTYPES.get(i.type, np.int64) for i in self._session.get_inputs()
        }
        unknown = set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if "input_ids" not in self._inputs or unknown:
            raise StorageError(
                f"{model_path}: unsupported model inputs {sorted(self._inputs)}; "
                "expected input_ids, attention_mask and optionally token_type_ids"
            )
        self._output = self._session.get_outputs()[0].name
        last = self._session.get_outputs()[0].shape[-1]
        self.dim = last if isinstance(last, int) else int(self._run(["dim"]).shape[1])

    def _open_session(
        self, model_path: Path, sha256: str | None, prepared_dir: Path | str | None, threads
    ) -> ort.InferenceSession:
        """The session on the prepared copy when there is one, else on the model file."""
        from . import prepared

        def session(path: Path, is_prepared: bool) -> ort.InferenceSession:
            return ort.InferenceSession(
                str(path),
                sess_options=_session_options(threads, is_prepared),
                providers=["CPUExecutionProvider"],
            )

        cache = Path(prepared_dir) if prepared_dir is not None and sha256 else None
        if cache is not None and (graph := prepared.find(cache, sha256 or "")) is not None:
            with contextlib.suppress(Exception):  # a damaged copy: the model file still works
                self.prepared = True
                return session(graph, True)
            self.prepared = False
        plain = session(model_path, False)
        if cache is not None and threads is None:  # a batch embedder: worth 0.3 s once
            with contextlib.suppress(Exception):  # the copy only saves time
                prepared.prepare(model_path, sha256 or "", cache)
        self.wants_prepared = (
            cache is not None
            and prepared.find(cache, sha256 or "") is None
            and not prepared.unusable(cache, sha256 or "")
            and prepared.writable(cache)  # else every query would start a build for nothing
        )
        return plain

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts: float32 array of shape (len(texts), dim), rows L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run(list(texts))

    def _run(self, texts: list[str]) -> np.ndarray:
        # encode() one at a time, not encode_batch(): the batch call starts the tokenizers
        # thread pool, which then warns on every later fork (git hooks, subprocesses).
        encodings = [self._tokenizer.encode(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out: np.ndarray | None = None
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start : start + BATCH_SIZE]
            vectors = self._run_batch([encodings[i] for i in idx])
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
        assert out is not None
        return out

    def _run_batch(self, encodings: list) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {name: feeds[name].astype(dtype) for name, dtype in self._inputs.items()}
        hidden = self._session.run([self._output], feeds)[0]
        if hidden.ndim == 3:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        else:  # the model pools by itself
            pooled = hidden
        pooled = pooled.astype(np.float32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)
