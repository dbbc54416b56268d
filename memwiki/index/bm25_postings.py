"""Whoosh 3 posting lists and length columns read straight from a segment's files.

Whoosh reads a posting at a time through its matchers; the scorer in bm25_score wants
whole lists (or the blocks of a list that can matter) as Python lists, and the length
columns as bytes. The codec's internals are reached by name; anything unexpected raises
Unreadable, and bm25.search_hits then lets Whoosh score as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import OrderedDict
from operator import mul

from .bm25_blocks import (
    Block,
    Blocks,
    Decoded,
    Unreadable,
    count_in_list,
    holding,
    read_blocks,
)

CACHE_POSTINGS = 1_000_000
_LISTS: OrderedDict[tuple, Blocks] = OrderedDict()
_HELD = [0]  # postings in _LISTS
CACHE_COLUMNS = 64  # length columns (a field of a segment: one byte a document)
_COLUMNS: dict[tuple, tuple[bytes, int]] = {}  # length bytes and their total


_LIVE: dict[str, frozenset[str]] = {}  # per index folder: the segments its newest TOC names
# Held while the caches above are changed or an entry is looked up and used in two steps;
# never while a list or column is read from disk. Bug it prevents: threads retrieving at
# once (a server) raised KeyError or RuntimeError from an entry another thread had just
# evicted, and a list two threads read at once was counted twice, so the count drifted
# up until the cache held nearly nothing (tests/test_threads_caches.py).
_LOCK = threading.Lock()


def keep_only(directory, segments) -> None:
    """Forget what is cached for segments the index in directory no longer has.

    Called with the segment files of the table of contents a searcher opens. Bug it
    prevents: a long-lived process (a server using the library) kept every merged-away
    or rebuilt segment's posting lists until a million postings were held (about 130 MB),
    growing by every edit. Entries of another generation's folder beside it are dropped
    once that folder is gone; other wikis' entries are left alone.
    """
    folder = os.path.realpath(directory)
    live = frozenset(segments)
    if _LIVE.get(folder) == live:
        return
    with _LOCK:
        _LIVE[folder] = live
        _drop_gone(folder, live)


def _drop_gone(folder: str, live: frozenset[str]) -> None:
    """keep_only's eviction, under _LOCK."""
    parent, exists = os.path.dirname(folder), {folder: True}

    def gone(key: tuple) -> bool:
        if key[0] == folder:
            return key[1] not in live
        if os.path.dirname(key[0]) != parent:
            return False  # another wiki's index
        if key[0] not in exists:
            exists[key[0]] = os.path.isdir(key[0])
        return not exists[key[0]]

    for key in [k for k in list(_LISTS) if gone(k)]:
        dropped = _LISTS.pop(key, None)
        _HELD[0] -= dropped.count if dropped is not None else 0
    for key in [k for k in list(_COLUMNS) if gone(k)]:
        _COLUMNS.pop(key, None)
    for other in [f for f in list(_LIVE) if f != folder and gone((f, ""))]:
        _LIVE.pop(other, None)


def cached_segments() -> set[tuple[str, str]]:
    """(index folder, segment file) of every segment with posting lists cached (tests)."""
    return {key[:2] for key in list(_LISTS)}


def _segment_key(leaf) -> tuple | None:
    """What identifies a segment's immutable data, or None when the reader does not say.

    The segment's id is random but drawn from the `random` module, which a host (or a
    test framework) may seed: so the key is also the segment file's folder and identity
    (inode, mtime, size), and a rebuilt index's segment never matches an older one.
    """
    known = getattr(leaf, "_memwiki_key", False)
    if known is None or isinstance(known, tuple):
        return known
    key: tuple | None = None
    try:
        storage = getattr(leaf, "_storage")  # noqa: B009 - Whoosh internals, see above
        folder = getattr(getattr(storage, "b", storage), "folder")  # noqa: B009
        segment = leaf.segment()
        name = segment.make_filename(".seg")  # a compound segment: one file, written once
        info = os.stat(os.path.join(folder, name))
        key = (os.path.realpath(folder), name, leaf.doc_count_all(), info.st_ino)
        key += (info.st_mtime_ns, info.st_size)
    except Exception:  # not laid out as Whoosh 3 writes it: read without caching
        key = None
    with contextlib.suppress(AttributeError):
        leaf._memwiki_key = key  # once per reader
    return key


