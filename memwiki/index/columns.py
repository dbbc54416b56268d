"""The manifest base as columns: a reader decodes only the rows and file entries it looks at.

A base (`manifest-<gen>.bin`) holds every file entry and item row at the last compaction.
Unpickling a quarter of a million row tuples was the largest fixed cost of a cold retrieve
on a 50,000-file wiki (0.5-0.7 s), so a base is a handful of flat arrays and byte strings
in one file, memory-mapped: opening it reads a small header (the sorted paths and where
each column lies), and a row or file entry is built only when it is asked for:

- files, sorted by path: path, size and mtime_ns (compared whole by the freshness scan),
  sha256, and a marshalled (problem, meta) record; plus the physical slots of each
  file's rows, so a writer finds an edited file's rows without a pass over all of them;
  the few files that are an Obsidian plugin's own note are named in the header;
- rows, by physical slot: the index of the row's group (the per-file fields every row of
  a file shares: path, track, name, description, tags, projects), its heading, line
  range and text sha256;
- two hash indexes, sorted 64-bit keys with their slots: item id -> slot (a BM25 hit
  names its item by id) and text sha256 -> slot (a writer reuses the vector of text the
  index already holds). A key only narrows the search: the decoded row is checked.
"""

from __future__ import annotations

import bisect
import hashlib
import marshal
import pickle
import sys
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .manifest import FileEntry, Row


def id_key(item_id: str) -> int:
    """The 64-bit key of an item id in the id index (stable across processes)."""
    return int.from_bytes(hashlib.blake2b(item_id.encode(), digest_size=8).digest(), "little")


def sha_key(sha: str) -> int:
    """The 64-bit key of a text sha256 (its first 16 hex digits) in the sha index."""
    try:
        return int(sha[:16], 16)
    except ValueError:  # not hex: no such key in a well-formed index
        return 0


class Records:
    """Variable-length records (marshalled values) in one byte string, with their offsets."""

    def __init__(self, data: bytes | memoryview = b"", offsets: Sequence[int] | None = None):
        self.data = data
        self.offsets = offsets if offsets is not None else array("Q", [0])

    @classmethod
    def of(cls, values) -> Records:
        """Records of an iterable of marshallable values."""
        parts = [marshal.dumps(v) for v in values]
        offsets = array("Q", [0])
        total = 0
        for p in parts:
            total += len(p)
            offsets.append(total)
        return cls(b"".join(parts), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int):
        return marshal.loads(self.data[self.offsets[i] : self.offsets[i + 1]])


class KeyIndex:
    """Sorted 64-bit keys, each with a slot: the slots whose key equals a given key."""

    def __init__(self, pairs: list[tuple[int, int]] | None = None):
        pairs = sorted(pairs or ())
        self.keys: Sequence[int] = array("Q", [k for k, _ in pairs])
        self.slots: Sequence[int] = array("Q", [s for _, s in pairs])

    def find(self, key: int) -> Iterator[int]:
        """Slots whose key is key (collisions included: the caller checks each)."""
        at = bisect.bisect_left(self.keys, key)
        while at < len(self.keys) and self.keys[at] == key:
            yield self.slots[at]
            at += 1


