"""The freshness scan of a large wiki in a forked child, beside the search it guards.

At 50,000 files the stat walk (one lstat per file, about 3 µs of system call each on a
small VM) is the largest part of a no-change retrieve, and a thread cannot overlap it
with the search: both are Python holding the interpreter lock (measured slower, see
docs/retrieval.md). A forked child can. It compares the wiki with the manifest the
parent has just loaded, on another core, while the parent searches that manifest's
index. Nearly always nothing changed and the answer stands; otherwise the parent brings
the index up to date from the child's findings (no second walk) and searches again.

The child says so early: its first record is CHANGED and the file's path, written the
moment its walk meets a file whose stat differs from the manifest's, or NO_HINT once the
walk is done without one. The search checks announced() between its stages (BM25,
vectors, files) and abandons a snapshot the child has already found stale. It does not
wait for the rest of the walk (at 50,000 files most of it: a one-file edit is usually
met long before the end): it indexes the named file at once (early(), a normal locked
update of that one file, or, for a deferring retrieve, that file laid over the index and
written after the answer: index/deferred.py) and searches the updated index while the
child walks on. The
findings, which decide, come after: when they name nothing the early update does not
hold (covers()), the answer stands; otherwise the rest is indexed from them and the
search runs once more. So the edit's update and search overlap the walk that a
no-change retrieve also waits for, instead of following it.

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
import struct
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import freshness
from . import manifest as st
from .freshness import ScanChanges

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
_LENGTH = struct.Struct("<I")  # after CHANGED: the length of the file's path, then the path


class PendingScan:
    """A scan running in a child process; result() waits for its findings."""

    def __init__(self, pid: int, fd: int, state: st.State, args: SnapshotArgs):
        self.pid, self.fd, self.state = pid, fd, state
        self.args = args  # the snapshot() arguments a confirmation repeats
        self._head: bytes | None = None  # the child's first byte, once read
        self.hint: str | None = None  # the changed file the child named first
        self.applied = False  # the hinted file is indexed in the snapshot holding this scan

    @classmethod
    def early(cls, pid: int, fd: int) -> PendingScan:
        """A scan forked before its state was read (index/earlyscan.py): start() gives it
        the state and the arguments when it takes it."""
        return cls(pid, fd, None, None)  # type: ignore[arg-type]

    def announced(self) -> bool:
        """True once the child has found a change (or died): the snapshot is stale. Never waits."""
        if self._head is None:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0)
                if not ready:
                    return False
                self._head = os.read(self.fd, 1)
                if self._head == CHANGED:
                    self.hint = self._read_hint()
            except OSError:  # closed: settled already
                return False
        return self._head != NO_HINT  # CHANGED, or b"" when the child died before a word

    def _read_hint(self) -> str | None:
        """The path after CHANGED: one write of the child's, so in the pipe already."""
        head = self.read_exactly(_LENGTH.size)
        if head is None:
            return None
        path = self.read_exactly(_LENGTH.unpack(head)[0])
        return None if path is None else os.fsdecode(path)

    def read_exactly(self, n: int, timeout: float = CHILD_TIMEOUT_S) -> bytes | None:
        """The next n bytes from the child (waiting at most timeout seconds), or None."""
        data = b""
        until = time.monotonic() + timeout
        while len(data) < n and (left := until - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            chunk = os.read(self.fd, n - len(data)) if ready else b""
            if not chunk:
                return None
            data += chunk
        return data if len(data) == n else None

    def result(self) -> tuple[ScanChanges, dict] | None:
        """(changes, stats of the changed and touched files), or None if the child failed."""
        until = time.monotonic() + CHILD_TIMEOUT_S
        ok = False
        try:
            # The head record first, waiting for it: a word that comes now names a file
            # before the findings, and must not be read as a part of them.
            while self._head is None and not self.announced():
                if self._head is not None or until <= time.monotonic():
                    break
                select.select([self.fd], [], [], until - time.monotonic())
            chunks: list[bytes] = [self._head or b""]
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


def start(
    root: Path, state: st.State, args: SnapshotArgs, signature: tuple | None = None
) -> PendingScan | None:
    """Fork a child scanning root against state, or None when a scan in-process is better.

    signature: state.pkl's (inode, mtime_ns, size) when state was read; a child the
    retrieve started before its imports (index/earlyscan.py) that read the same file is
    taken instead of forking another.
    """
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return None
    if len(state.files) < SPECULATE_MIN_FILES:
        return None
    from .earlyscan import take

    early = take(root, signature)
    if early is not None:
        early.state, early.args = state, args
        return early
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
            scan_in_child(w, root, state)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(w)
    return PendingScan(pid, r, state, args)


def scan_in_child(w: int, root: Path, state: st.State) -> None:
    """The child's part: the scan, its first word as soon as it meets a change, the findings."""
    told = []

    def tell(rel: str) -> None:
        path = os.fsencode(rel)
        # one write into an empty pipe, far below its 64 KiB: never blocks, never split
        os.write(w, CHANGED + _LENGTH.pack(len(path)) + path)
        told.append(True)

    changes, stats = freshness.scan(root, state, on_change=tell)
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


def speculate(
    snap: Snapshot, args: SnapshotArgs, need_vectors: bool, signature: tuple | None = None
) -> Snapshot | None:
    """snap opened with a scan of its wiki running beside it, or None (scan in-process).

    signature: state.pkl's when snap.state was read (see start)."""
    pending = start(snap.root, snap.state, args, signature)
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
    """True when snap's scan has announced a change snap does not hold: its search can be abandoned."""
    pending = snap.pending_scan
    return pending is not None and not pending.applied and pending.announced()


def settle(index: Index, snap: Snapshot) -> Snapshot:
    """The snapshot to search instead of the stale snap: the named file indexed now, or, when
    that cannot be done at once, the index brought up to date from the child's findings."""
    fresh = early(index, snap)
    return fresh if fresh is not None else confirm(index, snap)


def early(index: Index, snap: Snapshot) -> Snapshot | None:
    """snap with the file the child named indexed, its scan still running; None when not now.

    Not now: no path was named (a dead child), another writer holds the lock or has
    committed since. The update is an ordinary one of that file alone, from the parent's
    own stat and hash of it; the child's findings are checked against it in confirm().
    """
    pending = snap.pending_scan
    if pending is None or pending.applied or pending.hint is None:
        return None
    changes, stats = freshness.scan_paths(index.root, pending.state, [pending.hint])
    if not changes:  # the parent finds it as the manifest has it: nothing to index yet
        pending.applied = True
        return snap
    need_vectors, inline_limit, _, status = pending.args
    fresh = index.snapshot_now(need_vectors, inline_limit, status, (pending.state, changes, stats))
    if fresh is None:
        return None
    snap.pending_scan = None
    snap.close()
    pending.applied = True
    fresh.pending_scan = pending
    return fresh


def covers(state: st.State, hint: str | None, changes: ScanChanges, stats: dict) -> bool:
    """Whether state holds every change the child found: each file as the child saw it.

    The child compared the wiki with the state before the early update, which changed
    only the hinted file; that file must be among the findings (else it changed again,
    or vanished, while the two looked) and every finding must match state's entry.
    """
    if hint is not None and hint not in changes.changed and hint not in changes.touched:
        return False
    return not _unheld(state, changes, stats)


def _unheld(state: st.State, changes: ScanChanges, stats: dict) -> list[str]:
    """The files whose finding state's entry does not match."""
    files = state.files
    out = [rel for rel in changes.deleted if rel in files]
    for rel in changes.changed:
        entry = files.get(rel)
        found = stats.get(rel), changes.hashes.get(rel)
        if entry is None or ((entry.size, entry.mtime_ns), entry.sha256) != found:
            out.append(rel)
    for rel, seen in changes.touched.items():
        entry = files.get(rel)
        facts = (seen.size, seen.mtime_ns, seen.sha256)
        if entry is None or (entry.size, entry.mtime_ns, entry.sha256) != facts:
            out.append(rel)
    return out


def _rest(changes: ScanChanges, hint: str) -> ScanChanges:
    """The findings without the hinted file (which the early update holds)."""
    return ScanChanges(
        changed=[rel for rel in changes.changed if rel != hint],
        deleted=list(changes.deleted),
        touched={rel: e for rel, e in changes.touched.items() if rel != hint},
        hashes={rel: h for rel, h in changes.hashes.items() if rel != hint},
        started_ns=changes.started_ns,
    )


def confirm(index: Index, snap: Snapshot) -> Snapshot:
    """snap itself when its scan found nothing it does not hold, else a fresh snapshot of index.

    A snapshot without a scan running is returned as it is. Otherwise, when the wiki
    changed beyond what snap holds (or the child failed), snap is closed and the index
    brought up to date from the child's findings, without a second walk.
    """
    pending, snap.pending_scan = snap.pending_scan, None
    if pending is None:
        return snap
    found = pending.result()
    need_vectors, inline_limit, deadline, status = pending.args
    if not pending.applied:
        if found is not None and not found[0]:
            from .writing import settle

            settle(index, snap.state, found[0])
            return snap  # nothing changed: the answer stands (or is searched in full now)
        snap.close()
        prescanned = (pending.state, *found) if found is not None else None
        return index.snapshot(need_vectors, inline_limit, deadline, status, prescanned=prescanned)
    if found is not None and covers(snap.state, pending.hint, *found):
        return snap  # the early update held everything the walk found
    prescanned = None
    hint = pending.hint
    if found is not None and hint is not None and covers(snap.state, hint, *_only(found, hint)):
        # the hinted file as the child saw it: the rest of the findings still hold for snap's
        # state (Index.snapshot uses them only while that state is the committed one)
        prescanned = (snap.state, _rest(found[0], hint), found[1])
    snap.close()
    return index.snapshot(need_vectors, inline_limit, deadline, status, prescanned=prescanned)


def _only(found: tuple[ScanChanges, dict], hint: str) -> tuple[ScanChanges, dict]:
    """The findings about the hinted file alone."""
    changes, stats = found
    return (
        ScanChanges(
            changed=[r for r in changes.changed if r == hint],
            touched={r: e for r, e in changes.touched.items() if r == hint},
            hashes={r: h for r, h in changes.hashes.items() if r == hint},
        ),
        stats,
    )
