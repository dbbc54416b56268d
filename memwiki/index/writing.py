"""Writing the sidecar index: a full build, an incremental update, a merge. Under the writer lock.

Write order of an update (state.pkl last, as the commit point):
  1. a new vector segment `vectors-<gen>.npy` (only the rows this update wrote, or every
     row when it compacts, index/segments.py) and, when compacting, a new manifest base
     `rows-<gen>.pkl`;
  2. Whoosh commit (or a new Whoosh directory for a full build);
  3. `state.pkl` naming all of them;
  4. files no state of this or the previous generation names are removed.
A process killed before 3 leaves the previous state.pkl, whose files still exist, or
(killed between 2 and 3) a Whoosh generation the state does not name: the next
command sees the mismatch and rebuilds, taking vectors from the old segments.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import bm25, bm25_update, segments
from . import manifest as st
from .freshness import ScanChanges
from .reading import read_many, row_of

if TYPE_CHECKING:
    from .indexer import Index
    from .vectors import VectorBlock


@dataclass
class UpdateReport:
    """What an index update did."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    embedded: int = 0
    full: bool = False
    state: st.State | None = field(default=None, repr=False)  # the index as it now is
    matrix: object | None = field(default=None, repr=False)  # its vectors, when just written


def _chunk_many(index: Index, rels: list[str], hashes: dict, stats: dict, report: UpdateReport):
    items, files, projects, problems = read_many(index.root, rels, hashes, stats, index.notify)
    report.problems.update(problems)
    report.indexed.extend(rel for rel in rels if files[rel].indexed)
    return items, files, projects


def build(index: Index, old: st.State | None, need_vectors: bool) -> UpdateReport:
    """A new index of the whole wiki, beside the old one until the new state is committed."""
    report = UpdateReport(full=True)
    started = time.time_ns()  # the racy window runs from before the walk (ScanChanges)
    stats = st.walk(index.root)
    items, files, projects = _chunk_many(index, sorted(stats), {}, stats, report)
    gen = (old.generation if old else 0) + 1
    bm25_dir = f"bm25-{gen}"
    target = index.directory / bm25_dir
    if target.exists():
        shutil.rmtree(target)
    whoosh_gen = bm25.create(target, items)
    new = st.State(generation=gen, bm25_dir=bm25_dir, whoosh_generation=whoosh_gen)
    new.written_ns = started
    rows = [row_of(i, projects.get(i.path, ())) for i in items]
    plan = segments.Plan(True, rows)
    segments.apply_layout(new, None, plan, files)
    _write_vectors(index, old, new, plan, need_vectors, report, items)
    st.save(index.state_path, new, compact=True)
    segments.cleanup(index.directory, new, old)
    report.state = new
    return report


@dataclass
class Prepared:
    """An update worked out in memory (files chunked, rows laid out, vectors computed), not
    yet written: write() commits it; a reader may answer from it first (index/deferred.py)."""

    old: st.State
    new: st.State  # the state write() commits; until then its vectors are in `vectors`
    plan: segments.Plan
    items: list
    gone: set[str]  # the files whose old documents the update deletes
    report: UpdateReport
    need_vectors: bool
    vectors: VectorBlock | None = None  # when the index has vectors


def prepare(
    index: Index, old: st.State, changes: ScanChanges, stats: dict, need_vectors: bool
) -> Prepared:
    """Everything an update of the changed and deleted files computes before writing."""
    report = UpdateReport()
    items, changed_files, projects = _chunk_many(
        index, changes.changed, changes.hashes, stats, report
    )
    gone = set(changes.changed) | set(changes.deleted)
    report.removed = sorted(set(changes.deleted))
    new = st.State(generation=old.generation + 1, bm25_dir=old.bm25_dir)
    new.written_ns = changes.racy_from(old)
    new.whoosh_generation, new.bm25_deleted = old.whoosh_generation, old.bm25_deleted
    new.segments, new.embedder = list(old.segments), old.embedder
    # Kept while the base an older memwiki wrote is: without it every update made the next
    # reader look at the head of every file again (upgrade.recheck_plugin_notes).
    new.plugins_checked = old.plugins_checked
    added = [row_of(i, projects.get(i.path, ())) for i in items]
    emb = index.embedder() if need_vectors else None
    key = index.model_key(emb) if emb is not None else old.embedder
    held = None
    if key is not None:
        from .vectors import old_vectors  # numpy: not on the BM25-only path

        held = old_vectors(index.directory, old, key)
    plan = segments.plan_update(old, gone, added, emb is not None, key is None or held is not None)
    files = None
    if plan.compact:  # the whole manifest is written again: every entry, materialised
        files = {k: v for k, v in old.files.items() if k not in gone}
        files.update(changes.touched)
        files.update(changed_files)
    else:  # only the delta against the old base
        entries = {**changes.touched, **changed_files}
        new.files_delta, new.files_gone = st.file_delta(old, changes.deleted, entries)
    segments.apply_layout(new, old, plan, files)
    prepared = Prepared(old, new, plan, items, gone, report, need_vectors)
    if key is not None and not plan.compact:
        from .vectors import vector_block  # numpy: not on the BM25-only path

        prepared.vectors = vector_block(
            index.directory, index.root, old, plan, items, emb, key, index.notify, held
        )
        new.embedder = key
        new.unembedded_slots = set(prepared.vectors.missing)
        new.changed()
    return prepared


