"""Whoosh 3 posting blocks parsed and decoded: headers, document numbers, weights.

A posting list (W3PostingsWriter) is a magic tag and blocks of up to 128 postings, each a
signed length, a pickled info tuple and the zlib-compressed pickle of (delta ids,
weights, encoded positions). Only the ids and weights are ever needed here, so only the
start of a block is inflated and unpickled (or, for dense blocks, sliced). Anything
unexpected raises Unreadable; callers then let Whoosh read the list itself.
"""

from __future__ import annotations

import pickle
import struct
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import accumulate

# The first positions value of a block: protocol-2 pickles store bytes as a call of
# `_codecs.encode`. None of these bytes is a pickle opcode that can occur in a tuple of
# ints or floats, so the first match is where the block's values start.
_VALUES_MARK = b"c_codecs\nencode\n"
_MARK, _TUPLE3, _NONE, _STOP = b"(", b"\x87", b"N", b"."


class Unreadable(Exception):
    """Whoosh's internals are not what this module expects: score with Whoosh instead."""


Decoded = tuple[list[int], list[float]]  # document numbers and weights


class Block:
    """One block of a posting list: its header now, its postings when decoded."""

    __slots__ = ("first", "last", "count", "max_weight", "min_length", "_raw", "_compression")

    def __init__(
        self,
        first: int,
        last: int,
        count: int,
        max_weight: float,
        min_length: int,
        raw,
        compression: int = 0,
    ):
        self.first = first  # no posting of the block has a smaller document number
        self.last = last  # the block's last document number
        self.count = count
        self.max_weight = max_weight  # as the weights read back: float32
        self.min_length = min_length  # the smallest length byte of its documents
        self._raw, self._compression = raw, compression  # its data, or its decoded postings

    def decode(self) -> Decoded:
        """The block's document numbers and weights (Unreadable if it is damaged)."""
        if isinstance(self._raw, tuple):  # inlined in the term's info: already decoded
            return self._raw
        raw, n = self._raw, self.count
        try:
            if self._compression:
                inflate = zlib.decompressobj()
                start = inflate.decompress(raw, _most(n))
                got = _dense(start, n)
                if got is not None:
                    return got
                data = _head(inflate, start)
            else:
                data = bytes(raw)
            deltas, w = _ids_and_weights(data, n)
        except Unreadable:
            raise
        except Exception as exc:  # a damaged block
            raise Unreadable(f"{type(exc).__name__}: {exc}") from exc
        ids = list(accumulate(deltas))
        if w is None:
            return ids, [1.0] * n
        if isinstance(w, float):
            # Whoosh expands a block's one weight through array("f"), i.e. as float32
            return ids, [float32(w)] * n
        return ids, list(w)


class Blocks:
    """A term's posting list in one segment, deleted documents included, read block by block."""

    def __init__(self, blocks: list[Block]):
        self.blocks = blocks
        self.count = sum(b.count for b in blocks)
        self._decoded: dict[int, Decoded] = {}  # a block is decoded once

    def read(self, wanted: Callable[[Block], bool] | None = None) -> Decoded:
        """The postings of every block (or of those `wanted`), in document order."""
        if wanted is None:
            return self.take(range(len(self.blocks)))
        return self.take([j for j, block in enumerate(self.blocks) if wanted(block)])

    def take(self, chosen) -> Decoded:
        """The postings of the blocks numbered in `chosen` (ascending), in document order."""
        if len(chosen) == 1:
            return self.decoded(chosen[0])
        ids: list[int] = []
        weights: list[float] = []
        for j in chosen:
            i, w = self.decoded(j)
            ids.extend(i)
            weights.extend(w)
        return ids, weights

    def decoded(self, j: int) -> Decoded:
        """The postings of block j (decoded once; callers must not change the lists)."""
        got = self._decoded.get(j)
        if got is None:
            got = self._decoded[j] = self.blocks[j].decode()
        return got


