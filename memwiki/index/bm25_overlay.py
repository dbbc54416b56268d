"""BM25 on the committed Whoosh index with a prepared update laid over it, in memory.

A deferred update (index/deferred.py) answers before Whoosh holds its documents. The
search reads the committed segments with the update's files hidden (their documents
count as deleted) and the update's new items as one more segment held in memory,
analysed field by field as Whoosh's writer analyses a document. bm25_score and the
feedback search read it like any other reader; their statistics are of the live
documents (bm25.LiveStats), so they are the updated index's, and so are every score,
tie and rank.
"""

from __future__ import annotations

from collections.abc import Iterable

from .bm25_blocks import Block, Blocks, Decoded


class MemorySegment:
    """New items as a Whoosh segment reader shows them to bm25_score and feedback."""

    _memwiki_key = None  # bm25_postings caches nothing of it: it lives for one answer

    def __init__(self, items: Iterable) -> None:
        from whoosh.util.numeric import length_to_byte

        from . import bm25
        from .bm25_blocks import float32

        schema = bm25.schema()
        self.ids: list[str] = []
        postings: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
        lengths: dict[str, bytearray] = {}
        items = list(items)
        # A file's items share their name, description and tags: each value analysed once.
        analysed: dict[tuple[str, str], list[tuple[str, int, float]]] = {}
        for d, item in enumerate(items):
            self.ids.append(item.id)
            fields = bm25.doc_fields(item)
            for name in sorted(fields):  # Whoosh's writer's order, for the same sums
                field = schema[name]
                terms = analysed.get((name, fields[name]))
                if terms is None:
                    terms = analysed[(name, fields[name])] = [
                        (tbytes.decode("utf-8"), freq, float32(weight))  # stored as float32
                        for tbytes, freq, weight, _ in field.index(fields[name])
                    ]
                length = sum(freq for _, freq, _ in terms) if field.scorable else 0
                for text, _, weight in terms:
                    ids, weights = postings.setdefault((name, text), ([], []))
                    ids.append(d)
                    weights.append(weight)
                if length:
                    column = lengths.setdefault(name, bytearray(len(items)))
                    column[d] = length_to_byte(length)
        self._postings = postings
        self._lengths = {name: bytes(col) for name, col in lengths.items()}

    def memory_blocks(self, field: str, text: str) -> Blocks:
        """The term's postings as one decoded block (bm25_postings reads these first)."""
        found = self._postings.get((field, text))
        if found is None:
            return Blocks([])
        ids, weights = found
        column = self._lengths.get(field)
        shortest = min((column[d] for d in ids), default=0) if column is not None else 0
        decoded: Decoded = (ids, weights)
        return Blocks([Block(ids[0], ids[-1], len(ids), max(weights), shortest, decoded)])

    def memory_lengths(self, field: str) -> bytes | None:
        """The field's one-byte lengths of every item (None: no item has the field)."""
        return self._lengths.get(field)

    def doc_count_all(self) -> int:
        """Items held."""
        return len(self.ids)

    doc_count = doc_count_all

    def has_deletions(self) -> bool:
        """Never: a prepared update's items are all live."""
        return False

    deleted_docs_set: frozenset = frozenset()

    def doc_frequency(self, field: str, text: str) -> int:
        """Items holding the term in the field."""
        found = self._postings.get((field, text))
        return len(found[0]) if found else 0

    def stored_fields(self, docnum: int) -> dict:
        """The stored fields of an item: its id."""
        return {"id": self.ids[docnum]}


class _Hidden:
    """A committed segment with the documents of the update's files deleted too."""

    def __init__(self, leaf, hidden: frozenset) -> None:
        self._leaf = leaf
        own = leaf.deleted_docs_set if leaf.has_deletions() else frozenset()
        self.deleted_docs_set = frozenset(own) | hidden

    def has_deletions(self) -> bool:
        """True: it hides some documents at least."""
        return bool(self.deleted_docs_set)

    def is_deleted(self, docnum: int) -> bool:
        """Whether the document is deleted or hidden."""
        return docnum in self.deleted_docs_set

    def doc_count(self) -> int:
        """Live documents."""
        return self._leaf.doc_count_all() - len(self.deleted_docs_set)

    def __getattr__(self, name: str):
        return getattr(self._leaf, name)  # the segment's postings and columns, unchanged


class OverlayReader:
    """A reader of the committed segments, the update's files hidden, its items added."""

    def __init__(self, reader, gone: Iterable[str], items: list) -> None:
        from . import bm25
        from .bm25_postings import blocks

        gone = sorted(gone)
        leaves: list = []
        start = 0
        for leaf, _ in bm25.leaf_readers(reader):
            hidden: set[int] = set()
            for path in gone:
                hidden.update(blocks(leaf, "path", path).read()[0])
            leaves.append((_Hidden(leaf, frozenset(hidden)) if hidden else leaf, start))
            start += leaf.doc_count_all()
        if items:
            leaves.append((MemorySegment(items), start))
        self._leaves = leaves

    def is_atomic(self) -> bool:
        """Never: its segments are read one by one."""
        return False

    def leaf_readers(self):
        """(segment reader, first document number) pairs, the memory segment last."""
        return iter(self._leaves)

    def doc_count(self) -> int:
        """Live documents of the updated index."""
        return sum(leaf.doc_count() for leaf, _ in self._leaves)


class OverlaySearcher:
    """What Snapshot.searcher() returns for a deferred update: reader() is the overlay."""

    def __init__(self, searcher, gone: Iterable[str], items: list) -> None:
        self._searcher, self._gone, self._items = searcher, list(gone), items
        self._reader: OverlayReader | None = None

    def reader(self) -> OverlayReader:
        """The overlay reader (built once)."""
        if self._reader is None:
            self._reader = OverlayReader(self._searcher.reader(), self._gone, self._items)
        return self._reader

    def close(self) -> None:
        """Nothing: the committed index's searcher is its snapshot's to close."""