def write(index: Index, prepared: Prepared, merge: bool = False) -> UpdateReport:
    """Commit a prepared update: vectors, Whoosh, then state.pkl (see the module docstring).

    merge: merge Whoosh's small segments now (a reindex) rather than only once there are
    many of them (a reader's inline update, bm25_update).
    """
    old, new, plan, items, gone, report = (
        prepared.old, prepared.new, prepared.plan, prepared.items, prepared.gone, prepared.report
    )  # fmt: skip
    need = prepared.need_vectors
    _write_vectors(index, old, new, plan, need, report, items, prepared.vectors)
    if gone or items:
        # Whoosh's own count of the deleted documents its segments still hold: a merge
        # drops those of the segments it merges.
        optimize = bm25.should_optimize(len(new.rows), old.bm25_deleted + plan.removed)
        new.whoosh_generation, new.bm25_deleted = bm25_update.update(
            index.directory / old.bm25_dir, sorted(gone), items, optimize, merge
        )
    elif merge:
        merge_bm25(index, new)
    st.save(index.state_path, new, compact=plan.compact)
    segments.cleanup(index.directory, new, old)
    report.state = new
    return report


def apply(
    index: Index,
    old: st.State,
    changes: ScanChanges,
    stats: dict,
    need_vectors: bool,
    merge: bool = False,
) -> UpdateReport:
    """Re-index the changed files and drop the deleted ones (prepare, then write)."""
    return write(index, prepare(index, old, changes, stats, need_vectors), merge)


def merge_bm25(index: Index, state: st.State) -> bool:
    """Merge the small Whoosh segments of state's index (state updated, not saved); True if it did."""
    merged = bm25_update.merge(index.directory / state.bm25_dir)
    if merged is None:
        return False
    state.whoosh_generation, state.bm25_deleted = merged
    return True


def _write_vectors(index: Index, old, new, plan, need_vectors, report, items, computed=None):
    """Write the vectors of plan: kept rows from the old segments, others from cache or
    embedder (computed: vector_block's result of a prepared update)."""
    if computed is None:
        emb = index.embedder() if need_vectors else None
        key = index.model_key(emb) if emb is not None else (old.embedder if old else None)
    else:
        emb, key = None, new.embedder
    if key is None:
        return  # no embedder and no vectors before: BM25 only
    from .vectors import write_vectors  # numpy: not on the BM25-only path

    report.embedded, report.matrix = write_vectors(
        index.directory, index.root, old, new, plan, items, emb, key, index.notify, computed
    )


# A scan that read again at least this many files of the racy window, all unchanged, moves
# the window past them (settle): fewer cost less to read than state.pkl costs to write.
SETTLE_MIN = 64


def settle(index: Index, state: st.State, changes: ScanChanges) -> None:
    """Move state's racy window to the start of a scan that found nothing changed, when
    that takes many files out of it; skipped when another writer holds the lock.

    Files written just before a build (a clone, a checkout, a sync's merge) were in the
    window of the build's scan, and no later scan moved it: every retrieve read them all
    again until the next edit (+95 ms a retrieve at 2,000 files, 2,000 files hashed).
    """
    if changes or changes.settles < SETTLE_MIN:
        return
    lock = index.lock()
    try:
        if not lock.try_acquire():
            return
    except OSError:  # a read-only sidecar: read them again next time
        return
    try:
        if index.committed_state()[0] is state:  # no other writer committed since
            state.written_ns = changes.started_ns
            st.save(index.state_path, state)
    finally:
        lock.release()