# Posting lists and length columns already read in this process, by segment. A Whoosh
# segment is written once and never changed (deletions are kept beside it, and every
# reader here applies them itself), and its id is random, so what one search decoded
# serves every later search of that segment: the search after a one-file edit (the big
# segments are the same, only the new small one is read), and the feedback search,
# whose fields' length totals are the first search's. Bounded by postings held.


def read_blocks(buf: bytes) -> Blocks:
    """A posting list's blocks; Unreadable if it is not laid out as Whoosh 3 writes it."""
    try:
        return Blocks(list(_read_blocks(buf)))
    except Unreadable:
        raise
    except Exception as exc:  # a changed or damaged block layout
        raise Unreadable(f"{type(exc).__name__}: {exc}") from exc


def _read_blocks(buf: bytes):
    """The blocks of a posting list, headers parsed, postings decoded on demand.

    The layout (W3PostingsWriter): a magic tag, then blocks of a signed length (negative
    for the last block), a pickled info tuple (count, last id, max weight, compression,
    min and max length byte) and the block's data.
    """
    from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC

    if buf[:4] != WHOOSH3_HEADER_MAGIC:
        raise Unreadable("no posting block tag")
    view = memoryview(buf)
    size_at = _SIZE.unpack_from
    pos, last, first = 4, False, 0
    while not last:
        (size,) = size_at(buf, pos)
        last, size, pos = size < 0, abs(size), pos + 4
        block = _block(view[pos : pos + size], first)
        yield block
        first = block.last + 1
        pos += size


def _block(block, first: int) -> Block:
    """A block from its bytes (info tuple, then data); first: its first possible document."""
    info = pickle.loads(block)
    n, last_id, top, compression, min_length = info[:5]
    end = _info_length(info)
    # the info tuple's pickle is what Whoosh wrote: its length follows from its values
    if block[:3] != _INFO_START or block[end - 4 : end] != _INFO_END:
        head = pickle.dumps(info, 2)  # laid out otherwise: pickle it again to compare
        end = len(head)
        if block[:end] != head:
            raise Unreadable("unexpected block info")
    # weights are read back as float32, and rounding keeps their order
    return Block(first, last_id, n, float32(top), min_length, block[end:], compression)


_SIZE = struct.Struct(">i")  # a block's signed length (Whoosh's unpack_int)
# A protocol-2 pickle of a fresh 6-tuple: PROTO 2, MARK, the items, TUPLE, BINPUT 0, STOP
_INFO_START, _INFO_END = b"\x80\x02(", b"tq\x00."


def _info_length(info) -> int:
    """The length of the pickle of a block's info tuple, or 0 if it holds other than ints and floats."""
    total = 7
    for v in info:
        kind = type(v)
        if kind is float:
            total += 9  # BINFLOAT
        elif kind is int and v >= 0:
            total += 2 if v <= 0xFF else 3 if v <= 0xFFFF else 5 if v <= 0x7FFFFFFF else 1 << 30
        else:
            return 0
    return total if len(info) == 6 and total < 1 << 30 else 0


_F32: dict[float, float] = {}


def float32(w: float) -> float:
    """w read back as float32, as Whoosh reads weights (one conversion per distinct value)."""
    got = _F32.get(w)
    if got is None:
        got = _F32[w] = array("f", (w,))[0]
        if len(_F32) > 4096:
            _F32.clear()
    return got


def _head(inflate, out: bytes) -> bytes:
    """Enough of a compressed block to hold its ids and weights (all of it if it has no values).

    The positions after them are about three quarters of a block: inflating only the
    start halves the time spent in zlib. out: what `inflate` gave so far.
    """
    while _VALUES_MARK not in out and not inflate.eof:
        out += inflate.decompress(inflate.unconsumed_tail, 4096)
    return out


def _most(n: int) -> int:
    """The most bytes the ids and weights of n postings take in the pickle (see _dense)."""
    return 3 + 5 + 2 * n + 3 + 2 + 9 * n + 3


