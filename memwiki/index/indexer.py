"""Keeping the sidecar index fresh: reading it, incremental updates, full builds, locking, repair.

What is written, and in which order, is in index/writing.py.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import StateError, as_storage_error
from . import bm25, freshness, races, segments, writing
from . import manifest as st
from .embedders import Embedders
from .freshness import ScanChanges
from .progressive import too_large_to_wait
from .snapshot import Snapshot
from .writing import UpdateReport

READER_WAIT_S = 5.0  # how long a reader waits for a writer before using the older index
ITEMS_PER_FILE_GUESS = 5  # for sizing a first build before any file is chunked


class IndexBusy(StateError):
    """No index to read yet, and another process is building it (only with a deadline)."""


class _NotNow(Exception):
    """snapshot_now: the findings are for another state, or the lock is held."""


def print_to_stderr(message: str) -> None:
    """Progress and warnings of index work: one `memwiki: ` line on stderr."""
    print(f"memwiki: {message}", file=sys.stderr)


class Index:
    """The sidecar index of one wiki."""

    def __init__(
        self,
        wiki,
        config=None,
        notify: Callable[[str], None] = print_to_stderr,
        embedders: Embedders | None = None,
    ):
        """embedders: the ones a longer-lived owner keeps (Wiki.retrieve); else this index's own."""
        self.wiki = wiki
        self.root: Path = wiki.root
        self.directory: Path = wiki.sidecar / "index"
        # The config travels with the wiki; an explicit one (tests, eval) takes precedence.
        self.config = config if config is not None else wiki.config
        self.notify = notify
        # A retrieve loads the model in its vector thread while the index may need it too:
        # Embedders takes a lock.
        self._embedders = embedders if embedders is not None else Embedders()
        self._embedder_note = ""
        self._loaded: tuple[tuple, st.State] | None = None
        # A few edited files are laid over the committed index and written after the
        # answer (index/deferred.py): retrieve(defer=True) sets it, its result writes them.
        self.defer_writes = False

    # ------------------------------------------------------------ embedder

    def embedder(self, threads: int | None = None):
        """The configured embedder (loaded once), or None with a reason in embedder_note."""
        embedder, self._embedder_note = self._embedders.get(self.config, self.wiki.sidecar, threads)
        return embedder

    @property
    def embedder_note(self) -> str:
        """Why there is no embedder, or what it is."""
        return self._embedder_note

    @property
    def embedder_loaded(self) -> bool:
        """True once embedder() has run in this process (the model is then warm)."""
        return self._embedders.loaded

    def model_key(self, embedder) -> dict:
        """The {provider, model, dim} vectors of this embedder carry."""
        return {"provider": embedder.provider, "model": embedder.model, "dim": int(embedder.dim)}

    def vectors_wanted(self, state: st.State) -> bool:
        """True when a vector search on state would need embedding work first."""
        return self._vectors_wanted(state)

    # ------------------------------------------------------------ reading

    @property
    def state_path(self) -> Path:
        """The index's commit point."""
        return self.directory / "state.pkl"

    def lock(self):
        """The one-writer lock of the index."""
        from ..lock import FileLock

        def waiting() -> None:
            self.notify("waiting for another memwiki process that is updating the index")

        return FileLock(self.wiki.sidecar / "index.lock", timeout=600, on_wait=waiting)

    def _check(self, state: st.State | None) -> str | None:
        """Why this state cannot be used as it is, or None."""
        if state is None:
            return "no index yet"
        if not (self.directory / state.bm25_dir).is_dir():
            return "missing BM25 directory"
        if bm25.latest_generation(self.directory / state.bm25_dir) != state.whoosh_generation:
            return "BM25 index does not match the manifest"
        for name, rows in state.segments:
            dim = state.embedder["dim"]  # type: ignore[index]
            problem = segments.segment_problem(self.directory / name, rows, dim)
            if problem is not None:
                return problem
        if state.segments and sum(r for _, r in state.segments) != state.physical_rows:
            return "vector segments do not match the manifest"
        return None

    def _load(self, strict: bool = False) -> tuple[st.State | None, str | None]:
        """The committed state and why it cannot be used (or None); unpickled once per version.

        strict: a manifest base that vanished raises FileNotFoundError (a reader retries
        on the newer state) instead of being reported as damage.
        """
        try:
            info = self.state_path.stat()
            signature = (info.st_ino, info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            return None, "no index yet"
        state: st.State | None
        if self._loaded is not None and self._loaded[0] == signature:
            state = self._loaded[1]
        else:
            try:
                state = st.load(self.state_path)
            except st.OtherVersionIndex as exc:
                return None, f"index {exc}"
            except st.DamagedIndex as exc:
                return None, str(exc)
            except FileNotFoundError:
                if strict:
                    raise
                return None, "missing manifest base"
            if state is not None:
                self._loaded = (signature, state)
        return state, self._check(state)

    def committed_state(self) -> tuple[st.State | None, str | None]:
        """The committed state and why it cannot be used (or None), without updating it."""
        return self._load()

    def snapshot(
        self,
        need_vectors: bool = True,
        inline_limit: int | None = None,
        deadline: float | None = None,
        status: dict | None = None,
        speculate: bool = False,
        prescanned: tuple | None = None,
    ) -> Snapshot:
        """A fresh, complete index, its files open: brought up to date first unless another writer holds it.

        need_vectors: embed what has no vector yet. With inline_limit, that is done only
        when about that many items or fewer need it; larger work is left (BM25 is brought
        up to date alone) for a background reindex. deadline (time.monotonic()) bounds
        how long a reader waits for another writer. status, when given, records what
        this call is doing ("stage": "reading" or "updating"), for a caller that may
        give up waiting.

        speculate: a large wiki's snapshot may come before its freshness scan is done
        (index/forkscan.py); search it, then forkscan.confirm(). prescanned: its findings.
        """
        status = status if status is not None else {}
        args = (need_vectors, inline_limit, deadline, status)
        return races.retrying(
            lambda: self._snapshot_once(*args, speculate=speculate, pre=prescanned),
            lambda: self._snapshot_once(*args, strict=False),
            self._forget,
            self.directory,
        )

    def _forget(self) -> None:
        """Read state.pkl again at the next snapshot (its files changed under us)."""
        self._loaded = None

    def snapshot_now(
        self, need_vectors: bool, inline_limit: int | None, status: dict, prescanned: tuple
    ) -> Snapshot | None:
        """snapshot() from prescanned findings, or None unless that can be done at once.

        None: the state they were made against is no longer the committed one, or another
        writer holds the lock (forkscan.early: the caller then waits for the full scan).
        """
        try:
            return self._snapshot_once(
                need_vectors, inline_limit, None, status, pre=prescanned, now=True
            )
        except _NotNow:
            return None
        except FileNotFoundError:  # a writer replaced the generation: not now
            self._loaded = None
            return None

    def _remember(self, state: st.State) -> None:
        """Keep the state just committed as the one _load returns while state.pkl is unchanged.

        A later snapshot in this process then gets the same object, so findings made against
        it (forkscan.confirm) are still recognised as such; under the lock, so it is ours.
        """
        try:
            info = self.state_path.stat()
        except OSError:
            return
        self._loaded = ((info.st_ino, info.st_mtime_ns, info.st_size), state)

    def _snapshot_once(
        self,
        need_vectors,
        inline_limit,
        deadline,
        status,
        strict=True,
        speculate=False,
        pre=None,
        now=False,
    ) -> Snapshot:
        """One attempt; strict: a vanished file raises FileNotFoundError (a race to retry).

        now (snapshot_now): raise _NotNow rather than scan again or wait for the lock.
        """
        status["stage"] = "reading"
        state, problem = self._load(strict=strict)
        embed = need_vectors
        scanned = None
        if now and (problem is not None or not pre or pre[0] is not state):
            raise _NotNow
        if problem is None:
            assert state is not None  # no problem means there is a state
            # A progressive reader leaves the model check to its vector thread, so that a
            # fresh index is read without loading the model first.
            check_model = inline_limit is None
            if speculate and not pre and self._unchanged_is_fresh(state, embed, inline_limit):
                from .forkscan import speculate as scan_beside

                args = (need_vectors, inline_limit, deadline, status)
                read = self._loaded[0] if self._loaded and self._loaded[1] is state else None
                snap = scan_beside(self._snap(state, strict=strict), args, need_vectors, read)
                if snap is not None:
                    return snap
            if speculate and not pre:  # scanned here: a scan the CLI started is not needed
                from .earlyscan import take

                take(self.root, None)
            changes, stats = (
                pre[1:] if pre and pre[0] is state else freshness.scan(self.root, state)
            )
            scanned = (state, changes, stats)
            if inline_limit is not None and (large := too_large_to_wait(changes, stats)):
                self.notify(f"{large}; results may be behind the wiki")  # a background job's
                return self._snap(state, strict, behind=True).open(vector_file=need_vectors)
            if inline_limit is not None and embed:
                embed = self._embed_estimate(state, changes) <= inline_limit
            wanted = embed and self._vectors_wanted(state, check_model)
            if not changes and not wanted and not state.upgraded:
                writing.settle(self, state, changes)
                return self._snap(state, strict=strict).open(vector_file=need_vectors)
            if self.defer_writes and not wanted:
                from . import deferred

                later = deferred.snapshot(self, state, changes, stats, embed, strict)
                if later is not None:
                    return later.open(vector_file=need_vectors)
        else:
            status["needs_build"] = True
            if inline_limit is not None and embed:
                # A first build or a repair: a small wiki is embedded at once, a larger one
                # gets BM25 now and its vectors from the background build.
                embed = len(st.walk(self.root)) * ITEMS_PER_FILE_GUESS <= inline_limit
        lock = self.lock()
        try:
            got = lock.try_acquire()
        except OSError as exc:  # a read-only or full sidecar: answer from what is there
            return self._unwritable(exc, state, problem, strict, need_vectors)
        if not got:
            if now:
                raise _NotNow
            waited = self._wait(lock, forever=problem is not None, deadline=deadline)
            if not waited:
                if problem is not None:
                    status["needs_build"] = True
                    raise IndexBusy("another process is building the index; try again shortly")
                self.notify("another process is updating the index; results may be slightly behind")
                return self._snap(state, strict, stale=True).open(vector_file=need_vectors)
        try:
            status["stage"] = "updating"
            try:
                report = self._update_locked(embed, scanned=scanned)
            except OSError as exc:  # state.pkl is written last: the old state still stands
                return self._unwritable(exc, state, problem, strict, need_vectors)
            if report.state is not None:
                self._remember(report.state)
            snap = self._snap(
                report.state, strict, updated=len(report.indexed) + len(report.removed)
            )
            snap._matrix = report.matrix
            return snap.open(vector_file=need_vectors)
        finally:
            status["stage"] = "reading"
            lock.release()

    def _unwritable(self, exc: OSError, state, problem, strict, need_vectors) -> Snapshot:
        """The committed index as it is, when the sidecar cannot be written (read-only, full):
        with more edits than a reader lays over it, retrieve and the hook answered nothing
        ("Permission denied: .memwiki/index.lock", exit 5) beside a complete index."""
        why = as_storage_error(exc)
        if problem is not None or why is None:
            raise exc  # nothing complete to read, or not the machine saying no
        self.notify(f"the index cannot be updated ({why}); results may be behind the wiki")
        return self._snap(state, strict, stale=True).open(vector_file=need_vectors)

    def _unchanged_is_fresh(self, state: st.State, embed: bool, inline_limit) -> bool:
        """Whether a scan finding nothing changed would return the state as it is."""
        if state.upgraded:  # the upgrade is written by the update path
            return False
        estimate = self._embed_estimate(state, ScanChanges())
        embed = embed and (inline_limit is None or estimate <= inline_limit)
        return not (embed and self._vectors_wanted(state, inline_limit is None))

    def _embed_estimate(self, state: st.State, changes: ScanChanges) -> int:
        """About how many items a vector-complete update would embed now."""
        if not state.vectors_file:
            return len(state.rows) + len(changes.changed) * 5
        per_file = len(state.rows) / max(1, len(state.files))
        return len(state.unembedded) + int(len(changes.changed) * per_file + 0.5)

    def _wait(self, lock, forever: bool, deadline: float | None = None) -> bool:
        until = time.monotonic() + (lock.timeout if forever else READER_WAIT_S)
        until = min(until, deadline) if deadline is not None else until
        while time.monotonic() < until:
            if lock.try_acquire():
                return True
            time.sleep(0.05)
        return False

    def _vectors_wanted(self, state: st.State, check_model: bool = True) -> bool:
        """True when a vector search would need embedding work first."""
        if not check_model and state.vectors_file and not state.unembedded:
            return False
        if state.unembedded:
            return self.embedder() is not None
        if state.vectors_file is None:
            return bool(state.rows) and self.embedder() is not None
        emb = self.embedder()
        return emb is not None and state.embedder != self.model_key(emb)

    def _snap(self, state, strict: bool = True, stale=False, updated=0, behind=False) -> Snapshot:
        return Snapshot(
            self.root,
            self.directory,
            state,
            stale=stale or behind,
            behind=behind,
            updated_files=updated,
            strict=strict,
        )

    # ------------------------------------------------------------ writing

    def update(self, full: bool = False, need_vectors: bool = True) -> UpdateReport:
        """Bring the index up to date (or rebuild it whole), waiting for the writer lock.

        This is the work that may take longer (`memwiki reindex`, the pre-commit and
        background reindex): it also merges the small BM25 segments that readers' inline
        updates leave (index/bm25_update.py).
        """
        with self.lock():
            return self._update_locked(need_vectors, full=full, merge=True)

    def update_locked(self, need_vectors: bool) -> UpdateReport:
        """update() by a process that holds the writer lock already (index/deferred.py)."""
        return self._update_locked(need_vectors)

    def _update_locked(
        self,
        need_vectors: bool,
        full: bool = False,
        scanned: tuple | None = None,
        merge: bool = False,
    ) -> UpdateReport:
        """Update under the lock; scanned = (state, changes, stats) of a scan made just before.

        The scan is reused when no other writer committed since (the same state object):
        a stat walk of a large wiki is the largest part of a small update. merge: merge
        the small BM25 segments now (see update()).
        """
        state, problem = self._load()
        if problem and problem != "no index yet":
            what = (
                problem if problem.startswith("index written by") else f"index damaged ({problem})"
            )
            self.notify(f"{what}; rebuilding it")
        if full or problem:
            return writing.build(self, state, need_vectors)
        assert state is not None  # no problem means there is a state
        if state.upgraded:  # read from an older format: persisted before anything else
            from .upgrade import persist

            if persist(self.state_path, self.root, state, self.notify):
                scanned = None  # the scan below must see the files it marked
        if scanned is not None and scanned[0] is state:
            changes, stats = scanned[1], scanned[2]
        else:
            changes, stats = freshness.scan(self.root, state)
        # With files to re-index the embedder is asked for only after they are chunked
        # (writing.apply): a retrieve's vector thread may be loading the model meanwhile.
        edited = bool(changes.changed or changes.deleted)
        if not (edited or (need_vectors and self._vectors_wanted(state))):
            merged = merge and writing.merge_bm25(self, state)
            if changes.touched:  # same bytes, new stat: remember it, nothing to re-index
                state.files_delta.update(changes.touched)
            if changes.touched or merged:
                state.changed()
                state.written_ns = changes.racy_from(state)
                st.save(self.state_path, state)
            return UpdateReport(state=state)
        return writing.apply(self, state, changes, stats, need_vectors, merge)
