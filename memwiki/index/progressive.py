"""Progressive answers: BM25 at once, vectors when they are ready in time, the rest in the background.

`retrieve(deadline=..., background=True)` (index/search.py) uses this module:

- the index is brought up to date for BM25 only, unless the vector work left is small
  (INLINE_EMBED_LIMIT items) and there is no deadline;
- the query's vector part (loading the model, embedding the query, the matrix product)
  runs in a daemon thread that the answer waits for until the deadline, and no longer;
- when vectors are missing, partial or from another model, one detached, lock-guarded
  `memwiki reindex --background` fills them in (index/background.py); later calls use
  whatever is ready.
"""

from __future__ import annotations

import threading
import time

#: Without a deadline, at most this many items are embedded inside a retrieve (about 3 s
#: on an idle 2-core machine); larger work goes to the background build.
INLINE_EMBED_LIMIT = 150
#: Share of the time left that a reader with a deadline waits for another writer.
WAIT_SHARE = 0.3
VECTOR_THREAD = "memwiki-vectors"
#: CPU seconds of a cold vector part (numpy, onnxruntime and tokenizers imported, the
#: model session created, the query embedded): measured about 0.3 s on the 2-core
#: development machine. Warm (the model loaded in this process) it is a few ms.
VECTOR_COLD_CPU_S = 0.3
VECTOR_WARM_CPU_S = 0.02


class Clock:
    """Wall and CPU time since a retrieve began: how much of a CPU this process gets now."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.monotonic(), time.process_time()

    def share(self) -> float:
        """CPU seconds per wall second so far (1.0 on an idle core, about 0.25 at load 8 on 2 cores)."""
        wall = time.monotonic() - self.wall
        if wall < 0.02:
            return 1.0
        return min(1.0, max(0.02, (time.process_time() - self.cpu) / wall))


def vectors_fit(index, deadline: float | None, clock: Clock) -> bool:
    """Whether the vector part can be expected to finish before the deadline.

    On a starved machine a thread that cannot finish in time still costs: it holds the
    interpreter lock in long native calls (a model session is created in one), and the
    BM25 answer then misses the deadline too. So it is not started at all.
    """
    if deadline is None:
        return True
    cpu = VECTOR_WARM_CPU_S if index.embedder_loaded else VECTOR_COLD_CPU_S
    return time.monotonic() + cpu / clock.share() < deadline


def open_snapshot(index, mode: str, deadline: float | None, status: dict, notify):
    """The snapshot a progressive answer reads: BM25 complete, vectors as far as they are."""
    wait_until = None
    if deadline is not None:
        wait_until = time.monotonic() + max(0.0, deadline - time.monotonic()) * WAIT_SHARE
    limit = -1 if deadline is not None else INLINE_EMBED_LIMIT
    return index.snapshot(
        need_vectors=mode != "bm25", inline_limit=limit, deadline=wait_until, status=status
    )


class VectorJob:
    """The query's vector hits, computed in a daemon thread (with a deadline) or right away."""

    def __init__(self, index, snap, search_fn, deadline: float | None):
        self.index, self.snap, self.deadline = index, snap, deadline
        self._search = search_fn  # (snap, embedder) -> hits
        self.hits: list | None = None
        self.reason = ""  # why there are no vector hits
        self.model_mismatch = False
        self._thread: threading.Thread | None = None
        if deadline is None:
            self._run()
        else:
            self._thread = threading.Thread(target=self._run, name=VECTOR_THREAD, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            embedder = self.index.embedder(threads=1)  # one query: no thread pool
            if embedder is None:
                self.reason = f"BM25 only: {self.index.embedder_note}"
                return
            state = self.snap.state
            if state.vectors_file is None:
                self.reason = "BM25 only: vectors are being built"
                return
            if state.embedder != self.index.model_key(embedder):
                self.model_mismatch = True
                self.reason = "BM25 only: vectors are being rebuilt for another model"
                return
            self.hits = self._search(self.snap, embedder)
        except Exception as exc:  # the BM25 answer stands; say why vectors are missing
            self.reason = f"BM25 only: vectors failed ({type(exc).__name__})"

    def result(self) -> list | None:
        """The vector hits, or None when they are not ready by the deadline (reason says why)."""
        if self._thread is not None and self.deadline is not None:
            self._thread.join(max(0.0, self.deadline - time.monotonic()))
            if self._thread.is_alive():
                self.reason = "BM25 only: vectors not ready within the deadline"
                return None
        return self.hits


def vectors_need_work(snap, job: VectorJob | None, config) -> bool:
    """True when a background reindex has vectors to compute: missing, partial or stale."""
    from ..embed import embedding_configured

    if not snap.state.rows or not embedding_configured(config):
        return False
    if job is not None and job.model_mismatch:
        return True
    return snap.pending > 0