def blocks(leaf, field: str, text: str) -> Blocks:
    """The posting list of a term in one segment (no blocks when the term is not there)."""
    seg = _segment_key(leaf)
    if seg is None:
        return _blocks(leaf, field, text)
    key = (*seg, field, text)
    with _LOCK:
        found = _LISTS.get(key)
        if found is not None:
            _LISTS.move_to_end(key)
            return found
    found = _blocks(leaf, field, text)
    with _LOCK:
        if key not in _LISTS:  # another thread may have read the same list meanwhile
            _LISTS[key] = found
            _HELD[0] += found.count
        while _HELD[0] > CACHE_POSTINGS and len(_LISTS) > 1:
            _HELD[0] -= _LISTS.popitem(last=False)[1].count
    return found


def _blocks(leaf, field: str, text: str) -> Blocks:
    got = _list_bytes(leaf, field, text)
    return got if isinstance(got, Blocks) else read_blocks(got)


def _list_bytes(leaf, field: str, text: str) -> Blocks | bytes:
    """A term's posting list as stored in one segment, or as Blocks when it has no blocks."""
    from whoosh.reading import TermNotFound

    memory = getattr(leaf, "memory_blocks", None)  # bm25_overlay.MemorySegment
    if memory is not None:
        return memory(field, text)
    try:
        info = leaf.term_info(field, text)
    except TermNotFound:
        return Blocks([])
    try:
        if info.is_inlined():
            ids, weights, _ = info.inlined_postings()
            got = (list(ids), [float(w) for w in (weights or (1.0,) * len(ids))])
            top = max(got[1], default=0.0)
            return Blocks([Block(0, max(got[0], default=0), len(ids), top, 0, got)])
        offset, length = info.extent()
        if isinstance(length, tuple):  # W3TermInfo.from_bytes keeps struct.unpack's tuple
            (length,) = length
        postfile = getattr(getattr(leaf, "_terms"), "_postfile")  # noqa: B009 - internals
        buf = postfile.get(offset, length)
    except Exception as exc:  # a changed codec: attribute names
        raise Unreadable(f"{type(exc).__name__}: {exc}") from exc
    return buf


def count_held(leaf, field: str, text: str, docs: list[int]) -> int:
    """How many of the sorted docs a term's posting list in one segment holds.

    A list read already is looked up as it is; otherwise only the block headers' last
    document numbers are read, up to the block of the last of docs, and only the blocks
    that may hold one are decoded (a common word's list has hundreds of blocks; the
    deleted documents, whose count this is for, are a few).
    """
    seg = _segment_key(leaf)
    cached = None if seg is None else _LISTS.get((*seg, field, text))
    got = cached if cached is not None else _list_bytes(leaf, field, text)
    wanted = set(docs)
    if isinstance(got, Blocks):
        return len(wanted.intersection(got.read(holding(docs))[0]))
    try:
        return count_in_list(got, docs, wanted)
    except Unreadable:
        raise
    except Exception as exc:  # a changed or damaged block layout
        raise Unreadable(f"{type(exc).__name__}: {exc}") from exc


def postings(leaf, field: str, text: str) -> Decoded:
    """Document numbers and weights of a term's postings in one segment, deleted ones included."""
    return blocks(leaf, field, text).read()


