"""BM25 over items: a Whoosh index with stemming, title-like fields boosted, OR semantics.

Scores are computed from exact statistics of the live documents (see LiveStats), so that
an index after any sequence of edits ranks and scores exactly as a rebuild of the same
files does, whatever Whoosh's segments and deletions look like. bm25_score computes them
from the raw posting lists; search_hits_whoosh, Whoosh's own scoring with ExactBM25F, is
the reference it equals bit for bit and the fallback if Whoosh's internals change.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .chunker import Item

INDEX_NAME = "items"
OPTIMIZE_BELOW = 2_000  # items; see should_optimize()
MAX_DELETED_SHARE = 0.1
# Title-like fields weigh more: a word in a file's name or a heading says more
# about the item than the same word deep in its body.
FIELD_BOOSTS = {"name": 2.0, "description": 1.5, "heading": 1.5, "tags": 1.5, "body": 1.0}


def _whoosh() -> None:
    from .whoosh_light import import_whoosh

    import_whoosh()


def storage(directory: Path, readonly: bool = False):
    """Whoosh's storage of directory (whoosh_light.storage: no exception kept in a cycle)."""
    from .whoosh_light import storage as light_storage

    return light_storage(directory, readonly)


def analyzer():
    """The analyzer of every text field and of queries (see analysis.py)."""
    _whoosh()
    from .analysis import analyzer as make

    return make()


def schema():
    """The Whoosh schema of an item."""
    _whoosh()
    from whoosh.fields import ID, TEXT, Schema

    ana = analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        path=ID,
        track=ID,
        **{f: TEXT(analyzer=ana, field_boost=b) for f, b in FIELD_BOOSTS.items()},
    )


def doc_fields(item: Item) -> dict:
    """The Whoosh document of an item."""
    return {
        "id": item.id,
        "path": item.path,
        "track": item.track,
        "name": item.name.replace("-", " "),
        "description": item.description,
        "heading": item.heading,
        "tags": " ".join(item.tags),
        "body": item.text,
    }


def create(directory: Path, items: Iterable[Item]) -> int:
    """Build a new index in directory from scratch; returns its generation."""
    directory.mkdir(parents=True, exist_ok=True)
    ix = storage(directory).create_index(schema(), indexname=INDEX_NAME)
    writer = ix.writer(limitmb=128)
    for item in items:
        writer.add_document(**doc_fields(item))
    writer.commit()
    return ix.latest_generation()


def should_optimize(live: int, deleted: int) -> bool:
    """Whether an update should rewrite the index whole.

    Whoosh keeps deleted documents in its term statistics until their segment is merged
    away, so BM25 scores drift from those of a rebuild. Small indexes are rewritten whole
    (cheap, and then exactly equal to a rebuild); large ones once deletions pile up.
    """
    total = live + deleted
    return total <= OPTIMIZE_BELOW or deleted > total * MAX_DELETED_SHARE


def latest_generation(directory: Path) -> int:
    """The generation of the newest Whoosh table of contents, or -1 (read from file names).

    Whoosh names each committed table of contents `_<index>_<generation>.toc`; listing
    them is enough here and spares importing Whoosh on every freshness check.
    """
    import re

    pattern = re.compile(rf"^_{INDEX_NAME}_(\d+)\.toc$")
    try:
        gens = [int(m.group(1)) for name in os.listdir(directory) if (m := pattern.match(name))]
    except OSError:
        return -1
    return max(gens, default=-1)


def query_terms(text: str) -> list[str]:
    """The analysed (lower-cased, stop-word free, stemmed, CJK n-grams) terms of a query, deduplicated."""
    seen: dict[str, None] = {}
    for token in analyzer()(text):
        seen.setdefault(token.text, None)
    return list(seen)


def open_searcher(directory: Path, generation: int | None = None):
    """A Whoosh searcher on one committed generation, its files opened now.

    A reader opens the generation its manifest names before any slow work: a writer's
    next commit deletes older Whoosh files, and an open (mapped) file outlives that.
    """
    _whoosh()  # before any Whoosh import: the light one (whoosh_light.py)
    from whoosh.index import TOC
    from whoosh.reading import EmptyReader, MultiReader, SegmentReader
    from whoosh.searching import Searcher

    files = storage(directory, readonly=True)
    toc = TOC.read(
        files, INDEX_NAME, gen=None if generation is None or generation < 0 else generation
    )
    readers = [
        SegmentReader(files, toc.schema, seg, generation=toc.generation) for seg in toc.segments
    ]
    from .bm25_postings import keep_only

    keep_only(directory, [seg.make_filename(".seg") for seg in toc.segments])
    if not readers:
        return Searcher(EmptyReader(toc.schema))
    if len(readers) == 1:
        return Searcher(readers[0])
    return Searcher(MultiReader(readers, generation=toc.generation))


