"""Exact BM25F of an OR query, scored from Whoosh 3 posting blocks without Whoosh's matchers.

Whoosh scores an OR of term queries one posting at a time in Python: for each posting of
each (field, term) list a matcher call, a field-length lookup through three layers of
readers and a scorer call. A 3-word query on a 50,000-file wiki (250,000 items) has about
88,000 postings, and scoring them that way took about 0.4 s. Here each list's blocks are
read whole (document numbers and weights; the positions Whoosh stores beside them are cut
off before unpickling), each distinct (weight, length byte) pair of a list is scored once
with Whoosh's own `bm25` function, and the scores are added up by C-level loops over the
lists in the same order as Whoosh's ArrayUnionMatcher adds them (field by field, term by
term), so every sum is bit-identical to Whoosh's.

The Whoosh 3 codec's internals are reached by name; anything unexpected raises Unreadable
and bm25.search_hits falls back to Whoosh's own scoring of the same formula.
"""

from __future__ import annotations

import heapq
import pickle
import zlib
from array import array
from bisect import bisect_left
from collections import deque
from itertools import accumulate, compress, repeat
from operator import add, mul, truediv

# The first positions value of a block: protocol-2 pickles store bytes as a call of
# `_codecs.encode`. None of these bytes is a pickle opcode that can occur in a tuple of
# ints or floats, so the first match is where the block's values start.
_VALUES_MARK = b"c_codecs\nencode\n"
_MARK, _TUPLE3, _NONE, _STOP = b"(", b"\x87", b"N", b"."


class Unreadable(Exception):
    """Whoosh's internals are not what this module expects: score with Whoosh instead."""


def postings(leaf, field: str, text: str) -> tuple[list[int], list[float]]:
    """Document numbers and weights of a term's postings in one segment, deleted ones included."""
    from whoosh.reading import TermNotFound

    try:
        info = leaf.term_info(field, text)
    except TermNotFound:
        return [], []
    try:
        if info.is_inlined():
            ids, weights, _ = info.inlined_postings()
            return list(ids), [float(w) for w in (weights or (1.0,) * len(ids))]
        offset, length = info.extent()
        if isinstance(length, tuple):  # W3TermInfo.from_bytes keeps struct.unpack's tuple
            (length,) = length
        postfile = getattr(getattr(leaf, "_terms"), "_postfile")  # noqa: B009 - internals
        buf = postfile.get(offset, length)
    except Exception as exc:  # a changed codec: attribute names
        raise Unreadable(f"{type(exc).__name__}: {exc}") from exc
    return read_blocks(buf)


def read_blocks(buf: bytes) -> tuple[list[int], list[float]]:
    """A posting list's ids and weights; Unreadable if it is not laid out as Whoosh 3 writes it."""
    try:
        return _read_blocks(buf)
    except Unreadable:
        raise
    except Exception as exc:  # a changed or damaged block layout
        raise Unreadable(f"{type(exc).__name__}: {exc}") from exc


def _read_blocks(buf: bytes) -> tuple[list[int], list[float]]:
    """A whole posting list: ids un-delta-coded, weights expanded as Whoosh's matcher does.

    The layout (W3PostingsWriter): a magic tag, then blocks of a signed length (negative
    for the last block), a pickled info tuple (count, last id, max weight, compression,
    min and max length byte) and the block's data.
    """
    from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC
    from whoosh.system import unpack_int

    if buf[:4] != WHOOSH3_HEADER_MAGIC:
        raise Unreadable("no posting block tag")
    ids: list[int] = []
    weights: list[float] = []
    view = memoryview(buf)
    pos, last = 4, False
    while not last:
        (size,) = unpack_int(view[pos : pos + 4])
        last, size, pos = size < 0, abs(size), pos + 4
        block = view[pos : pos + size]
        info = pickle.loads(block)
        # the info tuple's pickle is what Whoosh wrote: pickling it again gives its length
        head = len(pickle.dumps(info, 2))
        n, compression = info[0], info[3]
        raw = bytes(block[head:])
        deltas, w = _ids_and_weights(zlib.decompress(raw) if compression else raw, n)
        ids.extend(accumulate(deltas))
        if w is None:
            weights.extend((1.0,) * n)
        elif isinstance(w, float):
            # Whoosh expands a block's one weight through array("f"), i.e. as float32
            weights.extend((array("f", (w,))[0],) * n)
        else:
            weights.extend(w)
        pos += size
    return ids, weights