class Base:
    """The columns of a manifest base; rows and entries are decoded on demand."""

    def __init__(self) -> None:
        self.rels: list[str] = []
        self.size = array("q")
        self.mtime = array("q")
        self.fsha = b""  # 32 bytes per file
        self.frec = Records()  # (problem, meta) per file
        self.fslot_off = array("Q", [0])  # file i's slots: fslots[fslot_off[i]:fslot_off[i+1]]
        self.fslots = array("Q")
        self.ok_files = 0  # files indexed (FileEntry.indexed)
        # file index -> FileEntry.plugin. In the header, not in frec: a memwiki that predates
        # it reads the base as before (it unpacks two fields per record).
        self.plugins: dict[int, str] = {}
        # False for a base written before plugin notes were recorded (an older memwiki):
        # its plugin notes may be indexed as notes (index/upgrade.recheck_plugin_notes).
        self.plugins_known = True
        self.groups = Records()  # (path, track, name, description, tags, projects)
        self.rgroup = array("Q")
        self.rstart = array("q")
        self.rend = array("q")
        self.rsha = b""  # 32 bytes per row
        self.rhead = Records()  # heading per row
        self.ids = KeyIndex()
        self.shas = KeyIndex()
        self._group_cache: dict[int, tuple] = {}
        self._entry_cache: dict[int, FileEntry] = {}
        self._mapped: object = None  # the mmap the columns are views of (kept open with them)

    def write(self, path: Path) -> None:
        """Write the base atomically: magic, header length, pickled header, aligned columns."""
        from ..fsutil import atomic_write

        sections: dict[str, tuple[int, int, str | None]] = {}
        chunks: list[bytes] = []
        offset = 0
        for name, kind in _COLUMNS:
            for suffix, value in _parts(getattr(self, name), kind):
                data = value.tobytes() if isinstance(value, array) else bytes(value)  # type: ignore[call-overload]
                code = value.typecode if isinstance(value, array) else None
                sections[name + suffix] = (offset, len(data), code)
                pad = -len(data) % 8
                chunks.append(data + b"\0" * pad)
                offset += len(data) + pad
        header = pickle.dumps(
            {"rels": self.rels, "ok_files": self.ok_files, "sections": sections,
             "byteorder": sys.byteorder, "plugins": self.plugins},
            protocol=pickle.HIGHEST_PROTOCOL,
        )  # fmt: skip
        start = len(MAGIC) + 8 + len(header)
        start += -start % 8
        head = MAGIC + start.to_bytes(8, "little") + header
        with atomic_write(path) as fh:
            fh.write(head + b"\0" * (start - len(head)))
            for chunk in chunks:
                fh.write(chunk)

    @classmethod
    def open(cls, path: Path) -> Base:
        """Map a base file read-only; ValueError when it is not a complete base.

        The mapping outlives a writer's removal of the file's name, as open files do.
        """
        import mmap

        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            if size < len(MAGIC) + 8:
                raise ValueError("truncated")
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mapped)
        if bytes(view[: len(MAGIC)]) != MAGIC:
            raise ValueError("not a manifest base")
        start = int.from_bytes(view[len(MAGIC) : len(MAGIC) + 8], "little")
        header = pickle.loads(view[len(MAGIC) + 8 : start])
        if header.get("byteorder") != sys.byteorder:
            raise ValueError("written on a machine of another byte order")
        base = cls()
        base.rels, base.ok_files = header["rels"], header["ok_files"]
        base.plugins = header.get("plugins", {})
        base.plugins_known = "plugins" in header
        columns = {}
        for name, (offset, length, code) in header["sections"].items():
            if start + offset + length > size:
                raise ValueError("truncated")
            part = view[start + offset : start + offset + length]
            columns[name] = part.cast(code) if code else part
        for name, kind in _COLUMNS:
            setattr(base, name, _whole(columns, name, kind))
        base._mapped = mapped
        base.check()
        return base

    def check(self) -> None:
        """ValueError unless the columns agree in length (a base cut short or mixed up)."""
        files, rows = len(self.rels), len(self.rgroup)
        lengths = (
            len(self.size) == len(self.mtime) == files == len(self.frec),
            len(self.fsha) == 32 * files and len(self.fslot_off) == files + 1,
            len(self.rstart) == len(self.rend) == len(self.rhead) == rows,
            len(self.rsha) == 32 * rows and len(self.fslots) == rows,
            len(self.ids.keys) == len(self.ids.slots) == rows,
            len(self.shas.keys) == len(self.shas.slots) == rows,
        )
        if not all(lengths):
            raise ValueError("columns of different lengths")

    @property
    def n_files(self) -> int:
        """Files in the base."""
        return len(self.rels)

    @property
    def n_rows(self) -> int:
        """Physical row slots in the base."""
        return len(self.rgroup)

    @classmethod
    def build(cls, files: dict[str, FileEntry], rows: list[Row]) -> Base:
        """The columns of a whole manifest: files (any order) and rows in physical order."""
        base = cls()
        base.rels = sorted(files)
        entries = [files[rel] for rel in base.rels]
        base.size = array("q", [e.size for e in entries])
        base.mtime = array("q", [e.mtime_ns for e in entries])
        base.fsha = b"".join(_sha_bytes(e.sha256) for e in entries)
        base.frec = Records.of((e.problem, e.meta) for e in entries)
        base.ok_files = sum(1 for e in entries if e.indexed)
        base.plugins = {i: e.plugin for i, e in enumerate(entries) if e.plugin is not None}
        group_of: dict[tuple, int] = {}
        slots_of: dict[str, list[int]] = {}
        rgroup = []
        for slot, r in enumerate(rows):
            shared = (r.path, r.track, r.name, r.description, tuple(r.tags), tuple(r.projects))
            rgroup.append(group_of.setdefault(shared, len(group_of)))
            slots_of.setdefault(r.path, []).append(slot)
        base.groups = Records.of(group_of)
        base.rgroup = array("Q", rgroup)
        base.rstart = array("q", [r.start_line for r in rows])
        base.rend = array("q", [r.end_line for r in rows])
        base.rsha = b"".join(_sha_bytes(r.sha) for r in rows)
        base.rhead = Records.of(r.heading for r in rows)
        fslots = array("Q")
        off = array("Q", [0])
        for rel in base.rels:
            fslots.extend(slots_of.pop(rel, ()))
            off.append(len(fslots))
        if slots_of:  # rows of a path with no file entry: found by a scan of them all
            raise ValueError(f"rows without a file entry: {sorted(slots_of)[:3]}")
        base.fslots, base.fslot_off = fslots, off
        base.ids = KeyIndex(
            [(id_key(f"{r.path}:{r.start_line}-{r.end_line}"), s) for s, r in enumerate(rows)]
        )
        base.shas = KeyIndex([(sha_key(r.sha), s) for s, r in enumerate(rows)])
        return base

    # ------------------------------------------------------------ files

    def file_index(self, rel: str) -> int | None:
        """Position of rel in the base's files, or None."""
        at = bisect.bisect_left(self.rels, rel)
        return at if at < len(self.rels) and self.rels[at] == rel else None

    def entry(self, i: int) -> FileEntry:
        """The FileEntry of file i."""
        cached = self._entry_cache.get(i)
        if cached is None:
            from .manifest import FileEntry

            problem, meta = self.frec[i]
            sha = self.fsha[32 * i : 32 * i + 32].hex()
            plugin = self.plugins.get(i)
            cached = FileEntry(self.size[i], self.mtime[i], sha, problem, meta, plugin)
            self._entry_cache[i] = cached
        return cached

    def indexed(self, i: int) -> bool:
        """True when file i is indexed (FileEntry.indexed), without building its entry."""
        return i not in self.plugins and self.frec[i][0] is None

    def stats(self) -> dict[str, tuple[int, int]]:
        """path -> (size, mtime_ns) of every file: what the freshness scan compares whole."""
        return dict(zip(self.rels, zip(self.size, self.mtime, strict=True), strict=True))

    def file_slots(self, rel: str) -> list[int]:
        """Physical slots of rel's rows in the base."""
        i = self.file_index(rel)
        if i is None:
            return []
        return list(self.fslots[self.fslot_off[i] : self.fslot_off[i + 1]])

    # ------------------------------------------------------------ rows

    def group(self, g: int) -> tuple:
        """The shared fields (path, track, name, description, tags, projects) of group g."""
        cached = self._group_cache.get(g)
        if cached is None:
            cached = self._group_cache[g] = self.groups[g]
        return cached

    def row(self, slot: int) -> Row:
        """The Row in physical slot `slot`."""
        from .manifest import Row

        path, track, name, description, tags, projects = self.group(self.rgroup[slot])
        sha = self.rsha[32 * slot : 32 * slot + 32].hex()
        heading = self.rhead[slot]
        return Row(
            path, track, name, description, tags, heading,
            self.rstart[slot], self.rend[slot], sha, projects,
        )  # fmt: skip

    def row_id(self, slot: int) -> str:
        """The item id of slot (path:start-end) without building the Row."""
        path = self.group(self.rgroup[slot])[0]
        return f"{path}:{self.rstart[slot]}-{self.rend[slot]}"

    def track_of_groups(self) -> list[str]:
        """The track of every group, in group order."""
        return [self.group(g)[1] for g in range(len(self.groups))]


