"""The vector half of retrieval: a query's vector against the index matrix.

One model scores by cosine. The ensemble embedder's rows hold two models' vectors side
by side (memwiki/embed/ensemble.py); each model's cosines are standardised over the
items and added, because the two models' cosines live on different scales.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .indexer import Snapshot

MIN_COSINE = 0.15  # below this a vector-only hit is noise, not a match
#: A cosine of unit rows is within 1 plus float32 rounding; a segment overwritten behind a
#: sound header gives rows far longer (doctor reports them, `reindex --full` repairs them).
UNIT_SLACK = 1e-3


def vector_scores(matrix, qvec, blocks: tuple[int, ...] | None = None, valid=None):
    """Every row's vector score: its cosine, or for an ensemble embedder the models' summed z-scores.

    blocks: the widths of the models' parts of each row (EnsembleEmbedder.blocks). Each
    model's cosines are standardised over the valid rows, summed, and mapped back onto
    the first model's scale (its mean and spread), so MIN_COSINE and the fusion read the
    same as for one model. Without blocks: the plain dot product.
    """
    import numpy as np

    from .vectors import product

    if not blocks or len(blocks) < 2:
        return product(matrix, qvec.astype(np.float32))
    rows = valid if valid is not None else slice(None)
    total = np.zeros(matrix.shape[0], dtype=np.float64)
    stats: list[tuple[float, float]] = []
    start = 0
    for width in blocks:
        # Rows and query were scaled by 1/sqrt(len(blocks)): a block's product times
        # len(blocks) is that model's cosine.
        # The query with every other model's part zeroed: matrix @ it is this model's
        # product, and works for the segmented matrix too (it supports only `@`).
        part = np.zeros_like(qvec, dtype=np.float32)
        part[start : start + width] = qvec[start : start + width]
        cos = np.asarray(product(matrix, part), dtype=np.float64)
        cos *= len(blocks)
        start += width
        mean, spread = float(cos[rows].mean()), float(cos[rows].std()) + 1e-9
        stats.append((mean, spread))
        total += (cos - mean) / spread
    mean, spread = stats[0]
    return (mean + spread * total / len(blocks)).astype(np.float32)


def blocks_of(key: dict | None) -> tuple[int, ...] | None:
    """The models' widths in a row, from the index's {provider, model, dim}: None for one model.

    An ensemble's model name joins its parts' names with "+"; its parts are equally wide
    (EnsembleEmbedder checks that).
    """
    if not key or key.get("provider") != "ensemble":
        return None
    parts = str(key.get("model", "")).count("+") + 1
    return (int(key["dim"]) // parts,) * parts if parts > 1 else None


def mismatch(state, key: dict) -> str:
    """Why state's vectors cannot answer a query embedded by the model of key ("" when they can).

    Vectors of one model never score another model's query (DESIGN.md, invariant 4): the
    two may even share a dimension (MiniLM and the hash embedder both have 384), so a
    mixed product runs and ranks by noise.
    """
    if state.vectors_file is None:
        return "BM25 only: vectors are being built"
    if state.embedder != key:
        return "BM25 only: vectors are being rebuilt for another model"
    return ""


def query_vector(embedder, query: str):
    """The query's vector (embed_query where the embedder embeds queries differently)."""
    from ..embed import embed_query

    return embed_query(embedder, [query])[0]


def vector_hits(snap: Snapshot, qvec, track: str | None, n: int) -> list[tuple[int, float]]:
    """The n items nearest to qvec, best first, masked by track and missing vectors."""
    import numpy as np

    from .vectors import best_rows

    matrix = snap.matrix()
    if matrix is None or qvec is None or matrix.shape[0] == 0:
        return []
    valid = None
    if snap.state.unembedded:
        valid = np.ones(len(snap.state.rows), dtype=bool)
        valid[sorted(snap.state.unembedded)] = False
    blocks = blocks_of(snap.state.embedder)
    scores = vector_scores(matrix, qvec, blocks, valid)
    if not blocks:  # unit rows give cosines; beyond 1 a row is damage, not a best match
        scores = np.where(np.abs(scores) <= 1.0 + UNIT_SLACK, scores, -np.inf)
    mask = valid
    if track:
        on_track = np.array(snap.state.rows.track_mask(track), dtype=bool)
        mask = on_track if mask is None else mask & on_track
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return [(i, s) for i, s in best_rows(scores, n) if s >= MIN_COSINE]
