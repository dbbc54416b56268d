"""Exact BM25F of an OR query, scored from Whoosh 3 posting blocks without Whoosh's matchers.

Whoosh scores an OR of term queries one posting at a time in Python: for each posting of
each (field, term) list a matcher call, a field-length lookup through three layers of
readers and a scorer call. A 3-word query on a 50,000-file wiki (250,000 items) has about
88,000 postings, and scoring them that way took about 0.4 s. Here the lists are read
whole (bm25_postings), scored with C-level loops (or numpy arrays) in the exact operations
of whoosh.scoring.bm25, and added up in the order of Whoosh's ArrayUnionMatcher (field by
field, term by term), so every score is bit-identical to Whoosh's.

The body lists, the last field added and nearly all the postings of a wiki, are read only
where they can matter (MaxScore): once the other fields are scored, the `limit`-th best
score so far bounds the final one from below, and a body block's header (its largest
weight, its shortest length) bounds what it adds. A document whose score so far plus
the body bound stays below that cannot be a hit, and body blocks holding none but such
documents are never decoded.
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from itertools import compress, repeat
from operator import add, mul, truediv

from .bm25_postings import Block, Blocks, Unreadable, blocks, length_bytes, live_length_total

# A document is left out only when its bound is this much below the cut: far more than
# the rounding of a sum, and than the 1e-9 within which scores tie.
MARGIN = 1e-6
# Body blocks the last search read and left undecoded: what the pruning saved (for tests
# and benchmarks; nothing depends on it).
LAST_RUN = {"read": 0, "skipped": 0}


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


def search(reader, terms: list[str], limit: int, track: str | None, vectorised=None):
    """bm25.search_hits on an open reader, scored from the raw posting lists segment by segment.

    With numpy (vectorised; by default when the process has already imported it, as a
    hybrid retrieve has: importing it for BM25 alone would cost more than it saves) the
    same operations run on arrays, with the same roundings and the same sums.
    """
    from . import bm25

    fields = list(bm25.FIELD_BOOSTS)
    last = fields[-1]  # added last by Whoosh: the one field whose lists can be read in part
    vectorised = numpy_ready() if vectorised is None else vectorised
    leaves = [leaf for leaf, _ in bm25.leaf_readers(reader)]
    gone = [leaf.deleted_docs_set if leaf.has_deletions() else frozenset() for leaf in leaves]
    keys = [(f, t) for f in fields for t in terms]
    found: dict[tuple[int, str, str], Blocks] = {}
    lists: dict[tuple[int, str, str], tuple[list[int], list[float]]] = {}
    df = dict.fromkeys(keys, 0)
    for i, leaf in enumerate(leaves):
        dead = sorted(gone[i])
        for f, t in keys:
            bl = found[(i, f, t)] = blocks(leaf, f, t)
            # of the last field, decode only the blocks that may hold a deleted document
            lists[(i, f, t)] = bl.read() if f != last else ([], [])
            if dead:
                held = lists[(i, f, t)][0] if f != last else bl.read(_holds(dead))[0]
                df[(f, t)] -= len(gone[i].intersection(held))
            df[(f, t)] += bl.count
    n = reader.doc_count()
    scored = [
        f for f in fields if any(found[(i, f, t)].count for i in range(len(leaves)) for t in terms)
    ]
    # average lengths of the fields a query term occurs in (the others score nothing)
    avgfl = {
        f: sum(live_length_total(leaf, f, gone[i]) for i, leaf in enumerate(leaves)) / n
        for f in scored
    }
    stats = bm25.LiveStats(n, terms, df, avgfl)
    norms = {f: length_norms(avgfl[f] or 1.0) for f in scored}
    make = _Arrays if vectorised else _Lists
    segments, allowed = [], []
    for i, leaf in enumerate(leaves):
        acc = make(leaf.doc_count_all())
        for f in scored:
            lengths = length_bytes(leaf, f) if f != last else None
            for t in terms if f != last else ():
                if lists[(i, f, t)][0]:
                    acc.add(*lists[(i, f, t)], lengths, stats.idf(f, t), norms[f])
        allowed.append(track_docs(leaf, track))
        acc.mask(gone[i], allowed[i])
        segments.append(acc)
    # the limit-th best score so far: no final score of the limit best is below it
    so_far = sorted((s for acc in segments for s in acc.best(limit)), reverse=True)
    floor = so_far[limit - 1] if len(so_far) >= limit else 0.0
    wanted = limit + bm25.TIE_MARGIN
    pools = []
    LAST_RUN.update(read=0, skipped=0)
    for i, (leaf, acc) in enumerate(zip(leaves, segments, strict=True)):
        tail = [(t, found[(i, last, t)]) for t in terms if found[(i, last, t)].count]
        if tail:
            lengths = length_bytes(leaf, last)
            idf = {t: stats.idf(last, t) for t, _ in tail}
            bound = sum(max(_bound(b, idf[t], norms[last]) for b in bl.blocks) for t, bl in tail)
            keep = None
            if lengths is not None and floor > 0 and bound + MARGIN < floor:
                keep = acc.at_least(floor - bound - MARGIN)
            holds = None if keep is None else _holds(keep)
            for t, bl in tail:
                ids, weights = lists[(i, last, t)] = bl.read(holds)
                read = len(bl.blocks) if holds is None else sum(map(holds, bl.blocks))
                LAST_RUN["read"] += read
                LAST_RUN["skipped"] += len(bl.blocks) - read
                if ids:
                    acc.add(ids, weights, lengths, idf[t], norms[last])
            acc.mask(gone[i], allowed[i] if keep is None else keep)
        pools.append(acc.pool(wanted))
    best = sorted((s for top, _, _ in pools for s, _ in top), reverse=True)
    if not best:
        return bm25.Hits([], 0.0)
    edge = bm25.tie_key(best[min(limit, len(best)) - 1])
    # Ties at the cut are broken by item id, not by document numbers (they depend on the
    # edit history): a segment whose best list may have cut ties off is read whole.
    chosen: list[tuple[float, int, int]] = []  # (score, segment, docnum)
    for i, (top, truncated, everything) in enumerate(pools):
        if truncated and bm25.tie_key(min(s for s, _ in top)) >= edge:
            top = everything()
        chosen.extend((s, i, d) for s, d in top if bm25.tie_key(s) >= edge)
    rows = [(leaves[i].stored_fields(d)["id"], s, (i, d)) for s, i, d in chosen]
    rows.sort(key=lambda r: (-bm25.tie_key(r[1]), r[0]))
    rows = rows[:limit]
    i, d = rows[0][2]
    coverage = stats.coverage(lambda f, t: contains(lists[(i, f, t)][0], d))
    return bm25.Hits([(item_id, score) for item_id, score, _ in rows], coverage)


def track_docs(leaf, track: str | None) -> list[int] | None:
    """The documents of a segment in the track (None: no track filter)."""
    return None if not track else blocks(leaf, "track", track).read()[0]


def _holds(docs: list[int]) -> Callable[[Block], bool]:
    """Whether a block's range of document numbers holds one of the sorted docs."""

    def holds(block: Block) -> bool:
        i = bisect_left(docs, block.first)
        return i < len(docs) and docs[i] <= block.last

    return holds


