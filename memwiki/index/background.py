"""One detached, lock-guarded background `memwiki reindex` that fills in missing vectors.

A retrieve that answered from BM25 because vectors were missing or stale starts it; the
process takes `.memwiki/reindex-background.lock` for its whole life, so however many
callers ask, one build runs, and a caller that finds the lock held starts nothing.
Its output (plain progress lines) goes to `.memwiki/logs/reindex.log`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

LOCK_NAME = "reindex-background.lock"
LOG_NAME = "reindex.log"


def lock_path(sidecar: Path) -> Path:
    """The lock the background build holds while it runs."""
    return Path(sidecar) / LOCK_NAME


def log_path(sidecar: Path) -> Path:
    """Where the background build writes its progress."""
    from ..layout import LOGS

    return Path(sidecar) / LOGS / LOG_NAME


def running(sidecar: Path) -> bool:
    """True while a background build holds its lock."""
    from ..lock import FileLock

    return FileLock(lock_path(sidecar)).is_held_elsewhere()


def start(wiki_root: Path, sidecar: Path) -> bool:
    """Start the background build unless one is running; True when a process was started."""
    if running(sidecar):
        return False
    reap()
    from ..logfile import open_log

    try:
        out = open_log(log_path(sidecar))
    except OSError:  # a log folder root owns (one `sudo memwiki`): the vectors were never
        out = os.open(os.devnull, os.O_WRONLY)  # built, each answer saying "being built"
    try:
        _STARTED.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memwiki",
                    "--wiki",
                    str(wiki_root),
                    "reindex",
                    "--background",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,  # outlives the caller and is not killed with it
                close_fds=True,
            )
        )
    finally:
        os.close(out)
    return True


# The builds this process started and has not reaped. Bug it prevents: the handle was
# dropped, so in a long-lived process a finished build stayed a zombie until Python's
# next subprocess launch. A cold command leaves before its build ends (init reaps it).
_STARTED: list[subprocess.Popen] = []


def reap() -> None:
    """Reap the background builds this process started that have finished."""
    _STARTED[:] = [proc for proc in _STARTED if proc.poll() is None]


def _complete(index) -> bool:
    from . import freshness

    state, problem = index.committed_state()
    if problem is not None:
        return False
    changes, _ = freshness.scan(index.root, state)
    return not changes and not index.vectors_wanted(state)


def run(index, notify) -> str:
    """The background build itself: BM25 first, then vectors embedded outside the writer lock.

    Embedding a whole wiki takes minutes; holding the writer lock that long would make
    every reader that sees an edit wait, so the vectors go to the embedding cache first
    and one short locked update takes them from there.
    """
    from ..lock import FileLock

    lock = FileLock(lock_path(index.wiki.sidecar))
    if not lock.try_acquire():
        return "another background reindex is running"
    try:
        from ..embed import prepare_model

        # A retrieve that ran the plain model file starts this build for the prepared copy
        # alone (embed/prepared.py); writing it here keeps 0.4 s off every answer.
        with contextlib.suppress(Exception):  # the copy only saves time
            if prepare_model(index.config):
                notify("background reindex: the prepared model is in place")
        if _complete(index):  # a build that ran meanwhile left nothing to do
            notify("background reindex: the index is already complete")
            return "complete"
        notify("background reindex: started")
        first = index.update(need_vectors=False)  # BM25 first: readers answer from it at once
        embedder = index.embedder()
        prefilled = 0
        if embedder is not None and first.state is not None:
            from .embedding import prefill_cache

            prefilled = prefill_cache(
                index.directory,
                index.root,
                first.state,
                embedder,
                index.model_key(embedder),
                notify,
            )
        report = index.update()  # under the lock: vectors come from the cache, quickly
        notify(
            f"background reindex: done ({len(first.indexed) + len(report.indexed)} files "
            f"indexed, {prefilled + report.embedded} items embedded)"
        )
        return "done"
    finally:
        lock.release()
