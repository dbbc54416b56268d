"""The physical layout of an index update: append a small segment, or compact.

Item rows and their vectors live in physical slots: the base (written at the last
compaction) followed by the slots every later update appended. An edit tombstones the
slots of the rows it replaces and appends the new rows in one new vector segment, so it
writes work proportional to what changed. The live slots, in physical order, are the rows
a reader sees (`State.rows`); because kept rows keep their order and new rows always go
at the end, row n of the live view is the n-th live slot.

Compaction rewrites the manifest base and one vector file of exactly the live rows. It
happens on a full build, when the vectors must be rebuilt (no vectors yet, another
model), and when tombstones and appended rows grow past a share of the index: then a
compaction costs about as much as all the appends it saves up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import manifest as st

COMPACT_MIN = 4096  # appended + dead slots tolerated before compacting, whatever the size
COMPACT_SHARE = 0.05  # ... or this share of the physical slots, if larger
MAX_SEGMENTS = 8  # vector files beyond the base before the appended ones are merged


@dataclass
class Plan:
    """What an update writes: the rows whose vectors are written now, and where each comes from.

    Slots are physical: the old state's for `source` and `departed`, the new layout's
    for `dead` and `unembedded`.
    """

    compact: bool
    # rows written now: every live row when compacting, else the appended ones
    rows: list[st.Row]
    first_slot: int = 0  # physical slot of rows[0] in the new layout
    # index in rows -> old physical slot whose vector it keeps
    source: dict[int, int] = field(default_factory=dict)
    departed: list[int] = field(default_factory=list)  # old slots whose rows left the index
    dead: set[int] = field(default_factory=set)  # tombstones of the new layout
    unembedded: set[int] = field(default_factory=set)  # kept rows that stay without a vector
    removed: int = 0  # old live rows that left (replaced or deleted)


def needs_compaction(old: st.State, removed: int, appended: int) -> bool:
    """True when the delta after this update would be large enough to rewrite whole."""
    physical = old.physical_rows + appended
    delta = len(old.extra) + appended + len(old.dead) + removed
    return delta > max(COMPACT_MIN, COMPACT_SHARE * physical)


def plan_update(
    old: st.State, gone: set[str], added: list[st.Row], embedding: bool, vectors_reusable: bool
) -> Plan:
    """The layout of an update that drops the rows of files `gone` and adds rows `added`.

    embedding: this update fills in vectors, so kept rows still without one move to the
    appended segment. vectors_reusable: the old vectors are of the model in use. Without
    compaction the work is proportional to the files changed, not to the index.
    """
    rows = old.rows
    departed = rows.slots_of(gone)
    leaving = set(departed)
    moved = sorted(s for s in old.unembedded_slots if s not in leaving) if embedding else []
    removed = len(departed) + len(moved)
    compact = not vectors_reusable or needs_compaction(old, removed, len(moved) + len(added))
    if compact:
        skip = old.dead | leaving
        keep = [s for s in range(old.physical_rows) if s not in skip]
        source = {n: s for n, s in enumerate(keep) if s not in old.unembedded_slots}
        unembedded = set() if embedding else set(range(len(keep))) - set(source)
        new_rows = [rows.at_slot(s) for s in keep] + added
        return Plan(
            True, new_rows, 0, source, departed, unembedded=unembedded, removed=len(departed)
        )
    return Plan(
        False,
        [rows.at_slot(s) for s in moved] + added,
        old.physical_rows,
        departed=departed,
        dead=old.dead | leaving | set(moved),
        unembedded=old.unembedded_slots - leaving - set(moved),
        removed=len(departed),
    )


def apply_layout(
    new: st.State, old: st.State | None, plan: Plan, files: dict[str, st.FileEntry] | None
) -> None:
    """Give new the rows and physical layout of plan (the base is the old one unless compacting).

    files: when compacting, every file entry of the new manifest; else None (new already
    carries its delta of files).
    """
    if plan.compact or old is None:
        new.base, new.base_data = None, None
        new.files_delta, new.files_gone = dict(files or {}), set()
        new.extra, new.dead = plan.rows, set()
    else:
        new.base, new.base_data = old.base, old.base_data
        new.extra, new.dead = old.extra + plan.rows, plan.dead
    new.unembedded_slots = set(plan.unembedded)
    new.changed()


def segment_problem(path: Path, rows: int, dim: int) -> str | None:
    """Why a vector segment is not the (rows, dim) float32 .npy the state names, or None.

    Its size and header, read without numpy (BM25-only reads never import it). Bug it
    prevents: a header zeroed or overwritten at the right size failed every vector search
    (each answer BM25 only, for good) while `reindex`, seeing the right size, called the
    index complete.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
            size = os.fstat(fh.fileno()).st_size
    except OSError:
        return "missing vector matrix"
    # .npy = a small header (a multiple of 64 bytes) + the float32 data
    data = rows * dim * 4
    if not data + 64 <= size <= data + 4096:
        return "vector matrix has the wrong size"
    wide = head[6:7] in (b"\x02", b"\x03")  # header length in 4 bytes from version 2 on
    start = 12 if wide else 10
    length = int.from_bytes(head[8:start], "little")
    header = head[start : start + length]
    wanted = (b"'descr': '<f4'", b"'fortran_order': False", f"'shape': ({rows}, {dim})".encode())
    if head[:6] != b"\x93NUMPY" or not all(w in header for w in wanted):
        return "vector matrix header is damaged"
    return None


def cleanup(directory: Path, state: st.State, old: st.State | None) -> None:
    """Remove vector segments, manifest bases and Whoosh directories no recent state names.

    The previous state's files stay: a reader that loaded it a moment ago still opens them.
    """
    import shutil

    states = [state] if old is None else [state, old]
    keep = {name for s in states for name, _ in s.segments} | {s.base for s in states}
    for pattern in ("vectors-*.npy", "rows-*.pkl", "manifest-*.bin"):
        for path in directory.glob(pattern):
            if path.name not in keep:
                path.unlink(missing_ok=True)
    for path in directory.glob("bm25-*"):
        if path.name != state.bm25_dir and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
    from ..fsutil import remove_stale_temps

    remove_stale_temps(directory)