_STRUCTS: dict[int, struct.Struct] = {}


def _dense(raw: bytes, n: int) -> Decoded | None:
    """A block's ids and weights read straight from its pickle when it is laid out as a
    dense list's are (None otherwise: unpickle it).

    A posting list of a common word holds most documents: after the first id every delta
    is below 256, pickled as K and one byte; the weights are a tuple of floats, each G and
    8 bytes. Slicing those bytes is about three times faster than unpickling the tuples.
    Layout: PROTO 2, MARK, the first id (K, M or J), the deltas, TUPLE, BINPUT 0, then
    MARK, the weights, TUPLE, BINPUT 1, or N (all 1.0), or one G (all the same).
    """
    if n < 4 or raw[:3] != b"\x80\x02(":
        return None
    op = raw[3]
    if op == 0x4B:  # K
        first, p = raw[4], 5
    elif op == 0x4D:  # M
        first, p = int.from_bytes(raw[4:6], "little"), 6
    elif op == 0x4A:  # J
        first, p = int.from_bytes(raw[4:8], "little", signed=True), 8
    else:
        return None
    end = p + 2 * (n - 1)
    if raw[p:end:2] != b"K" * (n - 1) or raw[end : end + 3] != b"tq\x00":
        return None
    ids = list(accumulate(raw[p + 1 : end : 2], initial=first))
    p = end + 3
    kind = raw[p : p + 1]
    if kind == b"N":
        return ids, [1.0] * n
    if kind == b"G" and len(raw) >= p + 9:
        return ids, [float32(struct.unpack_from(">d", raw, p + 1)[0])] * n
    end = p + 1 + 9 * n
    if kind != b"(" or raw[p + 1 : end : 9] != b"G" * n or raw[end : end + 3] != b"tq\x01":
        return None
    unpack = _STRUCTS.get(n)
    if unpack is None:
        unpack = _STRUCTS[n] = struct.Struct(">" + "xd" * n)
    return ids, list(unpack.unpack_from(raw, p + 1))


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


def holding(docs: list[int]) -> Callable[[Block], bool]:
    """Whether a block's range of document numbers holds one of the sorted docs."""

    def holds(block: Block) -> bool:
        i = bisect_left(docs, block.first)
        return i < len(docs) and docs[i] <= block.last

    return holds


def count_in_list(buf: bytes, docs: list[int], wanted: set[int]) -> int:
    """How many of the sorted docs (`wanted`: the same as a set) a posting list holds."""
    from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC

    if buf[:4] != WHOOSH3_HEADER_MAGIC:
        raise Unreadable("no posting block tag")
    view = memoryview(buf)
    pos, first, k, held, last_block = 4, 0, 0, 0, False
    while k < len(docs) and not last_block:
        (size,) = _SIZE.unpack_from(buf, pos)
        last_block, size, pos = size < 0, abs(size), pos + 4
        last = _last_id(buf, pos)
        if last is None or docs[k] <= last:  # (docs before docs[k] were in earlier blocks)
            block = _block(view[pos : pos + size], first)
            last = block.last
            if docs[k] <= last:
                held += len(wanted.intersection(block.decode()[0]))
                k = bisect_right(docs, last, k)
        first = last + 1
        pos += size
    return held


def _last_id(buf: bytes, at: int) -> int | None:
    """The last document number of the block whose info tuple starts at `at`, read from
    its pickle's second item (None when it is not laid out as Whoosh 3 writes it)."""
    if buf[at : at + 3] != _INFO_START:
        return None
    count = buf[at + 3]  # the count: K (at most 128 postings a block) or M
    q = at + 5 if count == 0x4B else at + 6 if count == 0x4D else 0
    op = buf[q] if q else 0
    if op == 0x4B:
        return buf[q + 1]
    if op == 0x4D:
        return int.from_bytes(buf[q + 1 : q + 3], "little")
    if op == 0x4A:
        return int.from_bytes(buf[q + 1 : q + 5], "little", signed=True)
    return None
