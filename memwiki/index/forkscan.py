"""The freshness scan of a large wiki in a forked child, beside the search it guards.

At 50,000 files the stat walk (one lstat per file, about 3 µs of system call each on a
small VM) is the largest part of a no-change retrieve, and a thread cannot overlap it
with the search: both are Python holding the interpreter lock (measured slower, see
docs/retrieval.md). A forked child can. It compares the wiki with the manifest the
parent has just loaded, on another core, while the parent searches that manifest's
index. Nearly always nothing changed and the answer stands; otherwise the parent brings
the index up to date from the child's findings (no second walk) and searches again.

The child says so early: its first byte is CHANGED, written the moment its walk meets a
file whose stat differs from the manifest's, or NO_HINT once the walk is done without
one. The search checks announced() between its stages (BM25, vectors, files) and
abandons a snapshot the child has already found stale, so that an edit costs one search,
not two (the findings, which decide, come after the hint).

Only on Linux (fork of a threaded process is unsafe on macOS), and only for wikis large
enough that the scan costs more than the fork. The child imports nothing (a module lock
held by another thread at the fork would never be released in the child), writes its
findings to a pipe and leaves with os._exit; any failure or timeout makes the parent
scan in-process, as it always did.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import manifest as st

if TYPE_CHECKING:
    from .indexer import Index
    from .snapshot import Snapshot

#: Index.snapshot's need_vectors, inline_limit, deadline and status, repeated by confirm()
SnapshotArgs = tuple[bool, int | None, float | None, dict]
#: Below this many files the scan takes a few ms, less than forking a large process.
SPECULATE_MIN_FILES = 5_000
#: How long the parent waits for the child's findings before scanning by itself: the walk
#: takes well under a second at 50,000 files; a child still busy after this is stuck.
CHILD_TIMEOUT_S = 5.0
CHANGED, NO_HINT = b"!", b"."  # the child's first byte (see the module docstring)


class PendingScan:
    """A scan running in a child process; result() waits for its findings."""

    def __init__(self, pid: int, fd: int, state: st.State, args: SnapshotArgs):
        self.pid, self.fd, self.state = pid, fd, state
        self.args = args  # the snapshot() arguments a confirmation repeats
        self._head: bytes | None = None  # the child's first byte, once read

    def announced(self) -> bool:
        """True once the child has found a change (or died): the snapshot is stale. Never waits."""
        if self._head is None:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0)
                if not ready:
                    return False
                self._head = os.read(self.fd, 1)
            except OSError:  # closed: settled already
                return False
        return self._head != NO_HINT  # CHANGED, or b"" when the child died before a word

    def result(self) -> tuple[st.ScanChanges, dict] | None:
        """(changes, stats of the changed and touched files), or None if the child failed."""
        chunks: list[bytes] = [self._head or b""]
        until = time.monotonic() + CHILD_TIMEOUT_S
        ok = False
        try:
            while (left := until - time.monotonic()) > 0:
                ready, _, _ = select.select([self.fd], [], [], left)
                if not ready:
                    break
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    ok = True
                    break
                chunks.append(chunk)
        finally:
            os.close(self.fd)
            self._reap(kill=not ok)
        data = b"".join(chunks)
        if not ok or data[:1] not in (CHANGED, NO_HINT):
            return None
        try:
            found = pickle.loads(data[1:])
        except Exception:  # a child killed half-way: scan in-process
            return None
        return found if isinstance(found, tuple) and len(found) == 2 else None

    def cancel(self) -> None:
        """Stop the child (the snapshot is closed without a confirmation)."""
        os.close(self.fd)
        self._reap(kill=True)

    def _reap(self, kill: bool) -> None:
        if kill:
            with contextlib.suppress(OSError):
                os.kill(self.pid, 9)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def start(root: Path, state: st.State, args: SnapshotArgs) -> PendingScan | None:
    """Fork a child scanning root against state, or None when a scan in-process is better."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return None
    if len(state.files) < SPECULATE_MIN_FILES:
        return None
    import hashlib  # noqa: F401 - before the fork: the child hashes racy files

    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: scan, report, leave without running any exit handler
        code = 1
        try:
            os.close(r)
            told = []

            def tell() -> None:
                os.write(w, CHANGED)  # one byte into an empty pipe: never blocks
                told.append(True)

            changes, stats = st.scan(root, state, on_change=tell)
            if not told:
                os.write(w, NO_HINT)
            wanted = set(changes.changed) | set(changes.touched)
            data = pickle.dumps(
                (changes, {rel: stats[rel] for rel in wanted if rel in stats}),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            view = memoryview(data)
            while view:
                view = view[os.write(w, view) :]
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(w)
    return PendingScan(pid, r, state, args)


def speculate(snap: Snapshot, args: SnapshotArgs, need_vectors: bool) -> Snapshot | None:
    """snap opened with a scan of its wiki running beside it, or None (scan in-process)."""
    pending = start(snap.root, snap.state, args)
    if pending is None:
        return None
    try:
        snap.open(vector_file=need_vectors)
    except BaseException:
        pending.cancel()
        raise
    snap.pending_scan = pending
    return snap


def stale(snap: Snapshot) -> bool:
    """True when snap's scan has already announced a change: its search can be abandoned."""
    pending = snap.pending_scan
    return pending is not None and pending.announced()


def confirm(index: Index, snap: Snapshot) -> Snapshot:
    """snap itself when its scan found nothing changed, else a fresh snapshot of index.

    A snapshot without a scan running is returned as it is. Otherwise, when the wiki
    changed (or the child failed), snap is closed and the index brought up to date from
    the child's findings, without a second walk.
    """
    pending, snap.pending_scan = snap.pending_scan, None
    if pending is None:
        return snap
    found = pending.result()
    if found is not None and not found[0]:
        return snap  # nothing changed: the answer stands (or is searched in full now)
    snap.close()
    prescanned = (pending.state, *found) if found is not None else None
    need_vectors, inline_limit, deadline, status = pending.args
    return index.snapshot(need_vectors, inline_limit, deadline, status, prescanned=prescanned)
