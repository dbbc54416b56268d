"""Progressive answers: BM25 at once, vectors when they are ready in time, the rest in the background.

`retrieve(deadline=..., background=True)` (index/search.py) uses this module:

- the index is brought up to date for BM25 only, unless the vector work left is small
  (INLINE_EMBED_LIMIT items) and there is no deadline;
- the query's vector part (loading the model and embedding the query) runs in a daemon
  thread that the answer waits for until the deadline, and no longer. It starts with the
  retrieve, before the index is even read, whenever the process gets enough CPU for
  both parts: creating the model session and running it release the interpreter lock,
  so on two cores it overlaps the pure-Python BM25 work. Otherwise it starts after the
  BM25 answer, and only if it can still finish in time;
- when vectors are missing, partial or from another model, one detached, lock-guarded
  `memwiki reindex --background` fills them in (index/background.py); later calls use
  whatever is ready.
"""

from __future__ import annotations

import threading
import time

from ..process import interrupted, process_start, runs_one_command

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
#: CPU seconds of the BM25 part of a cold retrieve on a 2,000-file wiki (manifest, freshness
#: scan, Whoosh import and search, sections): measured about 0.15 s.
BM25_CPU_S = 0.15
#: With a deadline, the vector part starts beside BM25 only when both, one after the
#: other, would take at most this share of the time left. Two threads of one process
#: share its CPU (with autogroup scheduling, its session's), so on a contended machine
#: the vector thread slows the BM25 answer; measured at load 13, a rule without this
#: margin lost 2 of 10 hook answers to the deadline.
EARLY_MARGIN = 0.5


class Clock:
    """Wall and CPU time since this command's process began, or in a program using the
    library since the retrieve did: how much of a CPU it gets now."""

    def __init__(self) -> None:
        if runs_one_command():
            # process_time() counts from the process start too, so the share covers the
            # interpreter's start-up and imports: known before the retrieve does any work.
            self.wall, self.cpu = process_start(), 0.0
        else:
            # A program using the library (a server, a notebook) idles between calls,
            # which is no sign of a busy machine. Bug it prevents: such a process, idle for
            # most of its first minute, got a share of 0.04 and answered every retrieve
            # with a deadline "BM25 only: vectors would not be ready within the deadline",
            # even with an embedder that takes microseconds (tests/test_threads_progressive.py).
            self.wall, self.cpu = time.monotonic(), time.process_time()

    def share(self) -> float:
        """CPU seconds per wall second so far (1.0 on an idle core, about 0.25 at load 8 on 2 cores)."""
        wall = time.monotonic() - self.wall
        if wall < 0.02:
            return 1.0
        return min(1.0, max(0.02, (time.process_time() - self.cpu) / wall))


def vectors_fit(index, deadline: float | None, clock: Clock, with_bm25: bool = False) -> bool:
    """Whether the vector part can be expected to finish before the deadline.

    with_bm25: the BM25 part still has to run beside it, on the same CPU share.
    On a starved machine a thread that cannot finish in time still costs: it takes CPU
    (and the interpreter lock while numpy and onnxruntime are imported) from the BM25
    answer, which then misses the deadline too. So it is not started at all.
    """
    if deadline is None:
        return True
    cpu = VECTOR_WARM_CPU_S if index.embedder_loaded else VECTOR_COLD_CPU_S
    left = deadline - time.monotonic()
    if with_bm25:
        return (cpu + BM25_CPU_S) / clock.share() < left * EARLY_MARGIN
    return cpu / clock.share() < left


#: Changed bytes a progressive reader indexes before it answers; more are left to the
#: background reindex. Chunking and analysing cost about 1.5 s a MB of log-like text and
#: up to 15 s a MB of tiny sections (measured on a 20 MB pasted log: a retrieve after a
#: one-line edit took 31.5 s and printed nothing; a 580 KB note of 20,000 sections 8.6 s).
INLINE_BYTES = 1_000_000