def _ids_and_weights(raw: bytes, n: int):
    """The (delta ids, weights) of a block's pickled (ids, weights, values) tuple of n postings.

    The values (encoded positions) are most of a block and cost most of its unpickling:
    the pickle is cut where they start and closed with None in their place. A tuple of
    more than 3 items starts with a MARK; the result's shape is checked, so a cut in the
    wrong place fails instead of scoring wrong numbers.
    """
    at = raw.find(_VALUES_MARK)
    if at > 0:
        start = at - 1 if n > 3 else at
        if n > 3 and raw[start:at] != _MARK:
            raise Unreadable("no MARK before the block's values")
        raw = raw[:start] + _NONE + _TUPLE3 + _STOP
    data = pickle.loads(raw)
    if not (isinstance(data, tuple) and len(data) == 3 and isinstance(data[0], tuple)):
        raise Unreadable("unexpected block layout")
    deltas, weights = data[0], data[1]
    if len(deltas) != n or not (
        weights is None
        or isinstance(weights, float)
        or (isinstance(weights, tuple) and len(weights) == n)
    ):
        raise Unreadable("block ids or weights do not match its length")
    return deltas, weights


def length_bytes(leaf, field: str) -> bytes | None:
    """The field's one-byte lengths of every document of a segment (None: no such column).

    Whoosh has no public way to read a whole length column; reading it document by
    document costs about 80 ms on 10,000 items, the column itself well under 1 ms.
    """
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


def _digit_tables() -> list[bytes]:
    from whoosh.util.numeric import byte_to_length

    lengths = [byte_to_length(b) for b in range(256)]
    return [bytes((n >> shift) & 0xFF for n in lengths) for shift in (0, 8, 16)]


_DIGITS: list[bytes] = []


def length_total(lengths: bytes) -> int:
    """Sum of the field lengths that one-byte lengths stand for, with C-level loops only.

    Each length is split into base-256 digits by a translation table; a digit column is
    summed as bytes (Counter over 250,000 bytes takes 11 ms, this about 1.5 ms).
    """
    if not _DIGITS:
        _DIGITS.extend(_digit_tables())
    total = 0
    for shift, table in zip((0, 8, 16), _DIGITS, strict=True):
        digits = lengths.translate(table).translate(None, b"\x00")
        total += sum(digits) << shift
    return total


def live_length_total(leaf, field: str, deleted: frozenset) -> int:
    """Sum of the one-byte field lengths of one segment's live documents."""
    lengths = length_bytes(leaf, field)
    if lengths is None:
        return 0
    total = length_total(lengths)
    if deleted:
        total -= length_total(bytes(lengths[d] for d in deleted))
    return total


