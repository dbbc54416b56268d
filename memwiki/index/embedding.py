"""Embedding an index's items: their texts, in slices longest first, with progress.

A build embeds inside the writer lock (embed_with_progress); a background build fills the
embedding cache outside it (prefill_cache) so readers and writers are never held up.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .embedding_cache import EmbeddingCache


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
    shas, plain = list(texts), list(texts.values())
    keys = [shas[i] for i in by_length(plain)]
    values = [texts[k] for k in keys]
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


def by_length(texts: list[str]) -> list[int]:
    """Positions of texts, longest first: slices of similar length pad little.

    Progress and saved slices need the work cut into slices; cut in the wiki's order, each
    slice mixes short and long texts and every batch pads to its longest, about 25% more
    tokens through the model than one sorted run on a generated 2k wiki, 10-20% on real
    ones (docs/retrieval.md). Longest first so the time left is never underestimated.
    A vector does not depend on its batch (padding is masked), so the order changes no bit.
    """
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


def embed_with_progress(embedder, texts: list[str], notify=None, keep=None) -> np.ndarray:
    """Embed texts; large jobs report progress on stderr.

    A terminal gets a rich bar; anything else (a log, an agent's pipe) gets plain lines
    through notify, every 10% or every 5 seconds, whichever comes first, so that a
    long first build never looks like a hang. notify=None: silent. keep(positions,
    vectors) is given the finished slices when a Ctrl-C stops the work.
    """
    if len(texts) <= EMBED_BATCH or notify is None:
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    filled = Filled()
    try:
        return _embed_in_slices(embedder, texts, notify, filled)
    except KeyboardInterrupt:
        # A Ctrl-C late in a long first build (minutes on a laptop) threw every vector
        # away, and the next command embedded them all again.
        if keep is not None and filled.positions and filled.out is not None:
            keep(filled.positions, filled.out[filled.positions])
        raise


class Filled:
    """The matrix embed_with_progress fills, and the positions filled so far."""

    def __init__(self) -> None:
        self.out: np.ndarray | None = None
        self.positions: list[int] = []


def _embed_in_slices(embedder, texts: list[str], notify, filled: Filled) -> np.ndarray:
    import sys
    import time

    total = len(texts)
    order = by_length(texts)
    step = min(4 * EMBED_BATCH, max(EMBED_BATCH, total // 10))

    def run(start: int) -> int:
        idx = order[start : start + step]
        vecs = np.asarray(embedder.embed([texts[i] for i in idx]), dtype=np.float32)
        if filled.out is None:
            filled.out = np.empty((total, vecs.shape[1]), dtype=np.float32)
        filled.out[idx] = vecs
        filled.positions.extend(idx)
        return len(idx)

    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import Progress

        with Progress(transient=True, console=Console(file=sys.stderr)) as progress:
            task = progress.add_task("embedding", total=total)
            for start in range(0, total, step):
                progress.advance(task, run(start))
        assert filled.out is not None
        return filled.out
    done = 0
    started = last_time = time.monotonic()
    last_share = 0
    notify(f"embedding {total} items")
    for start in range(0, total, step):
        done += run(start)
        now, share = time.monotonic(), done * 10 // total
        if done < total and (share > last_share or now - last_time >= PROGRESS_EVERY_S):
            rate = done / max(now - started, 1e-9)
            notify(
                f"embedding {done}/{total} items ({100 * done // total}%, "
                f"{rate:.0f} items/s, about {(total - done) / rate:.0f} s left)"
            )
            last_time, last_share = now, share
    notify(f"embedded {total} items in {time.monotonic() - started:.1f} s")
    assert filled.out is not None
    return filled.out
