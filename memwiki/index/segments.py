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

from dataclasses import dataclass, field
from pathlib import Path

from . import manifest as st

COMPACT_MIN = 4096  # appended + dead slots tolerated before compacting, whatever the size
COMPACT_SHARE = 0.05  # ... or this share of the physical slots, if larger
MAX_SEGMENTS = 8  # vector files beyond the base before the appended ones are merged


@dataclass
class Plan:
    """What an update writes: the new live rows and where each one's vector comes from."""

    rows: list[st.Row]
    compact: bool
    # rows (indices into `rows`) whose vectors are written now: all of them when compacting,
    # else the appended ones (the last len(appended) rows)
    write: list[int]
    # new row index -> old row index whose vector it keeps (rows not in `write`, or
    # compacted rows copied from the old vectors)
    source: dict[int, int] = field(default_factory=dict)
    extra: list[st.Row] = field(default_factory=list)  # physical rows after the base
    dead: set[int] = field(default_factory=set)
    unembedded: set[int] = field(default_factory=set)  # kept rows that stay without a vector


def live_slots(state: st.State) -> list[int]:
    """Physical slot of every row of state.rows."""
    total = state.physical_rows
    if not state.dead:
        return list(range(total))
    return [i for i in range(total) if i not in state.dead]


def needs_compaction(old: st.State, removed: int, appended: int) -> bool:
    """True when the delta after this update would be large enough to rewrite whole."""
    physical = old.physical_rows + appended
    delta = len(old.extra) + appended + len(old.dead) + removed
    return delta > max(COMPACT_MIN, COMPACT_SHARE * physical)


def plan_update(
    old: st.State, keep: list[int], added: list[st.Row], embedding: bool, vectors_reusable: bool
) -> Plan:
    """The layout of an update that keeps old rows `keep` (in order) and adds rows `added`.

    embedding: this update fills in vectors, so kept rows still without one move to the
    appended segment. vectors_reusable: the old vectors are of the model in use.
    """
    moved = [i for i in keep if i in old.unembedded] if embedding else []
    removed = len(old.rows) - len(keep) + len(moved)
    compact = not vectors_reusable or needs_compaction(old, removed, len(moved) + len(added))
    if compact:
        rows = [old.rows[i] for i in keep] + added
        source = {n: o for n, o in enumerate(keep) if o not in old.unembedded}
        unembedded = set() if embedding else set(range(len(keep))) - set(source)
        return Plan(rows, True, list(range(len(rows))), source, unembedded=unembedded)
    moved_set = set(moved)
    stay = [i for i in keep if i not in moved_set]
    rows = [old.rows[i] for i in stay] + [old.rows[i] for i in moved] + added
    slots = live_slots(old)
    stay_set = set(stay)
    dead = old.dead | {slots[i] for i in range(len(old.rows)) if i not in stay_set}
    appended = rows[len(stay) :]
    source = {n: o for n, o in enumerate(stay)}
    unembedded = {n for n, o in enumerate(stay) if o in old.unembedded}
    return Plan(
        rows,
        False,
        list(range(len(stay), len(rows))),
        source,
        extra=old.extra + appended,
        dead=dead,
        unembedded=unembedded,
    )


def apply_layout(new: st.State, old: st.State | None, plan: Plan) -> None:
    """Give new the rows and physical layout of plan (the base is the old one unless compacting)."""
    new.rows = plan.rows
    if plan.compact or old is None:
        new.extra, new.dead = [], set()
        new.base_files, new.base_rows = {}, []
        return
    new.base, new.base_files, new.base_rows = old.base, old.base_files, old.base_rows
    new.extra, new.dead = plan.extra, plan.dead


def reusable(directory: Path, old: st.State, key: dict) -> bool:
    """True when old's vector segments are of this model and can be read."""
    if not old.segments or old.embedder != key:
        return False
    from .vectors import open_matrix  # numpy: only when there are vectors

    try:
        open_matrix(directory, old)
    except (OSError, ValueError):
        return False
    return True


def cleanup(directory: Path, state: st.State, old: st.State | None) -> None:
    """Remove vector segments, manifest bases and Whoosh directories no recent state names.

    The previous state's files stay: a reader that loaded it a moment ago still opens them.
    """
    import shutil

    states = [state] if old is None else [state, old]
    keep = {name for s in states for name, _ in s.segments} | {s.base for s in states}
    for pattern in ("vectors-*.npy", "rows-*.pkl"):
        for path in directory.glob(pattern):
            if path.name not in keep:
                path.unlink(missing_ok=True)
    for path in directory.glob("bm25-*"):
        if path.name != state.bm25_dir and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