MAGIC = b"MWBASE12"
# The columns of a base and how each is stored: a flat array or byte string ("flat"),
# Records (their bytes and offsets), or a KeyIndex (its keys and slots).
_COLUMNS = (
    ("size", "flat"), ("mtime", "flat"), ("fsha", "flat"), ("frec", "records"),
    ("fslot_off", "flat"), ("fslots", "flat"), ("groups", "records"), ("rgroup", "flat"),
    ("rstart", "flat"), ("rend", "flat"), ("rsha", "flat"), ("rhead", "records"),
    ("ids", "keys"), ("shas", "keys"),
)  # fmt: skip


def _parts(value, kind: str) -> list[tuple[str, object]]:
    if kind == "records":
        return [(".data", value.data), (".offsets", value.offsets)]
    if kind == "keys":
        return [(".keys", value.keys), (".slots", value.slots)]
    return [("", value)]


def _whole(columns: dict, name: str, kind: str):
    if kind == "records":
        return Records(columns[name + ".data"], columns[name + ".offsets"])
    if kind == "keys":
        index = KeyIndex()
        index.keys, index.slots = columns[name + ".keys"], columns[name + ".slots"]
        return index
    return columns[name]


def _sha_bytes(sha: str) -> bytes:
    """32 raw bytes of a sha256 hex digest (a malformed one is refused, not truncated)."""
    raw = bytes.fromhex(sha)
    if len(raw) != 32:
        raise ValueError(f"not a sha256: {sha!r}")
    return raw