def _bound(block: Block, idf: float, norms: list[float]) -> float:
    """No posting of the block scores more: bm25 grows with the weight, shrinks with the length."""
    w = block.max_weight
    return idf * ((w * (K1 + 1)) / (w + norms[block.min_length]))


Pool = tuple[list[tuple[float, int]], bool, Callable[[], list[tuple[float, int]]]]


class _Lists:
    """One segment's document scores in a Python list, updated with C-level loops."""

    def __init__(self, size: int):
        self.acc = [0.0] * size

    def add(self, ids, weights, lengths, idf: float, norms: list[float]) -> None:
        """Add one posting list's scores (see add_scores)."""
        add_scores(self.acc, ids, weights, lengths, idf, norms)

    def mask(self, deleted: frozenset, allowed: list[int] | None) -> None:
        """Zero the deleted documents and, given `allowed`, every other one."""
        acc = self.acc
        for d in deleted:
            acc[d] = 0.0
        if allowed is not None:
            kept = [0.0] * len(acc)
            deque(map(kept.__setitem__, allowed, map(acc.__getitem__, allowed)), maxlen=0)
            self.acc = kept

    def best(self, k: int) -> list[float]:
        """The k best scores so far."""
        return heapq.nlargest(k, compress(self.acc, self.acc))

    def at_least(self, floor: float) -> list[int]:
        """The documents scoring at least floor (> 0), in order."""
        return list(compress(range(len(self.acc)), map(floor.__le__, self.acc)))

    def pool(self, wanted: int) -> Pool:
        """The best documents as (score, docnum): each scoring at least the `wanted`-th best,
        whether any were left out, and a way to get them all."""
        acc = self.acc
        docs = list(compress(range(len(acc)), acc))  # every score is > 0: idf > 0, tf > 0
        scores = list(map(acc.__getitem__, docs))
        if len(docs) <= wanted:
            return list(zip(scores, docs, strict=True)), False, list
        cut = heapq.nlargest(wanted, scores)[-1]
        top = list(compress(zip(scores, docs, strict=True), map(cut.__le__, scores)))
        return top, len(top) < len(docs), lambda: list(zip(scores, docs, strict=True))


