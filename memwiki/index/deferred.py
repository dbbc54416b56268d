"""Answering an edit before it is written: the update prepared in memory, committed after.

A retrieve that finds a few edited files used to index them first, under the writer
lock: Whoosh's pure-Python writer, a vector segment and the manifest, 20-80 ms in front
of every answer after an edit. The answer needs none of that written. The update is
prepared as it would be written (writing.prepare: the files chunked, the new rows laid
out, their vectors taken from the old segments or embedded), the search reads the
committed index with it laid over (bm25_overlay, vectors.appended_matrix), and the
write happens after the answer is out, in a child process that holds the writer lock.

The answer is the one the written index gives: BM25 scores come from live statistics,
which the overlay computes for the updated index; vector products do not depend on
where a row is stored (vectors.dot_rows); the rows are the state the write commits.

Only a few files (MAX_FILES) and only an append: an update that would compact the
manifest, or has vector work beyond its own files, is written first as before. The
write is a fork of the answering process (Linux, one thread: nothing to re-import or
re-load); the child takes over the lock the parent took, so from the moment the answer
is out until the write is committed every other writer waits for it. The caller should
leave at once (the CLI calls os._exit): every page it writes after the fork is copied.
Where it cannot fork, one background reindex does the work. A child killed half-way is
an update killed half-way (writing.py): the next command finds the edit again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING

from . import manifest as st
from .freshness import ScanChanges

if TYPE_CHECKING:
    from collections.abc import Callable

    from .indexer import Index
    from .snapshot import Snapshot
    from .writing import Prepared

#: Files an answer may lay over the committed index; more are written first.
MAX_FILES = 16
LOG_NAME = "index-writes.log"


def available() -> bool:
    """Whether this platform can commit an update after the answer (a fork)."""
    return sys.platform == "linux" and hasattr(os, "fork")


def snapshot(
    index: Index, state: st.State, changes: ScanChanges, stats: dict, embed: bool, strict: bool
) -> Snapshot | None:
    """A snapshot answering from state with the changes laid over, or None: write them first."""
    if state.upgraded or len(changes.changed) + len(changes.deleted) > MAX_FILES:
        return None
    if not (changes.changed or changes.deleted) or not state.rows:
        return None
    from .writing import prepare

    prepared = prepare(index, state, changes, stats, embed)
    if prepared.plan.compact:
        return None  # the whole manifest is rewritten: that is written first
    from .snapshot import Snapshot

    report = prepared.report
    snap = Snapshot(
        index.root,
        index.directory,
        prepared.new,
        updated_files=len(report.indexed) + len(report.removed),
        strict=strict,
    )
    snap.deferred = prepared
    snap.base = Snapshot(index.root, index.directory, state, strict=strict)
    return snap


def write_later(index: Index, prepared: Prepared) -> str:
    """Commit a prepared update now that the answer is out; how: forked, background or none.

    none: another writer holds the lock (it, or the next command, indexes the edit).
    """
    lock = index.lock()
    try:
        if not lock.try_acquire():
            return "none"
    except OSError:
        # The answer is out: a sidecar that cannot be written (read-only, full, the lock's
        # name taken) leaves the edit to the next command, as a held lock does. Bug it
        # prevents: the answer printed, then the command failed (exit 5 or 70).
        return "none"
    if not available() or threading.active_count() > 1:
        # A fork of a threaded process may inherit a lock another thread held.
        lock.release()
        from . import background

        try:
            started = background.start(index.root, index.wiki.sidecar)
        except OSError:  # as above: the next command indexes the edit
            return "none"
        return "background" if started else "none"
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    reap()
    try:
        pid = os.fork()
    except OSError:  # no memory or processes left: the next command writes the edit
        lock.release()
        return "none"
    if pid:
        lock.hand_over()  # the child keeps the lock until the write is committed
        _CHILDREN.append(pid)
        return "forked"
    code = 1
    try:
        _detach(index)
        os.setsid()  # not killed with the caller's process group
        _commit(index, prepared)
        code = 0
    except BaseException as exc:  # the next command finds the edit and indexes it
        index.notify(f"deferred index write failed: {type(exc).__name__}: {exc}")
    finally:
        lock.release()
        os._exit(code)
    return "forked"  # not reached


def once(index: Index, prepared: Prepared) -> Callable[[], str]:
    """result.write_later: write_later(index, prepared) on the first call, "none" after.

    Bug it prevents: a result kept after its write held the index it was answered from
    (two manifest states, about 0.15 MB per 1,000 files) and the model with it, also after
    Wiki.close(); a second call wrote the same update again.
    """
    held = [(index, prepared)]

    def write() -> str:
        try:
            index, prepared = held.pop()  # atomic: two threads calling write it once
        except IndexError:
            return "none"
        return write_later(index, prepared)

    return write


_CHILDREN: list[int] = []  # writers this process forked and has not reaped yet


_REAPING = threading.Lock()


def reap() -> None:
    """Reap the writers that have finished (a long-running caller collects no zombies).

    One thread at a time. Bug it prevents: every Wiki.retrieve reaps first, and two
    threads that met the same finished writer both removed it: the second retrieve
    failed with ValueError (tests/test_threads_reap.py).
    """
    with _REAPING:
        for pid in list(_CHILDREN):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                _CHILDREN.remove(pid)


def wait_for_writes(timeout: float = 30.0) -> None:
    """Wait for the writers this process forked (tests, and callers that read the index next)."""
    import time

    until = time.monotonic() + timeout
    while _CHILDREN and time.monotonic() < until:
        reap()
        time.sleep(0.005)


def _detach(index: Index) -> None:
    """Point stdin and stdout at /dev/null and stderr at the log: the caller may be reading a pipe."""
    # Not background.log_path: that module imports subprocess, ~10 ms of the writer's time.
    from ..layout import LOGS
    from ..logfile import open_log

    null = os.open(os.devnull, os.O_RDWR)
    try:
        out = open_log(index.wiki.sidecar / LOGS / LOG_NAME)
    except OSError:  # a read-only sidecar: its failure said nowhere rather than after the
        out = os.dup(null)  # caller's answer, on the terminal or in the agent's output
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)


def _commit(index: Index, prepared: Prepared) -> None:
    """Write prepared under the lock this process holds; a plain update if another writer
    committed since it was prepared (its rows would be of the wrong state)."""
    from . import writing

    state, problem = index.committed_state()
    if problem is None and state is prepared.old:
        writing.write(index, prepared)
        return
    # The embedder of the parent is not used after a fork: BM25 and rows now, vectors
    # from the next retrieve or reindex. Only this and failures are logged: one line per
    # edit would grow the log for ever.
    index.notify("deferred index write: the index changed since the answer; updating it")
    index.update_locked(need_vectors=False)