def search(reader, terms: list[str], limit: int, track: str | None):
    """bm25.search_hits on an open reader, scored from the raw posting lists segment by segment."""
    from . import bm25

    leaves = [leaf for leaf, _ in bm25.leaf_readers(reader)]
    gone = [leaf.deleted_docs_set if leaf.has_deletions() else frozenset() for leaf in leaves]
    keys = [(f, t) for f in bm25.FIELD_BOOSTS for t in terms]
    lists = {}
    df = dict.fromkeys(keys, 0)
    for i, leaf in enumerate(leaves):
        for key in keys:
            ids, _ = lists[(i, *key)] = postings(leaf, *key)
            df[key] += len(ids) - (len(gone[i].intersection(ids)) if gone[i] and ids else 0)
    n = reader.doc_count()
    avgfl = {
        f: sum(live_length_total(leaf, f, gone[i]) for i, leaf in enumerate(leaves)) / n
        for f in bm25.FIELD_BOOSTS
    }
    stats = bm25.LiveStats(n, terms, df, avgfl)
    norms = {f: length_norms(avgfl[f] or 1.0) for f in bm25.FIELD_BOOSTS}
    wanted = limit + bm25.TIE_MARGIN
    pools = []  # per segment: (scores by docnum, candidates, their best `wanted`)
    for i, leaf in enumerate(leaves):
        acc = [0.0] * leaf.doc_count_all()
        # field by field, term by term: the order in which Whoosh adds a document's scores up
        for f in bm25.FIELD_BOOSTS:
            lengths: bytes | None = b""
            for t in terms:
                ids, weights = lists[(i, f, t)]
                if ids:
                    lengths = length_bytes(leaf, f) if lengths == b"" else lengths
                    add_scores(acc, ids, weights, lengths, stats.idf(f, t), norms[f])
        for d in gone[i]:
            acc[d] = 0.0
        if track:
            allowed = postings(leaf, "track", track)[0]
            kept = [0.0] * len(acc)
            deque(map(kept.__setitem__, allowed, map(acc.__getitem__, allowed)), maxlen=0)
            acc = kept
        found = list(compress(range(len(acc)), acc))  # every score is > 0: idf > 0, tf > 0
        pools.append((acc, found, heapq.nlargest(wanted, found, key=acc.__getitem__)))
    best = sorted((acc[d] for acc, _, top in pools for d in top), reverse=True)
    if not best:
        return bm25.Hits([], 0.0)
    edge = bm25.tie_key(best[min(limit, len(best)) - 1])
    # Ties at the cut are broken by item id, not by document numbers (they depend on the
    # edit history): a segment whose best list may have cut ties off is read whole.
    chosen: list[tuple[float, int, int]] = []  # (score, segment, docnum)
    for i, (acc, found, top) in enumerate(pools):
        if len(top) == wanted and bm25.tie_key(acc[top[-1]]) >= edge:
            top = found
        chosen.extend((acc[d], i, d) for d in top if bm25.tie_key(acc[d]) >= edge)
    rows = [(leaves[i].stored_fields(d)["id"], s, (i, d)) for s, i, d in chosen]
    rows.sort(key=lambda r: (-bm25.tie_key(r[1]), r[0]))
    rows = rows[:limit]
    i, d = rows[0][2]
    coverage = stats.coverage(lambda f, t: contains(lists[(i, f, t)][0], d))
    return bm25.Hits([(item_id, score) for item_id, score, _ in rows], coverage)


B, K1 = 0.75, 1.2  # Whoosh's BM25F defaults, which bm25.ExactBM25F scores with


def length_norms(avgfl: float) -> list[float]:
    """K1 * ((1 - B) + B * fl / avgfl) for each length byte: the length part of Whoosh's bm25."""
    from whoosh.util.numeric import byte_to_length

    return [K1 * ((1 - B) + B * byte_to_length(b) / avgfl) for b in range(256)]


def add_scores(
    acc: list[float],
    ids: list[int],
    weights: list[float],
    lengths: bytes | None,
    idf: float,
    norms: list[float],
) -> None:
    """acc[d] += the BM25 of each posting, the very operations of whoosh.scoring.bm25.

    bm25 is idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * fl / avgfl))); the last
    term is norms[length byte]. Every step is a C-level map, one rounding per operation
    as in Whoosh's Python, so each score is bit-identical. Whoosh's scorer takes the length
    1 where a segment has no length column.
    """
    lbs = bytes(map(lengths.__getitem__, ids)) if lengths is not None else b"\x01" * len(ids)
    if b"\x00" in lbs:  # Whoosh fails on a posting of an empty field: so fail here too
        raise Unreadable("a posting in a field of length 0")
    den = map(add, weights, map(norms.__getitem__, lbs))
    score = map(mul, repeat(idf), map(truediv, map(mul, weights, repeat(K1 + 1)), den))
    # each id occurs once in a list, so reading acc lazily while writing it is safe
    deque(map(acc.__setitem__, ids, map(add, map(acc.__getitem__, ids), score)), maxlen=0)


def contains(ids: list[int], docnum: int) -> bool:
    """Whether a sorted posting list holds docnum."""
    i = bisect_left(ids, docnum)
    return i < len(ids) and ids[i] == docnum