def search(
    directory: Path, query: str, limit: int, track: str | None = None, searcher=None
) -> list[tuple[str, float]]:
    """Top items for the query as (item id, BM25F score): OR of every query term in every field.

    With `searcher` (from open_searcher) the search uses it; otherwise it opens the
    newest generation in directory.
    """
    return search_hits(directory, query, limit, track, searcher).items


@dataclass
class Hits:
    """BM25 candidates of one query and how much of the query the best one covers."""

    items: list[tuple[str, float]]  # (item id, score), best first, ties by id
    coverage: float  # share of the query terms' IDF that the best item contains (0..1)


def search_hits(
    directory: Path, query: str, limit: int, track: str | None = None, searcher=None
) -> Hits:
    """Top items for the query with exact live statistics, and the best item's IDF coverage."""
    _whoosh()
    from . import bm25_postings, bm25_score

    terms = query_terms(query)
    if not terms or limit < 1:
        return Hits([], 0.0)
    own = searcher is None
    searcher = open_searcher(directory) if own else searcher
    try:
        reader = searcher.reader()
        if not reader.doc_count():
            return Hits([], 0.0)
        try:
            return bm25_score.search(reader, terms, limit, track)
        except bm25_postings.Unreadable:  # Whoosh's internals changed: let Whoosh score
            return search_hits_whoosh(reader, terms, limit, track)
    finally:
        if own:
            searcher.close()


def search_hits_whoosh(reader, terms: list[str], limit: int, track: str | None) -> Hits:
    """search_hits as Whoosh's own matchers score it: the reference, and the fallback."""
    from whoosh.query import Or, Term
    from whoosh.searching import Searcher

    stats = LiveStats.of(reader, terms)
    q = Or([Term(field, t) for field in FIELD_BOOSTS for t in terms])
    # Preloading every match into an array and scoring in bulk is about twice as fast
    # as Whoosh's default binary tree of union matchers for OR queries like ours.
    q.matcher_type = Or.ARRAY_MATCHER
    filt = Term("track", track) if track else None
    exact = Searcher(reader, weighting=ExactBM25F(stats), closereader=False)
    # Ties at the cut must be broken by item id, not by Whoosh's document numbers
    # (they depend on the edit history): take a margin, and everything if the
    # margin is all ties. Block skipping costs more than it saves on OR queries.
    wanted = limit + TIE_MARGIN
    results = exact.search(q, limit=wanted, filter=filt, optimize=False)
    top_n = results.top_n
    if len(top_n) == wanted and tie_key(top_n[-1][0]) == tie_key(top_n[limit - 1][0]):
        top_n = exact.search(q, limit=None, filter=filt, optimize=False).top_n
    top = _cut(exact, top_n, limit)
    docnum = top[0][2] if top else 0
    coverage = stats.coverage(lambda f, t: _has(reader, f, t, docnum)) if top else 0.0
    return Hits([(item_id, score) for item_id, score, _ in top], coverage)


def _cut(searcher, top_n, limit: int) -> list[tuple[str, float, int]]:
    """The best `limit` of (score, docnum) pairs as (id, score, docnum), ties broken by id."""
    ranked = sorted(top_n, key=lambda sd: -sd[0])
    if len(ranked) > limit:
        edge = tie_key(ranked[limit - 1][0])
        end = limit
        while end < len(ranked) and tie_key(ranked[end][0]) == edge:
            end += 1
        ranked = ranked[:end]
    rows = [(searcher.stored_fields(d)["id"], float(s), d) for s, d in ranked]
    rows.sort(key=lambda r: (-tie_key(r[1]), r[0]))
    return rows[:limit]


TIE_MARGIN = 16


def tie_key(score: float) -> float:
    """A score as ranking compares it: scores equal to 1e-9 are ties."""
    # summing in another order may change the last bits
    return round(score, 9)


