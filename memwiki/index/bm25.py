"""BM25 over items: a Whoosh index with stemming, title-like fields boosted, OR semantics."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .chunker import Item

INDEX_NAME = "items"
OPTIMIZE_BELOW = 2_000  # items; see update()
MAX_DELETED_SHARE = 0.1
# Title-like fields weigh more: a word in a file's name or a heading says more
# about the item than the same word deep in its body.
FIELD_BOOSTS = {"name": 2.0, "description": 1.5, "heading": 1.5, "tags": 1.5, "body": 1.0}


# English function words beyond Whoosh's short default list. Questions put to memory
# ("how do I...", "what did we decide...") are full of them; they match nearly every
# item, cost time, and say nothing about which item answers.
EXTRA_STOP_WORDS = frozenset(
    """about above after again against all also am any because been before being below
    between both but could did do does doing down during each else ever every few further
    had has having he her here hers herself him himself his how i i'd i'll i'm i've into its
    itself just me more most my myself no nor now off once only other ought our ours
    ourselves out over own same she should so some such than their theirs them themselves
    then there these they those through too under until up very was were what whats where
    which while who whom why would yours yourself yourselves""".split()
)


def _whoosh() -> None:
    from .whoosh_light import import_whoosh

    import_whoosh()


def analyzer():
    """Tokenise, lower-case, drop stop words, stem: the same at index and at query time."""
    _whoosh()
    from whoosh.analysis import STOP_WORDS, StemmingAnalyzer

    return StemmingAnalyzer(stoplist=STOP_WORDS | EXTRA_STOP_WORDS)


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


def _doc(item: Item) -> dict:
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
    _whoosh()
    from whoosh import index

    directory.mkdir(parents=True, exist_ok=True)
    ix = index.create_in(str(directory), schema(), indexname=INDEX_NAME)
    writer = ix.writer(limitmb=128)
    for item in items:
        writer.add_document(**_doc(item))
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


def update(
    directory: Path, removed_paths: Iterable[str], added: Iterable[Item], optimize: bool
) -> int:
    """Delete the items of removed paths and add new items, in one Whoosh commit."""
    _whoosh()
    from whoosh import index

    ix = index.open_dir(str(directory), indexname=INDEX_NAME)
    writer = ix.writer(timeout=30)
    try:
        for path in removed_paths:
            writer.delete_by_term("path", path)
        for item in added:
            writer.add_document(**_doc(item))
    except BaseException:
        writer.cancel()
        raise
    writer.commit(optimize=optimize)
    return ix.latest_generation()


def latest_generation(directory: Path) -> int:
    """The generation of the newest Whoosh table of contents, or -1 (read from file names).

    Whoosh names each committed table of contents `_<index>_<generation>.toc`; listing
    them is enough here and spares importing Whoosh on every freshness check.
    """
    import os
    import re

    pattern = re.compile(rf"^_{INDEX_NAME}_(\d+)\.toc$")
    try:
        gens = [int(m.group(1)) for name in os.listdir(directory) if (m := pattern.match(name))]
    except OSError:
        return -1
    return max(gens, default=-1)


def query_terms(text: str) -> list[str]:
    """The analysed (lower-cased, stop-word free, stemmed) terms of a query, deduplicated."""
    seen: dict[str, None] = {}
    for token in analyzer()(text):
        seen.setdefault(token.text, None)
    return list(seen)


def open_searcher(directory: Path, generation: int | None = None):
    """A Whoosh searcher on one committed generation, its files opened now.

    A reader opens the generation its manifest names before any slow work: a writer's
    next commit deletes older Whoosh files, and an open (mapped) file outlives that.
    """
    _whoosh()
    from whoosh.filedb.filestore import FileStorage
    from whoosh.index import TOC
    from whoosh.reading import EmptyReader, MultiReader, SegmentReader
    from whoosh.searching import Searcher

    storage = FileStorage(str(directory), readonly=True)
    toc = TOC.read(
        storage, INDEX_NAME, gen=None if generation is None or generation < 0 else generation
    )
    readers = [
        SegmentReader(storage, toc.schema, seg, generation=toc.generation) for seg in toc.segments
    ]
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
    _whoosh()
    from whoosh.query import Or, Term

    terms = query_terms(query)
    if not terms:
        return []
    q = Or([Term(field, t) for field in FIELD_BOOSTS for t in terms])
    # Preloading every match into an array and scoring in bulk is about twice as fast
    # as Whoosh's default binary tree of union matchers for OR queries like ours.
    q.matcher_type = Or.ARRAY_MATCHER
    filt = Term("track", track) if track else None
    own = searcher is None
    searcher = open_searcher(directory) if own else searcher
    try:
        # Whoosh's block-quality skipping costs more than it saves on OR queries this size.
        hits = searcher.search(q, limit=limit, filter=filt, optimize=False)
        return [(hit["id"], float(hit.score)) for hit in hits]
    finally:
        if own:
            searcher.close()