def too_large_to_wait(changes, stats: dict) -> str:
    """What makes these changes too large to index before answering ("" when they are not)."""
    sizes = [stats[p][0] for p in changes.changed if p in stats]
    total = sum(sizes)
    if total <= INLINE_BYTES:
        return ""
    files = f"{len(sizes)} changed files are" if len(sizes) != 1 else "1 changed file is"
    return f"{files} being indexed in the background ({total / 1e6:.1f} MB)"


def open_snapshot(index, mode: str, deadline: float | None, status: dict, notify):
    """The snapshot a progressive answer reads: BM25 complete, vectors as far as they are."""
    wait_until = None
    if deadline is not None:
        wait_until = time.monotonic() + max(0.0, deadline - time.monotonic()) * WAIT_SHARE
    limit = -1 if deadline is not None else INLINE_EMBED_LIMIT
    return index.snapshot(
        need_vectors=mode != "bm25",
        inline_limit=limit,
        deadline=wait_until,
        status=status,
        speculate=True,
    )


class VectorJob:
    """The query's embedding, computed in a daemon thread; the vector hits once a snapshot is open.

    The thread only loads the model and embeds the query: it needs no index, so it can
    start before the snapshot is read. The matrix product runs in the caller's thread,
    on the snapshot the BM25 part read, in result().
    """

    def __init__(self, index, query: str, deadline: float | None):
        self.index, self.query, self.deadline = index, query, deadline
        self.embedder = None
        self.qvec = None
        self.reason = ""  # why there are no vector hits
        self.model_mismatch = False
        self.no_embedder = False  # none configured or the model unusable (embedder_note)
        self._thread = threading.Thread(target=self._run, name=VECTOR_THREAD, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            embedder = self.index.embedder(threads=1)  # one query: no thread pool
            if embedder is None:
                self.no_embedder = True
                self.reason = f"BM25 only: {self.index.embedder_note}"
                return
            from .vector_search import query_vector

            self.qvec = query_vector(embedder, self.query)
            self.embedder = embedder
        except Exception as exc:  # the BM25 answer stands; say why vectors are missing
            self.reason = f"BM25 only: vectors failed ({type(exc).__name__})"

    def result(self, snap, search_fn) -> list | None:
        """The vector hits on snap, or None when they are not ready by the deadline (reason says why).

        search_fn(snap, qvec) -> hits.
        """
        while self._thread.is_alive():
            if interrupted():  # a lost Ctrl-C: the thread may wait for a lock that is never freed
                raise KeyboardInterrupt
            left = 0.05 if self.deadline is None else min(0.05, self.deadline - time.monotonic())
            if left <= 0:
                break
            self._thread.join(left)
        if self._thread.is_alive():
            self.reason = "BM25 only: vectors not ready within the deadline"
            return None
        if self.embedder is None:
            return None
        from .vector_search import mismatch

        why = mismatch(snap.state, self.index.model_key(self.embedder))
        if why:
            self.model_mismatch = snap.state.vectors_file is not None
            self.reason = why
            return None
        try:
            return search_fn(snap, self.qvec)
        except Exception as exc:
            self.reason = f"BM25 only: vectors failed ({type(exc).__name__})"
            return None


def vectors_need_work(snap, job: VectorJob | None, config) -> bool:
    """True when a background reindex has vectors to compute: missing, partial or stale."""
    from ..embed import embedding_configured

    if not snap.state.rows or not embedding_configured(config):
        return False
    if job is not None and job.no_embedder:  # the model cannot load: a build could not either
        return False
    if job is not None and job.model_mismatch:
        return True
    return snap.pending > 0


def model_wants_preparing(index) -> bool:
    """True when this answer's query ran the model file: its prepared copy is not written yet."""
    if not index.embedder_loaded:
        return False
    from ..embed import wants_prepared

    return wants_prepared(index.embedder())
