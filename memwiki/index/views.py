"""What readers see of a manifest: its live rows and its files, decoded only where looked at.

The rows are the live physical slots in order: the base's slots, then the rows appended
since (`extra`), minus the tombstones (`dead`). Live index n and physical slot convert
into each other by bisection over the sorted tombstones, so nothing of size "all rows"
is built for a reader. Writers that need every row iterate; the one-file-edit path asks
only for the rows of the files it changes (`slots_of`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from . import columns
from .columns import Base

if TYPE_CHECKING:
    from .manifest import FileEntry, Row


def row_id(row: Row) -> str:
    """Same id as chunker.Item.id."""
    return f"{row.path}:{row.start_line}-{row.end_line}"


class RowView(Sequence):
    """The live rows of a manifest (base + extra - dead), as a read-only sequence."""

    def __init__(self, base: Base | None, extra: list[Row], dead: set[int]):
        self.base = base
        self.extra = extra
        self.n_base = base.n_rows if base is not None else 0
        self.dead = sorted(dead)
        self.physical = self.n_base + len(extra)
        self._len = self.physical - len(self.dead)
        self._cache: dict[int, Row] = {}
        self._extra_ids: dict[str, int] | None = None
        self._extra_shas: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        return self._len

    def slot(self, n: int) -> int:
        """The physical slot of live row n."""
        if not self.dead:
            return n
        # smallest slot s with n + 1 live slots at or before it
        lo, hi = n, n + len(self.dead)
        while lo < hi:
            mid = (lo + hi) // 2
            if mid + 1 - bisect.bisect_right(self.dead, mid) >= n + 1:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def live(self, slot: int) -> int | None:
        """The live index of a physical slot, or None when it is a tombstone."""
        at = bisect.bisect_left(self.dead, slot)
        if at < len(self.dead) and self.dead[at] == slot:
            return None
        return slot - at

    def at_slot(self, slot: int) -> Row:
        """The row in a physical slot (live or not)."""
        if slot >= self.n_base:
            return self.extra[slot - self.n_base]
        assert self.base is not None
        return self.base.row(slot)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        row = self._cache.get(index)
        if row is None:
            row = self._cache[index] = self.at_slot(self.slot(index))
        return row

    def __iter__(self) -> Iterator[Row]:
        dead = set(self.dead)
        base = self.base
        for slot in range(self.n_base):
            if slot not in dead:
                yield base.row(slot)  # type: ignore[union-attr]
        for k, row in enumerate(self.extra):
            if self.n_base + k not in dead:
                yield row

    def __eq__(self, other) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def find(self, item_id: str) -> int | None:
        """The live index of the row with this id, or None."""
        if self.base is not None:
            for slot in self.base.ids.find(columns.id_key(item_id)):
                if self.base.row_id(slot) == item_id:
                    live = self.live(slot)
                    if live is not None:
                        return live
        if self._extra_ids is None:
            self._extra_ids = {}
            for k, row in enumerate(self.extra):
                if self.live(self.n_base + k) is not None:
                    self._extra_ids[row_id(row)] = self.n_base + k
        found = self._extra_ids.get(item_id)
        return None if found is None else self.live(found)

    def slot_of_sha(self, sha: str, skip: set[int] = frozenset()) -> int | None:  # type: ignore[assignment]
        """A live physical slot whose row's text has this sha256 (not in skip), or None."""
        if self.base is not None:
            for slot in self.base.shas.find(columns.sha_key(sha)):
                if (
                    slot not in skip
                    and self.base.row(slot).sha == sha
                    and self.live(slot) is not None
                ):
                    return slot
        if self._extra_shas is None:
            self._extra_shas = {}
            for k, row in enumerate(self.extra):
                self._extra_shas.setdefault(row.sha, []).append(self.n_base + k)
        for slot in self._extra_shas.get(sha, ()):
            if slot not in skip and self.live(slot) is not None:
                return slot
        return None

    def slots_of(self, paths: set[str]) -> list[int]:
        """The live physical slots of the rows of these files, ascending."""
        found = []
        if self.base is not None:
            for rel in paths:
                found.extend(self.base.file_slots(rel))
        found.extend(self.n_base + k for k, r in enumerate(self.extra) if r.path in paths)
        return sorted(s for s in found if self.live(s) is not None)

    def track_mask(self, track: str) -> list[bool]:
        """Per live row: is it on this track (without decoding the rows)."""
        out: list[bool] = []
        if self.base is not None:
            on = [t == track for t in self.base.track_of_groups()]
            out = [on[g] for g in self.base.rgroup]
        out.extend(r.track == track for r in self.extra)
        if self.dead:
            dead = set(self.dead)
            out = [on for slot, on in enumerate(out) if slot not in dead]
        return out


class FileView(Mapping):
    """The manifest's files (base, then changes since), as a read-only mapping."""

    def __init__(self, base: Base | None, delta: dict[str, FileEntry], gone: set[str]):
        self.base = base
        self.delta = delta
        self.gone = gone
        in_base = sum(1 for rel in delta if self._base_index(rel) is not None)
        n_base = base.n_files if base is not None else 0
        self._len = n_base - len(gone) - in_base + len(delta)

    def _base_index(self, rel: str) -> int | None:
        return self.base.file_index(rel) if self.base is not None else None

    def __getitem__(self, rel: str) -> FileEntry:
        entry = self.delta.get(rel)
        if entry is not None:
            return entry
        if rel not in self.gone:
            i = self._base_index(rel)
            if i is not None:
                return self.base.entry(i)  # type: ignore[union-attr]
        raise KeyError(rel)

    def __contains__(self, rel) -> bool:
        if rel in self.delta:
            return True
        return rel not in self.gone and self._base_index(rel) is not None

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        if self.base is not None:
            for rel in self.base.rels:
                if rel not in self.gone and rel not in self.delta:
                    yield rel
        yield from self.delta

    def stats(self) -> dict[str, tuple[int, int]]:
        """path -> (size, mtime_ns) of every file (what walk() returns for an unchanged wiki)."""
        out = self.base.stats() if self.base is not None else {}
        for rel in self.gone:
            out.pop(rel, None)
        for rel, e in self.delta.items():
            out[rel] = (e.size, e.mtime_ns)
        return out

    def indexed(self) -> int:
        """How many files are indexed (FileEntry.indexed): the base's count plus the changes."""
        if self.base is None:
            return sum(1 for e in self.delta.values() if e.indexed)
        count = self.base.ok_files
        for rel in self.gone | set(self.delta):
            i = self.base.file_index(rel)
            if i is not None and self.base.indexed(i):
                count -= 1
        return count + sum(1 for e in self.delta.values() if e.indexed)