def numpy_ready() -> bool:
    """True when numpy is imported and usable now, not being imported by another thread.

    A hybrid retrieve imports numpy in its vector thread while BM25 runs: the module is in
    sys.modules from the start of that import, and `import numpy` here would wait for the
    whole import (about 100 ms cold) on its module lock, putting it back on the critical
    path. Measured cold hybrid at 2k went from 0.81 to 0.95 of the reference that way.
    """
    module = sys.modules.get("numpy")
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


def length_bytes(leaf, field: str) -> bytes | None:
    """The field's one-byte lengths of every document of a segment (None: no such column).

    Whoosh has no public way to read a whole length column; reading it document by
    document costs about 80 ms on 10,000 items, the column itself well under 1 ms.
    """
    column = _column(leaf, field)
    return None if column is None else column[0]


def _column(leaf, field: str) -> tuple[bytes, int] | None:
    """(length bytes, their length_total) of a segment's field, read once per segment."""
    seg = _segment_key(leaf)
    key = None if seg is None else (*seg, field)
    found = None if key is None else _COLUMNS.get(key)
    if found is not None:
        return found
    lengths = _length_bytes(leaf, field)
    if lengths is None:
        return None
    column = lengths, length_total(lengths)
    if key is not None:
        with _LOCK:
            while _COLUMNS and len(_COLUMNS) >= CACHE_COLUMNS:
                del _COLUMNS[next(iter(_COLUMNS))]  # the oldest: a long-running process
            _COLUMNS[key] = column
    return column


def _length_bytes(leaf, field: str) -> bytes | None:
    memory = getattr(leaf, "memory_lengths", None)  # bm25_overlay.MemorySegment
    if memory is not None:
        return memory(field)
    try:
        from whoosh.codec.whoosh3 import LENGTHS_COLUMN

        perdoc = getattr(leaf, "_perdoc")  # noqa: B009 - Whoosh internals, see above
        col = getattr(perdoc, "_cached_reader")(f"_{field}_len", LENGTHS_COLUMN)  # noqa: B009
        if col is None:
            return None
        start, count = getattr(col, "_basepos"), getattr(col, "_count")  # noqa: B009
        data = bytes(getattr(col, "_dbfile").get(start, count))  # noqa: B009
    except Exception as exc:
        raise Unreadable(f"{type(exc).__name__}: {exc}") from exc
    # documents after the column's last written one have the column's default, 0
    return data + bytes(max(0, leaf.doc_count_all() - len(data)))


def _digit_tables() -> list:
    from whoosh.util.numeric import byte_to_length

    lengths = [byte_to_length(b) for b in range(256)]
    return [bytes((n >> shift) & 0xFF for n in lengths) for shift in (0, 8, 16)] + [lengths]


_DIGITS: list = []  # the three digit tables, then the lengths themselves


def length_total(lengths: bytes, vectorised: bool | None = None) -> int:
    """Sum of the field lengths that one-byte lengths stand for, with C-level loops only.

    Each length is split into base-256 digits by a translation table; a digit column is
    summed as bytes (Counter over 250,000 bytes takes 11 ms, this about 2 ms). With numpy
    (when the process has it ready, see numpy_ready) the bytes are counted by value
    instead: 0.8 ms for 250,000.
    """
    if not _DIGITS:
        _DIGITS.extend(_digit_tables())
    if len(lengths) > 4096 and (numpy_ready() if vectorised is None else vectorised):
        import numpy as np

        counts = np.bincount(np.frombuffer(lengths, np.uint8), minlength=256).tolist()
        return sum(map(mul, counts, _DIGITS[3]))
    total = 0
    for shift, table in zip((0, 8, 16), _DIGITS[:3], strict=True):
        digits = lengths.translate(table).translate(None, b"\x00")
        total += sum(digits) << shift
    return total


def live_length_total(leaf, field: str, deleted: frozenset) -> int:
    """Sum of the one-byte field lengths of one segment's live documents."""
    column = _column(leaf, field)
    if column is None:
        return 0
    lengths, total = column
    if deleted:
        total -= length_total(bytes(lengths[d] for d in deleted))
    return total
