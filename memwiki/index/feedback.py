"""Pseudo-relevance feedback for BM25, taken from the fused first pass.

The best item of the fused ranking (BM25 and vectors together) is usually right even
when the query shares few words with the notes; its most specific words, searched with
BM25 as a second query, find the other files that use the same vocabulary (the second
relevant file of a multi-part question, a paraphrase's answer written in the wiki's own
terms). Those hits join the fused scores with a small weight. No second model call: the
words come from the item's text on disk, scored with the index's exact live statistics,
so an edited index and a rebuild choose the same words and the same scores.

Measured in docs/retrieval.md ("Third pass"); BM25 feedback taken from BM25's own top
files was measured there too and loses.
"""

from __future__ import annotations

import math

# Each expansion hit adds EXPANSION_WEIGHT * its BM25 score / the best expansion score.
EXPANSION_WEIGHT = 0.4
EXPANSION_TERMS = 10  # the feedback item's heaviest words not already in the query
DF_FIELDS = ("body",)
MAX_SHARE = 0.1  # a term in more than this share of the documents says too little
# An item's text read for its words, and the words weighed, at most: a note of one 5 MB
# line (a pasted JSON) is one item of 100,000 distinct words, whose document frequencies
# took 3 s of every query it answered (found by the vault audit). Ordinary items hold a
# few hundred words, far under both.
MAX_ITEM_CHARS = 200_000
MAX_TERMS = 2_000


def top_item(rows, fused: dict[int, float]) -> int | None:
    """The fused ranking's best item; ties broken by item id (the same on every device)."""
    from .bm25 import tie_key

    if not fused:
        return None
    return min(fused, key=lambda i: (-tie_key(fused[i]), rows[i].id))


def item_terms(snap, row) -> dict[str, int]:
    """The analysed terms of an item as BM25 indexed it (name, description, tags, heading,
    body read from the file on disk), with their counts."""
    from . import bm25

    try:
        lines = (snap.root / row.path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    body = "\n".join(lines[row.start_line - 1 : row.end_line]).strip()[:MAX_ITEM_CHARS]
    text = f"{row.name.replace('-', ' ')} {row.description} {' '.join(row.tags)} {row.heading}"
    counts: dict[str, int] = {}
    for token in bm25.analyzer()(f"{text} {body}"):
        counts[token.text] = counts.get(token.text, 0) + 1
    return counts


def expansion_terms(
    reader, counts: dict[str, int], query_terms, n: int = EXPANSION_TERMS, idf: bool = True
):
    """The n heaviest terms of an item outside the query: tf / length * log(1 + N / (df + 1)),
    df the live documents holding the term in DF_FIELDS' most frequent one. A term of one
    document only (this one) cannot find another, and one in more than MAX_SHARE of them
    says little (and has long posting lists): both are left out. Ties by term."""
    from . import bm25

    total = sum(counts.values()) or 1
    docs = reader.doc_count()
    leaves, gone = [], []
    for leaf, _ in bm25.leaf_readers(reader):
        dead = leaf.deleted_docs_set if leaf.has_deletions() else frozenset()
        if len(dead) < leaf.doc_count_all():  # a segment of deleted documents adds nothing
            leaves.append(leaf)
            gone.append(dead)
    skip = set(query_terms)
    if len(counts) > MAX_TERMS:  # the most frequent ones (ties by term: the same everywhere)
        counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TERMS])
    weights: dict[str, float] = {}
    for term, count in counts.items():
        if term in skip:
            continue
        if not idf:
            weights[term] = count
            continue
        df = max(live_df(leaves, gone, f, term, MAX_SHARE * docs) for f in DF_FIELDS)
        if df < 2 or df > MAX_SHARE * docs:
            continue
        weights[term] = count / total * math.log(1 + docs / (df + 1))
    return sorted(weights, key=lambda t: (-weights[t], t))[:n]


def live_df(leaves, gone, field: str, term: str, most: float) -> int:
    """The live documents holding term in field, exact up to `most`: Whoosh's counts
    (deleted documents included) less the deleted ones, found by decoding only the blocks
    that may hold one. A count that stays above `most` whatever the deletions is returned
    as it is (the caller leaves such a term out), and is never decoded."""
    from . import bm25_postings

    raws = [leaf.doc_frequency(field, term) for leaf in leaves]
    total = sum(raws)
    if total - sum(len(dead) for dead, raw in zip(gone, raws, strict=True) if raw) > most:
        return total
    for leaf, dead, raw in zip(leaves, gone, raws, strict=True):
        if not raw or not dead:
            continue
        try:
            total -= bm25_postings.count_held(leaf, field, term, sorted(dead))
        except bm25_postings.Unreadable:  # Whoosh's internals changed: its public postings
            held = [d for d in leaf.postings(field, term).all_ids()]
            # postings() already hides deleted documents: every one left is live
            total -= raw - len(held)
    return total


def expand(
    snap,
    fused: dict[int, float],
    query: str,
    track: str | None,
    limit: int,
    weight: float | None = None,
    n_terms: int | None = None,
    idf: bool = True,
    ranking: dict[int, float] | None = None,
) -> dict[int, float]:
    """fused plus weight x the normalised BM25 scores of the best item's expansion terms.

    weight, n_terms: EXPANSION_WEIGHT and EXPANSION_TERMS unless given (0: no feedback).
    ranking: the scores the best item is taken from (fused itself unless given: a
    project-scoped retrieve passes its scoped scores, so another project's item never
    chooses the words).
    """
    from . import bm25, bm25_postings, bm25_score

    weight = EXPANSION_WEIGHT if weight is None else weight
    n_terms = EXPANSION_TERMS if n_terms is None else n_terms
    best = top_item(snap.state.rows, fused if ranking is None else ranking)
    if best is None or weight <= 0:
        return fused
    rows = snap.state.rows
    reader = snap.searcher().reader()
    terms = expansion_terms(
        reader, item_terms(snap, rows[best]), bm25.query_terms(query), n_terms, idf
    )
    if not terms:
        return fused
    try:
        found = bm25_score.search(reader, terms, limit, track)
    except bm25_postings.Unreadable:  # Whoosh's internals changed: let Whoosh score
        found = bm25.search_hits_whoosh(reader, terms, limit, track)
    hits = [(rows.find(h), s) for h, s in found.items]
    hits = [(i, s) for i, s in hits if i is not None]
    if not hits:
        return fused
    out = dict(fused)
    top = hits[0][1] or 1.0
    for i, s in hits:
        out[i] = out.get(i, 0.0) + weight * s / top
    return out
