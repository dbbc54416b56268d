"""A prepared copy of the int8 model: float weights in a file onnxruntime maps into memory.

The shipped model stores its weights as int8 and turns them back into float (Cast, Mul)
on every run, into 90 MB of freshly allocated memory. In a cold process that memory is
new to the kernel: the first query pays about 24,000 page faults, 45 of its 60 ms, and
the session 45 ms more (measured, docs/retrieval.md, "Prepared model"). onnxruntime can
do that conversion once ("basic" optimisation folds the constants) and save the graph
with its initializers in a separate file, which it then maps instead of reading: the
weights come from the page cache, shared by every process, and a cold session plus its
first query takes about 20 ms. The vectors are bit for bit the same (checked on a probe
when a copy is written).

The copy is derived data, keyed by the source model's pinned sha256 and the onnxruntime
version, kept in the user's cache directory (one copy for every wiki), written to a
temporary directory and renamed into place, so a reader sees a whole copy or none.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from ..fsutil import atomic_write_text, current_umask, file_sha256, identity_facts

GRAPH = "model.onnx"
WEIGHTS = "model.weights"
META = "prepared.json"
#: Token ids of two short inputs, one padded: the check that the copy computes what the
#: source computes.
_PROBE = [[101, 3638, 15113, 102, 0, 0], [101, 2129, 2079, 2057, 12661, 102]]
#: Largest difference allowed between the source's and the copy's outputs on the probe:
#: none, so that an index is the same whichever process embedded it (the copy runs without
#: prepacking, see onnx._session_options; with it the outputs differ by about 1e-7).
TOLERANCE = 0.0
#: A temporary folder this old belongs to a preparer that was killed.
ABANDONED_AFTER_S = 600
#: A copy made for another onnxruntime version and not read for this long is left over
#: from an upgrade (90 MB each). Another install on the machine that still uses it only
#: prepares it again (0.3 s), so a wrong guess costs time, never an answer.
UNUSED_AFTER_S = 30 * 86400


def key(source_sha256: str) -> str:
    """The folder name of the copy of one source model for this onnxruntime."""
    return f"{source_sha256[:16]}-ort{ort.__version__}"


def find(cache_dir: Path, source_sha256: str) -> Path | None:
    """The prepared graph for this source model, or None when there is no usable copy.

    The weights file is trusted when its size, mtime and inode are those recorded when it
    was written (a stat, not a 90 MB hash, on every cold start); otherwise it is hashed
    against the recorded sha256, as the source model is (onnx.verify_file).
    """
    folder = Path(cache_dir) / key(source_sha256)
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("source_sha256") != source_sha256:
        return None
    if not meta.get("usable"):
        return None
    graph, weights = folder / GRAPH, folder / WEIGHTS
    try:
        if file_sha256(graph) != meta.get("graph_sha256"):
            return None
        facts = identity_facts(weights)
        if facts != meta.get("weights_facts"):
            if file_sha256(weights) != meta.get("weights_sha256"):
                return None
            with contextlib.suppress(OSError):  # a copied cache: hash it once, not every time
                meta["weights_facts"] = facts
                atomic_write_text(folder / META, json.dumps(meta, indent=1) + "\n")
    except OSError:
        return None
    return graph


def unusable(cache_dir: Path, source_sha256: str) -> bool:
    """True when preparation was tried for this source and onnxruntime and did not match.

    Only a verdict that names them both counts: any other prepared.json saying "usable":
    false (damaged, hand-edited) once stopped the copy from ever being written again.
    """
    try:
        meta = json.loads((Path(cache_dir) / key(source_sha256) / META).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(meta, dict)
        and meta.get("usable") is False
        and meta.get("source_sha256") == source_sha256
        and meta.get("onnxruntime") == ort.__version__
    )


def writable(cache_dir: Path) -> bool:
    """Whether a copy could be written under cache_dir (it, or its nearest existing parent)."""
    path = Path(cache_dir)
    for _ in range(64):  # bounded: a path has only so many parents
        if path.exists():
            return path.is_dir() and os.access(path, os.W_OK | os.X_OK)
        if path.parent == path:
            return False
        path = path.parent
    return False


def remove_abandoned(cache_dir: Path) -> None:
    """Delete temporary folders of preparers that died (a live one takes seconds, not minutes).

    Also called when the copy is already in place: a preparer killed half way leaves up to
    90 MB, and once another one has written the copy nothing else would come back for it.
    """
    now = time.time()
    for tmp in Path(cache_dir).glob(".prepare-*"):
        with contextlib.suppress(OSError):
            # abs: a folder dated in the future (a clock set back) was never removed
            if abs(now - tmp.stat().st_mtime) > ABANDONED_AFTER_S:
                shutil.rmtree(tmp)


def _outputs(session: ort.InferenceSession) -> np.ndarray:
    ids = np.array(_PROBE, dtype=np.int64)
    mask = (ids != 0).astype(np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in feeds.items() if k in names})[0]


def _options(level) -> ort.SessionOptions:
    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.disable_prepacking", "1")  # as the copy runs
    opts.graph_optimization_level = level
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return opts


def _remove_superseded(cache_dir: Path, source_sha256: str) -> None:
    """Delete copies of this source for other onnxruntime versions that nobody has read lately.

    A copy's last use is its weights file's access time (or its folder's mtime when that is
    later): kernels update atime at least daily by default (relatime), and with noatime a
    copy in use is at worst prepared again.
    """
    now = time.time()
    mine = key(source_sha256)
    for folder in cache_dir.glob(f"{source_sha256[:16]}-ort*"):
        if folder.name == mine or not folder.is_dir():
            continue
        with contextlib.suppress(OSError):
            weights = folder / WEIGHTS
            used = max(folder.stat().st_mtime, weights.stat().st_atime if weights.exists() else 0)
            if abs(now - used) > UNUSED_AFTER_S:
                shutil.rmtree(folder)


def prepare(source: Path, source_sha256: str, cache_dir: Path) -> Path | None:
    """Write the prepared copy of source (already verified against source_sha256); its graph.

    Returns None, and records that, when the copy does not compute what the source does.
    A copy already in place is kept. Takes about 0.3 s and writes about 90 MB.
    """
    cache_dir = Path(cache_dir)
    final = cache_dir / key(source_sha256)
    found = find(cache_dir, source_sha256)
    if found is not None or unusable(cache_dir, source_sha256):
        remove_abandoned(cache_dir)
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    remove_abandoned(cache_dir)
    _remove_superseded(cache_dir, source_sha256)
    # A damaged copy goes out of the way first (readers keep their maps); looked at again
    # just before, so a whole copy a racing preparer has just put in place stays.
    if final.exists() and find(cache_dir, source_sha256) is None:
        with contextlib.suppress(OSError):
            stale = Path(tempfile.mkdtemp(prefix=".prepare-stale-", dir=cache_dir))
            os.rename(final, stale / "copy")
            shutil.rmtree(stale)
    tmp = Path(tempfile.mkdtemp(prefix=".prepare-", dir=cache_dir))
    try:
        # mkdtemp makes it 0700: a copy another user prepared (a shared model_cache, one
        # `sudo memwiki` with HOME kept) could not be read: "it did not match the model"
        os.chmod(tmp, 0o777 & ~current_umask())
        opts = _options(ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
        opts.optimized_model_filepath = str(tmp / GRAPH)
        # The weights go to the file that gets mapped; small tensors (shapes, axes) stay in
        # the graph, where shape inference must read them.
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", WEIGHTS
        )
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        ort.InferenceSession(str(source), sess_options=opts, providers=["CPUExecutionProvider"])
        plain = ort.InferenceSession(
            str(source),
            sess_options=_options(ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
            providers=["CPUExecutionProvider"],
        )
        copy = ort.InferenceSession(
            str(tmp / GRAPH),
            sess_options=_options(ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
            providers=["CPUExecutionProvider"],
        )
        usable = float(np.abs(_outputs(plain) - _outputs(copy)).max()) <= TOLERANCE
        meta = {
            "source_sha256": source_sha256,
            "onnxruntime": ort.__version__,
            "usable": usable,
            "graph_sha256": file_sha256(tmp / GRAPH),
            "weights_sha256": file_sha256(tmp / WEIGHTS),
            # renaming the folder keeps the file's inode, size and mtime
            "weights_facts": identity_facts(tmp / WEIGHTS),
        }
        if not usable:  # keep only the verdict: the next build does not try again
            for name in (GRAPH, WEIGHTS):
                (tmp / name).unlink()
        atomic_write_text(tmp / META, json.dumps(meta, indent=1) + "\n")
        try:
            os.rename(tmp, final)  # whole or not at all; a racing writer's copy may win
        except OSError:
            return find(cache_dir, source_sha256)
        return final / GRAPH if usable else None
    finally:
        with contextlib.suppress(OSError):
            if tmp.exists():
                shutil.rmtree(tmp)