class _Arrays:
    """_Lists with numpy arrays: the same roundings, the same sums."""

    def __init__(self, size: int):
        import numpy as np

        self.np = np
        self.acc = np.zeros(size)

    def add(self, ids, weights, lengths, idf: float, norms: list[float]) -> None:
        """Add one posting list's scores, operation by operation as whoosh's bm25 does."""
        np = self.np
        at = np.asarray(ids, dtype=np.int64)
        w = np.asarray(weights, dtype=np.float64)
        lb = np.ones(len(at), np.uint8) if lengths is None else np.frombuffer(lengths, np.uint8)[at]
        if not lb.all():
            raise Unreadable("a posting in a field of length 0")
        # ids are distinct within a list, so the fancy-indexed += adds each one once
        self.acc[at] += idf * ((w * (K1 + 1)) / (w + np.asarray(norms)[lb]))

    def mask(self, deleted: frozenset, allowed) -> None:
        """Zero the deleted documents and, given `allowed`, every other one."""
        np = self.np
        if deleted:
            self.acc[np.fromiter(deleted, dtype=np.int64, count=len(deleted))] = 0.0
        if allowed is not None:
            at = np.asarray(allowed, dtype=np.int64)
            kept = np.zeros_like(self.acc)
            kept[at] = self.acc[at]
            self.acc = kept

    def best(self, k: int) -> list[float]:
        """The k best scores so far."""
        scores = self.acc[self.acc > 0]
        if len(scores) > k:
            scores = self.np.partition(scores, len(scores) - k)[len(scores) - k :]
        return scores.tolist()

    def at_least(self, floor: float) -> list[int]:
        """The documents scoring at least floor (> 0), in order."""
        return self.np.flatnonzero(self.acc >= floor).tolist()

    def pool(self, wanted: int) -> Pool:
        """As _Lists.pool."""
        np = self.np
        docs = np.flatnonzero(self.acc)
        scores = self.acc[docs]
        if len(docs) <= wanted:
            return list(zip(scores.tolist(), docs.tolist(), strict=True)), False, list
        cut = np.partition(scores, len(scores) - wanted)[len(scores) - wanted]
        keep = scores >= cut
        top = list(zip(scores[keep].tolist(), docs[keep].tolist(), strict=True))
        return (
            top,
            len(top) < len(docs),
            lambda: list(zip(scores.tolist(), docs.tolist(), strict=True)),
        )


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