class LiveStats:
    """Exact collection statistics of the live documents for a query's terms.

    Whoosh counts deleted documents in doc_count_all, doc_frequency and field_length
    until their segment is merged away, so its BM25 depends on the edit history. Here
    N is the number of live documents, a term's document frequency counts only live
    postings, and a field's average length is the mean of the live documents' stored
    lengths (the same one-byte lengths Whoosh scores each document with).
    """

    def __init__(
        self, n: int, terms: list[str], df: dict[tuple[str, str], int], avgfl: dict[str, float]
    ):
        self.n, self.terms, self.df, self.avgfl = n, terms, df, avgfl

    @classmethod
    def of(cls, reader, terms: list[str]) -> LiveStats:
        """The statistics of a reader's live documents, read through Whoosh's public API."""
        n = reader.doc_count()
        df: dict[tuple[str, str], int] = {}
        avgfl: dict[str, float] = {}
        leaves = leaf_readers(reader)
        for field in FIELD_BOOSTS:
            total = sum(_live_length_total(leaf, field) for leaf, _ in leaves)
            avgfl[field] = total / n if n else 1.0
            for t in terms:
                df[(field, t)] = sum(_live_df(leaf, field, t) for leaf, _ in leaves)
        return cls(n, terms, df, avgfl)

    def idf(self, field: str, text: str) -> float:
        """Whoosh's BM25 idf, log(N / (df + 1)) + 1, from live counts."""
        import math

        if isinstance(text, bytes):  # Whoosh hands scorers the term as UTF-8 bytes
            text = text.decode("utf-8")
        df = self.df.get((field, text))
        if df is None:
            return 1.0
        return math.log(self.n / (df + 1)) + 1 if self.n else 1.0

    def term_weight(self, term: str) -> float:
        """How specific a query term is in this collection (0 when no document has it)."""
        import math

        df = max(self.df.get((f, term), 0) for f in FIELD_BOOSTS)
        return math.log(1 + self.n / (df + 1)) if df else 0.0

    def coverage(self, has: Callable[[str, str], bool]) -> float:
        """The share of the query's term weight in a document; has(field, term): it holds it."""
        weights = {t: self.term_weight(t) for t in self.terms}
        total = sum(weights.values())
        if not total:
            return 0.0
        found = 0.0
        for t, w in weights.items():
            if w and any(has(f, t) for f in FIELD_BOOSTS):
                found += w
        return found / total


def leaf_readers(reader) -> list:
    """The (segment reader, first document number) pairs of a reader."""
    return list(reader.leaf_readers()) if not reader.is_atomic() else [(reader, 0)]


def _has(reader, field: str, text: str, docnum: int) -> bool:
    try:
        m = reader.postings(field, text)
    except Exception:  # TermNotFound
        return False
    if not m.is_active():  # every posting deleted: skip_to would raise ReadTooFar
        return False
    m.skip_to(docnum)
    return m.is_active() and m.id() == docnum


def _live_df(leaf, field: str, text: str) -> int:
    """Live documents of one segment that contain the term in the field."""
    try:
        df = leaf.doc_frequency(field, text)
    except Exception:
        return 0
    if not df or not leaf.has_deletions():
        return df
    deleted = leaf.deleted_docs_set
    # postings() wraps the list in a filter that hides deleted documents: count the raw list
    m = leaf.postings(field, text)
    m = getattr(m, "child", m)
    m.reset()  # the filter has already moved it past leading deleted documents
    return df - _count_in(m, deleted)


def _count_in(m, docnums: frozenset) -> int:
    """How many postings of raw matcher m are in docnums.

    Skipping to each deleted document reads only the posting blocks that could hold it;
    deleted documents are few and lie together (a file's items are added together).
    """
    gone = 0
    for d in sorted(docnums):
        if not m.is_active():
            break
        if m.id() < d:
            m.skip_to(d)
            if not m.is_active():
                break
        if m.id() == d:
            gone += 1
    return gone


def _live_length_total(leaf, field: str) -> int:
    """Sum of the one-byte field lengths of one segment's live documents."""
    from . import bm25_postings

    deleted = leaf.deleted_docs_set if leaf.has_deletions() else frozenset()
    try:
        return bm25_postings.live_length_total(leaf, field, deleted)
    except bm25_postings.Unreadable:  # no cheap access to the column: read document by document
        return sum(
            leaf.doc_field_length(d, field) or 0
            for d in range(leaf.doc_count_all())
            if not leaf.is_deleted(d)
        )


def ExactBM25F(stats: LiveStats):  # noqa: N802 - reads as the class it makes
    """Whoosh's BM25F with idf and average field lengths taken from LiveStats."""
    from whoosh.scoring import BM25F, WeightLengthScorer, bm25

    class Scorer(WeightLengthScorer):
        def __init__(self, searcher, fieldname, text, B, K1):
            self.idf = stats.idf(fieldname, text)
            self.avgfl = stats.avgfl.get(fieldname) or 1.0
            self.B, self.K1 = B, K1
            self.setup(searcher, fieldname, text)

        def _score(self, weight, length):
            return bm25(self.idf, weight, length, self.avgfl, self.B, self.K1)

    class Weighting(BM25F):
        def scorer(self, searcher, fieldname, text, qf=1):
            return Scorer(searcher, fieldname, text, self.B, self.K1)

    return Weighting()
