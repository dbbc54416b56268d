"""The score sums of bm25_score: one posting list at a time, in Whoosh's own operations.

Lists keeps the sums in a Python list and adds with C-level maps; Arrays keeps them in a
numpy array (large wikis). Both round exactly as whoosh.scoring.bm25 does, so every sum is
bit-identical to Whoosh's (bm25_score says why that matters and in which order lists are
added).
"""

from __future__ import annotations

import heapq
import sys
from collections import deque
from itertools import compress, repeat
from operator import add, itemgetter, mul, truediv
from typing import TYPE_CHECKING

from .bm25_postings import Unreadable

if TYPE_CHECKING:
    from .bm25_score import ScoredList


class Lists:
    """One segment's document scores in a Python list, updated with C-level loops."""

    def __init__(self, size: int):
        self.acc = [0.0] * size
        # the documents scored so far while they are few: a scan of them is cheaper
        # than one of the whole list
        self.seen: set[int] | None = set()

    def add(self, ids, weights, lengths, idf: float, norms: list[float]) -> None:
        """Add one posting list's scores (see add_scores)."""
        add_scores(self.acc, ids, weights, lengths, idf, norms)
        if self.seen is not None:
            self.seen.update(ids)
            if len(self.seen) > len(self.acc) // 8:
                self.seen = None

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
        if self.seen is None:
            return heapq.nlargest(k, compress(self.acc, self.acc))
        scores = list(map(self.acc.__getitem__, self.seen))
        return heapq.nlargest(k, compress(scores, scores))

    def add_for(self, docs: list[int], ids, weights, lengths, idf: float, norms) -> None:
        """add, for the postings of docs only (the other documents are out of the race)."""
        wanted = set(docs)
        keep = list(map(wanted.__contains__, ids))
        add_scores(
            self.acc, list(compress(ids, keep)), list(compress(weights, keep)), lengths, idf, norms
        )

    def at_least(self, floor: float) -> list[int]:
        """The documents scoring at least floor and more than 0, in order."""
        floor, acc = max(floor, sys.float_info.min), self.acc
        if self.seen is None:
            return list(compress(range(len(acc)), map(floor.__le__, acc)))
        docs = list(self.seen)
        return sorted(compress(docs, map(floor.__le__, map(acc.__getitem__, docs))))

    def pairs(self, docs: list[int], k: int | None = None) -> list[tuple[int, float]]:
        """(document, score so far) of docs, or of the k of them scoring best."""
        pairs = list(zip(docs, map(self.acc.__getitem__, docs), strict=True))
        return pairs if k is None else heapq.nlargest(k, pairs, key=itemgetter(1))

    def wanted(self, lst: ScoredList, docs: list[int], need: float) -> list[int]:
        """lst's blocks holding one of docs whose score so far plus the block's bound reaches need."""
        return lst.wanted(docs, list(map(self.acc.__getitem__, docs)), need)

    def kth(self, docs: list[int], k: int) -> float:
        """The k-th best score so far of docs (0.0 when fewer)."""
        best = heapq.nlargest(k, map(self.acc.__getitem__, docs))
        return best[-1] if len(best) == k else 0.0

    def keep(self, docs: list[int], need: float) -> list[int]:
        """The docs scoring at least need so far."""
        return list(compress(docs, map(need.__le__, map(self.acc.__getitem__, docs))))


class Arrays:
    """Lists with numpy arrays: the same roundings, the same sums."""

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

    def add_for(self, docs: list[int], ids, weights, lengths, idf: float, norms) -> None:
        """add, for docs at least: here for every posting (cheaper than choosing)."""
        self.add(ids, weights, lengths, idf, norms)

    def at_least(self, floor: float):
        """The documents scoring at least floor and more than 0, in order (an array)."""
        return self.np.flatnonzero(self.acc >= max(floor, sys.float_info.min))

    def pairs(self, docs, k: int | None = None) -> list[tuple[int, float]]:
        """As Lists.pairs (docs: an array)."""
        scores = self.acc[docs]
        if k is not None and len(docs) > k:
            top = self.np.argpartition(scores, len(scores) - k)[len(scores) - k :]
            docs, scores = docs[top], scores[top]
        return list(zip(docs.tolist(), scores.tolist(), strict=True))

    def wanted(self, lst: ScoredList, docs, need: float) -> list[int]:
        """As Lists.wanted, with arrays: the block of a document is the first whose last
        document is not before it."""
        np = self.np
        if not lst.lasts:
            return []
        block = np.searchsorted(np.asarray(lst.lasts), docs)
        inside = block < len(lst.lasts)
        bounds = np.asarray(lst.bounds)[np.minimum(block, len(lst.lasts) - 1)]
        chosen = block[inside & (self.acc[docs] + bounds >= need)]
        # docs are sorted, so are their blocks: keep the first of each run (np.unique
        # would import numpy.ma, 12 ms in a cold process)
        return chosen[np.diff(chosen, prepend=-1) != 0].tolist()

    def kth(self, docs, k: int) -> float:
        """As Lists.kth."""
        scores = self.acc[docs]
        if len(scores) < k:
            return 0.0
        return float(self.np.partition(scores, len(scores) - k)[len(scores) - k])

    def keep(self, docs, need: float):
        """As Lists.keep."""
        return docs[self.acc[docs] >= need]


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
