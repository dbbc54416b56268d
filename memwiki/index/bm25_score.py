"""Exact BM25F of an OR query, scored from Whoosh 3 posting blocks without Whoosh's matchers.

Whoosh scores an OR of term queries one posting at a time in Python: for each posting of
each (field, term) list a matcher call, a field-length lookup through three layers of
readers and a scorer call. A 3-word query on a 50,000-file wiki (250,000 items) has about
88,000 postings, and scoring them that way took about 0.4 s. Here the lists are read
whole (bm25_postings), scored with C-level loops (or numpy arrays) in the exact operations
of whoosh.scoring.bm25, and added up in the order of Whoosh's ArrayUnionMatcher (field by
field, term by term), so every score is bit-identical to Whoosh's.

Only the lists that can matter are scored, and only where (MaxScore, every field and
term): a list's bound is its best block's bound, and a block's header (its largest
weight, its shortest length) bounds what any of its postings adds. The lists are read
whole in the order of their bounds, best first, until the limit-th best score so far
(the floor: no final score of the limit best is below it) exceeds what the lists left
can add together; then no document that none of the lists read holds can be a hit, and
each list left is decoded only in the blocks holding a document whose score so far, plus
the block's bound and the bounds of the lists after it, still reaches the floor. Lists
read in that order sum a document's scores in another order than Whoosh: the documents
near the cut are summed again list by list in Whoosh's order, so the scores, the ties
and the ranks stay bit-identical.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right

from .bm25_blocks import holding
from .bm25_postings import (
    Block,
    Blocks,
    Unreadable,
    blocks,
    length_bytes,
    live_length_total,
    numpy_ready,
)
from .bm25_sums import K1, Arrays, Lists, length_norms

# A document is left out only when its bound is this much below the cut: far more than
# the rounding of a sum, and than the 1e-9 within which scores tie.
MARGIN = 1e-6
# Blocks of the lists read in part that the last search decoded and left undecoded: what
# the pruning saved (for tests and benchmarks; nothing depends on it).
LAST_RUN = {"read": 0, "skipped": 0}
PROBE = 2  # the documents probed before the lists read in part, per document asked for


def search(reader, terms: list[str], limit: int, track: str | None, vectorised=None):
    """bm25.search_hits on an open reader, scored from the raw posting lists segment by segment.

    With numpy (vectorised; by default when the process has already imported it, as a
    hybrid retrieve has: importing it for BM25 alone would cost more than it saves) the
    same operations run on arrays, with the same roundings and the same sums.
    """
    from . import bm25

    fields = list(bm25.FIELD_BOOSTS)
    vectorised = numpy_ready() if vectorised is None else vectorised
    leaves = [leaf for leaf, _ in bm25.leaf_readers(reader)]
    gone = [leaf.deleted_docs_set if leaf.has_deletions() else frozenset() for leaf in leaves]
    keys = [(f, t) for f in fields for t in terms]
    found: dict[tuple[int, str, str], Blocks] = {}
    df = dict.fromkeys(keys, 0)
    for i, leaf in enumerate(leaves):
        dead = sorted(gone[i])
        for f, t in keys:
            bl = found[(i, f, t)] = blocks(leaf, f, t)
            if dead and bl.count:  # decode only the blocks that may hold a deleted document
                df[(f, t)] -= len(gone[i].intersection(bl.read(holding(dead))[0]))
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
    # each segment's lists in Whoosh's order (field by field, term by term): the order
    # its ArrayUnionMatcher sums a document's scores in
    lists: list[dict[tuple[str, str], ScoredList]] = []
    for i, leaf in enumerate(leaves):
        lists.append({})
        for f in scored:
            lengths = length_bytes(leaf, f)
            for t in terms:
                if found[(i, f, t)].count:
                    lists[i][(f, t)] = ScoredList(
                        found[(i, f, t)], stats.idf(f, t), norms[f], lengths
                    )
    LAST_RUN.update(read=0, skipped=0)
    make = Arrays if vectorised else Lists
    floor = 0.0
    pooled: list[tuple[float, int, int]] = []  # (score summed in reading order, segment, docnum)
    # the biggest segment first: its limit-th best score is a floor for the others too
    for i in sorted(range(len(leaves)), key=lambda i: -leaves[i].doc_count_all()):
        if lists[i]:
            acc = make(leaves[i].doc_count_all())
            allowed = track_docs(leaves[i], track)
            docs, floor = _segment(acc, list(lists[i].values()), gone[i], allowed, limit, floor)
            pooled.extend((s, i, d) for d, s in docs)
    if not pooled:
        return bm25.Hits([], 0.0)
    # The pool holds every document within MARGIN of the limit-th best score. Summed in
    # another order the last bits may differ: the documents near the cut are summed again
    # in Whoosh's order. Ties at the cut are then broken by item id, not by document
    # numbers (they depend on the edit history).
    cut = heapq.nlargest(limit, (s for s, _, _ in pooled))[-1]
    near = [(i, d) for s, i, d in pooled if s >= cut - MARGIN / 4]
    rows = [(leaves[i].stored_fields(d)["id"], _exact(lists[i], d), (i, d)) for i, d in near]
    rows.sort(key=lambda r: (-bm25.tie_key(r[1]), r[0]))
    rows = rows[:limit]
    i, d = rows[0][2]
    coverage = stats.coverage(lambda f, t: (f, t) in lists[i] and lists[i][(f, t)].score(d) > 0)
    return bm25.Hits([(item_id, score) for item_id, score, _ in rows], coverage)


def _exact(lists: dict[tuple[str, str], ScoredList], docnum: int) -> float:
    """A document's score summed list by list in Whoosh's order, as its matcher sums it."""
    total = 0.0
    for lst in lists.values():
        part = lst.score(docnum)
        if part:
            total += part
    return total


def _segment(acc, lists: list[ScoredList], dead: frozenset, allowed, limit: int, floor: float):
    """One segment's documents that may score at least floor - MARGIN with their scores
    (summed in reading order), and the floor raised by what this segment shows (MaxScore).

    floor: no final score of the limit best is below it. The lists are read whole in the
    order of their bounds, best first, while a document that none of the lists read so
    far holds could still reach the floor. After that only the documents read so far can,
    and each later list is decoded only in the blocks that hold one whose score so far,
    plus the block's bound and the bounds of the lists still to read, reaches the floor.
    """
    order = sorted(lists, key=lambda lst: -lst.bound)
    rem = sum(lst.bound for lst in order)  # the most the lists not read yet add
    local, grown = 0.0, 0.0  # the last limit-th best here, and the most it grew since
    j = 0
    while j < len(order) and not floor - MARGIN > rem:
        lst = order[j]
        ids, weights = lst.blocks.read()
        acc.add(ids, weights, lst.lengths, lst.idf, lst.norms)
        rem, grown, j = rem - lst.bound, grown + lst.bound, j + 1
        # the limit-th best is worth computing once it may have passed what remains
        if j == len(order) or local + grown - MARGIN > rem:
            acc.mask(dead, allowed)
            best = acc.best(limit)
            local, grown = (min(best) if len(best) >= limit else 0.0), 0.0
            floor = max(floor, local)
    acc.mask(dead, allowed)
    if j == len(order):
        return acc.pairs(acc.at_least(floor - MARGIN)), floor
    docs = acc.at_least(floor - MARGIN - rem)
    tail = order[j:]
    probe = PROBE * limit
    # A probe costs `probe` lookups in each list left, each about a sixteenth of a block's
    # decoding; it pays where the lists left are long (measured: a quarter of `probe`
    # blocks a list on average).
    if len(docs) > probe and 4 * sum(len(lst.lasts) for lst in tail) > probe * len(tail):
        # The best documents so far are likely among the best at the end: the limit-th
        # best of their whole scores (their blocks of the lists left decoded now rather
        # than later) raises the floor before the lists left are read.
        top = acc.pairs(docs, probe)
        whole = [s + sum(lst.score(d) for lst in tail) for d, s in top]
        floor = max(floor, heapq.nlargest(limit, whole)[-1] - MARGIN)
    for lst in tail:
        rem -= lst.bound
        need = floor - MARGIN - rem
        chosen = acc.wanted(lst, docs, need)
        LAST_RUN["read"] += len(chosen)
        LAST_RUN["skipped"] += len(lst.blocks.blocks) - len(chosen)
        ids, weights = lst.blocks.take(chosen)
        if ids:
            acc.add_for(docs, ids, weights, lst.lengths, lst.idf, lst.norms)
        floor = max(floor, acc.kth(docs, limit))
        # a document left in an undecoded block did not reach `need` before it either
        docs = acc.keep(docs, floor - MARGIN - rem)
    return acc.pairs(docs), floor


class ScoredList:
    """One (field, term) posting list of a segment with its scorer and its bounds."""

    __slots__ = ("blocks", "idf", "norms", "lengths", "bounds", "bound", "lasts")

    def __init__(self, bl: Blocks, idf: float, norms: list[float], lengths: bytes | None):
        self.blocks, self.idf, self.norms, self.lengths = bl, idf, norms, lengths
        # Whoosh's scorer takes the length 1 where a segment has no length column
        self.bounds = [_bound(b, idf, norms, lengths is not None) for b in bl.blocks]
        self.bound = max(self.bounds, default=0.0)
        self.lasts = [b.last for b in bl.blocks]

    def score(self, docnum: int) -> float:
        """The document's score in this list (0.0: no posting), as add_scores computes it."""
        j = bisect_left(self.lasts, docnum)
        if j == len(self.lasts):
            return 0.0
        ids, weights = self.blocks.decoded(j)
        k = bisect_left(ids, docnum)
        if k == len(ids) or ids[k] != docnum:
            return 0.0
        w, lb = weights[k], self.lengths[docnum] if self.lengths is not None else 1
        if not lb:
            raise Unreadable("a posting in a field of length 0")
        return self.idf * ((w * (K1 + 1)) / (w + self.norms[lb]))

    def wanted(self, docs: list[int], scores: list[float], need: float) -> list[int]:
        """The blocks holding a document (of sorted docs) whose score plus the block's bound reaches need."""
        bounds, lasts = self.bounds, self.lasts
        chosen: list[int] = []
        if len(docs) < len(lasts):
            j = 0
            for d, s in zip(docs, scores, strict=True):
                j = bisect_left(lasts, d, j)
                if j == len(lasts):
                    break
                if s + bounds[j] >= need and (not chosen or chosen[-1] != j):
                    chosen.append(j)
            return chosen
        lo = 0
        for j, last in enumerate(lasts):  # a block holds the documents after the one before
            hi = bisect_right(docs, last, lo)
            if hi > lo and max(scores[lo:hi]) + bounds[j] >= need:
                chosen.append(j)
            lo = hi
        return chosen


def track_docs(leaf, track: str | None) -> list[int] | None:
    """The documents of a segment in the track (None: no track filter)."""
    return None if not track else blocks(leaf, "track", track).read()[0]


def _bound(block: Block, idf: float, norms: list[float], lengths: bool = True) -> float:
    """No posting of the block scores more: bm25 grows with the weight, shrinks with the length.

    lengths False: the segment has no length column and every posting is scored with length 1.
    """
    w = block.max_weight
    return idf * ((w * (K1 + 1)) / (w + norms[block.min_length if lengths else 1]))
