"""Updating a built BM25 index: one Whoosh commit, and when it merges segments.

Every update adds one small segment. Whoosh's default policy (MERGE_SMALL) merges the
small ones again every few commits, and that merge was most of a one-file edit's cost
(83 of 310 ms at 2,000 files: reading every posting of every small segment). Merging
changes no answer: scores come from exact live statistics whatever the segment layout
(bm25.LiveStats), so it only trades commit time against search time, which grows by a
little per segment (docs/retrieval.md, "One-file edits"). So:

- a reader's inline update (a retrieve that finds an edit) never merges until the index
  has MAX_SEGMENTS segments, and then merges down to half of that;
- work that may take longer (`memwiki reindex`, the pre-commit and background reindex)
  merges every small segment it can (see tiered());
- a segment whose documents are all deleted (a file edited twice) is dropped at once:
  that costs nothing, it only leaves the table of contents;
- small indexes and indexes with many deleted documents are rewritten whole
  (bm25.should_optimize), as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from . import bm25
from .chunker import Item

#: The most segments a reader's inline update leaves; one that would leave more merges
#: down to half as many or fewer (measured: docs/retrieval.md, about 0.45 ms of a
#: retrieve per segment).
MAX_SEGMENTS = 12


def update(
    directory: Path,
    removed_paths: Iterable[str],
    added: Iterable[Item],
    optimize: bool,
    merge: bool = False,
) -> tuple[int, int]:
    """Delete the items of removed paths and add new items, in one Whoosh commit.

    merge: merge small segments now (a reindex); otherwise only when there are many
    (policy). Returns the new generation and how many deleted documents remain.
    """
    ix = bm25.storage(directory).open_index(bm25.INDEX_NAME)
    writer = _writer(ix)
    try:
        for path in removed_paths:
            writer.delete_by_term("path", path)
        for item in added:
            writer.add_document(**bm25.doc_fields(item))
    except BaseException:
        writer.cancel()
        raise
    writer.commit(mergetype=policy(optimize, merge))
    return ix.latest_generation(), deleted_count(ix)


def merge(directory: Path) -> tuple[int, int] | None:
    """Merge the small segments of an index nothing else changes (see update), or None."""
    ix = bm25.storage(directory).open_index(bm25.INDEX_NAME)
    if not worth_merging(ix):
        return None
    writer = _writer(ix)
    writer.commit(mergetype=policy(optimize=False, merge=True))
    return ix.latest_generation(), deleted_count(ix)


def _writer(ix):
    """ix's writer, with the schema memwiki writes now: the table of contents it commits
    carries it, so an index an older memwiki wrote gets analysis.Tokenizer (the same
    tokens, nothing large to compile when the index is opened) at its next commit."""
    writer = ix.writer(timeout=30)
    writer.schema = bm25.schema()
    return writer


def policy(optimize: bool, merge: bool):
    """The Whoosh merge function of one commit (see the module docstring)."""
    from whoosh.writing import OPTIMIZE

    if optimize:
        return OPTIMIZE
    if merge:
        return tiered(keep=1)

    def inline(writer, segments):
        live = [s for s in segments if s.doc_count()]
        if len(live) + 1 <= MAX_SEGMENTS:  # + the segment this commit writes
            return live
        return tiered(keep=MAX_SEGMENTS // 2)(writer, live)

    return inline


def plan(segments, keep: int) -> tuple[list, list]:
    """(segments to merge, segments kept): the smallest, leaving at most `keep` others,
    and with them every segment no larger than the ones merged together.

    The second rule keeps segments in tiers of growing size, so a document is merged
    again only about log2(documents) times however many updates come. Segments whose
    documents are all deleted are in neither list: they are dropped without being read.
    """
    order = sorted((s for s in segments if s.doc_count()), key=lambda s: s.doc_count())
    n = max(0, len(order) - keep)
    total = sum(s.doc_count() for s in order[:n])
    while n < len(order) and order[n].doc_count() <= total:
        total += order[n].doc_count()
        n += 1
    return order[:n], order[n:]


def tiered(keep: int):
    """A Whoosh merge function that merges plan(segments, keep)."""

    def merge(writer, segments):
        from whoosh.reading import SegmentReader

        merged, kept = plan(segments, keep)
        for seg in merged:
            reader = SegmentReader(writer.storage, writer.schema, seg)
            writer.add_reader(reader)  # copies the live documents only
            reader.close()
        return kept

    return merge


def worth_merging(ix) -> bool:
    """Whether a reindex that changes nothing should still commit a merge."""
    segments = _segments(ix)
    merged, kept = plan(segments, keep=1)
    dropped = len(segments) - len(merged) - len(kept)
    return len(merged) > 1 or dropped > 0


def deleted_count(ix) -> int:
    """Deleted documents still held by the committed segments of a Whoosh index."""
    return sum(seg.deleted_count() for seg in _segments(ix))


def segment_count(ix) -> int:
    """Segments of the committed table of contents of a Whoosh index."""
    return len(_segments(ix))


def _segments(ix) -> list:
    """The segments of the newest committed table of contents."""
    from whoosh.index import TOC

    return TOC.read(ix.storage, ix.indexname).segments
