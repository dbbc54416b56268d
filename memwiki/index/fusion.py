"""Scoring candidate items: BM25 and vector hits fused, BM25 feedback, project scope.

index/search.py ranks files by these scores; every function here maps item ids to scores.
"""

from __future__ import annotations

from . import feedback

RRF_K = 60
# Normalised score fusion: BM25 / best BM25 + w * cosine / best cosine, where the vector
# weight w adapts to the query: VECTOR_WEIGHT when the best BM25 item contains every
# specific word of the query (a keyword or identifier lookup, where BM25 is precise), up
# to VECTOR_WEIGHT_MAX when it contains none of them (a paraphrase, where only the
# vectors can see the match). Measured on LoCoMo dev and agentwiki (docs/retrieval.md).
VECTOR_WEIGHT = 0.3
VECTOR_WEIGHT_MAX = 1.5
# The ensemble embedder's vectors are much better on their own (vectors alone: agentwiki
# 0.967 vs 0.883 R@5-any, LoCoMo dev 0.870 vs 0.786), so a query BM25 cannot cover
# trusts them more; chosen by leave-half-out (tests/bench/lab_halves.py).
ENSEMBLE_WEIGHT_MAX = 3.0
WEIGHT_POWER = 2.0
# Project scope: another project's item keeps this share of its fused score unless the
# query names that project (chosen on tests/bench/projects.py; docs/guide.md, Projects).
# A question asking who takes the share once more off every project's items.
OTHER_PROJECT_FACTOR = 0.5


def rrf(ranked_lists: list[list[int]], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal-rank fusion of several ranked id lists."""
    scores: dict[int, float] = {}
    for ranked in ranked_lists:
        for rank, item_id in enumerate(ranked):
            scores[item_id] = scores.get(item_id, 0.0) + 1.0 / (k + rank + 1)
    return scores


def score_fusion(bm25_hits, vector_hits, weight: float = VECTOR_WEIGHT) -> dict:
    """Each list's scores divided by its best score, the vector part weighted, summed per item."""
    fused: dict = {}
    if bm25_hits:
        top = bm25_hits[0][1] or 1.0
        for i, s in bm25_hits:
            fused[i] = fused.get(i, 0.0) + s / top
    if vector_hits:
        top = vector_hits[0][1] or 1.0
        for i, s in vector_hits:
            fused[i] = fused.get(i, 0.0) + weight * s / top
    return fused


def adaptive_weight(coverage: float, most: float = VECTOR_WEIGHT_MAX) -> float:
    """The vector weight for a query whose best BM25 item covers `coverage` of its IDF mass."""
    missing = min(max(1.0 - coverage, 0.0), 1.0)
    return VECTOR_WEIGHT + (most - VECTOR_WEIGHT) * missing**WEIGHT_POWER


def fuse(
    bm25_hits,
    vector_hits,
    coverage: float,
    fusion: str = "score",
    weight: float | None = None,
    most: float = VECTOR_WEIGHT_MAX,
) -> dict:
    """The fused score of every candidate item: adaptive score fusion (default) or RRF.

    most: the vector weight when BM25 covers none of the query (ENSEMBLE_WEIGHT_MAX for
    the ensemble embedder's vectors).
    """
    if fusion == "rrf":
        return rrf([[i for i, _ in hits] for hits in (bm25_hits, vector_hits) if hits])
    return score_fusion(
        bm25_hits, vector_hits, adaptive_weight(coverage, most) if weight is None else weight
    )


def with_feedback(
    snap, fused, query, track, candidates, bm25_hits, vector_hits, fusion, ranking=None
):
    """Hybrid score fusion plus BM25 feedback from its best item (index/feedback.py).

    Only where both lists took part: that is where it was measured (docs/retrieval.md,
    "Third pass"); BM25 alone or vectors alone answer as they did. ranking: the scores
    the best item is taken from (the project-scoped ones), fused by default.
    """
    if fusion != "score" or not bm25_hits or not vector_hits:
        return fused
    return feedback.expand(snap, fused, query, track, candidates, ranking=ranking)


def scope_to_project(
    rows, fused: dict[int, float], project: str | None, query: str
) -> tuple[dict[int, float], list[str], bool]:
    """Prefer the project in scope: other projects' items keep OTHER_PROJECT_FACTOR of their score.

    Global items (no project) are never touched. When the query names projects of the
    candidates, those named projects are the scope instead of the current one, so a
    question about another project still finds it. A question asking who (and naming no
    project) looks for a person, and people are global memory: every project's items then
    take the factor once more, so global files come first, then the current project's,
    then the others'. A no-op when project is None or no candidate belongs to a project.
    Returns the new scores, the projects the query named, and whether global was preferred.
    """
    if project is None:
        return fused, [], False
    from ..project import asks_for_person, mentioned

    seen = {p for i in fused for p in rows[i].projects}
    if not seen:
        return fused, [], False
    named = sorted(mentioned(query, seen))
    preferred = set(named) if named else {project}
    person = not named and asks_for_person(query)
    out = {}
    for i, score in fused.items():
        projects = rows[i].projects
        if projects and preferred.isdisjoint(projects):
            score *= OTHER_PROJECT_FACTOR
        if projects and person:
            score *= OTHER_PROJECT_FACTOR
        out[i] = score
    return out, named, person
