"""Retrieval evaluation: R@k-any, R@k-all, MRR, nDCG@10 and latency per mode, side by side."""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidInput


@dataclass
class Query:
    """One evaluation query and the files that answer it."""

    query: str
    relevant: list[str]
    kind: str = ""  # optional label ("paraphrase", "identifier", ...) for per-kind rows


@dataclass
class ModeReport:
    """Metrics of one mode over a query set."""

    mode: str
    queries: int
    recall_any: float
    recall_all: float
    mrr: float
    ndcg10: float
    latency_median_ms: float
    latency_p95_ms: float

    def to_dict(self) -> dict:
        """JSON form."""
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def load_queries(path: Path) -> list[Query]:
    """Read a JSONL file of {"query": ..., "relevant": [...]} lines."""
    queries = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read queries ({exc})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            q, rel = obj["query"], obj["relevant"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise InvalidInput(
                f'{path}:{n}: expected {{"query": ..., "relevant": [...]}}'
            ) from None
        if (
            not isinstance(q, str)
            or not isinstance(rel, list)
            or not rel
            or not all(isinstance(r, str) for r in rel)
        ):
            raise InvalidInput(
                f"{path}:{n}: query must be a string and relevant a non-empty list of paths"
            )
        queries.append(Query(q, list(rel), str(obj.get("kind") or "")))
    if not queries:
        raise InvalidInput(f"{path}: no queries")
    return queries


def score_ranking(
    ranked: list[str], relevant: list[str], k: int
) -> tuple[float, float, float, float]:
    """(any-hit@k, all-hit@k, reciprocal rank, nDCG@10) of one ranked list of paths."""
    rel = set(relevant)
    top = ranked[:k]
    any_hit = float(any(p in rel for p in top))
    all_hit = float(rel <= set(top))
    rr = next((1.0 / (i + 1) for i, p in enumerate(ranked) if p in rel), 0.0)
    dcg = sum(1.0 / math.log2(i + 2) for i, p in enumerate(ranked[:10]) if p in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), 10)))
    return any_hit, all_hit, rr, dcg / ideal if ideal else 0.0


def run_queries(
    wiki, queries: list[Query], modes: list[str], k: int = 5, config=None, **options
) -> dict[str, list[tuple[list[str], float]]]:
    """Every query in every mode against one wiki: (ranked paths, latency ms) per query."""
    from .index.indexer import Index
    from .index.search import retrieve

    index = Index(wiki, config)
    index.snapshot(need_vectors=any(m != "bm25" for m in modes))  # build outside the timings
    runs: dict[str, list[tuple[list[str], float]]] = {}
    for mode in modes:
        runs[mode] = []
        for q in queries:
            started = time.perf_counter()
            result = retrieve(
                wiki, q.query, k=max(k, 10), mode=mode, index=index, budget=0, **options
            )
            runs[mode].append((result.paths(), (time.perf_counter() - started) * 1000))
    return runs


def summarise(
    mode: str, queries: list[Query], runs: list[tuple[list[str], float]], k: int = 5
) -> ModeReport:
    """The metrics of one mode's runs (aligned with queries)."""
    sums = [0.0, 0.0, 0.0, 0.0]
    latencies = [ms for _, ms in runs]
    for q, (ranked, _) in zip(queries, runs, strict=True):
        for i, v in enumerate(score_ranking(ranked, q.relevant, k)):
            sums[i] += v
    n = len(queries)
    p95 = statistics.quantiles(latencies, n=20)[-1] if n > 1 else latencies[0]
    return ModeReport(
        mode,
        n,
        sums[0] / n,
        sums[1] / n,
        sums[2] / n,
        sums[3] / n,
        statistics.median(latencies),
        p95,
    )


def evaluate(
    wiki, queries: list[Query], modes: list[str], k: int = 5, config=None, **options
) -> list[ModeReport]:
    """Run every query in every mode against one wiki and report the metrics per mode."""
    runs = run_queries(wiki, queries, modes, k, config, **options)
    return [summarise(mode, queries, runs[mode], k) for mode in modes]


def by_kind(
    queries: list[Query], runs: dict[str, list[tuple[list[str], float]]], mode: str, k: int = 5
) -> dict[str, ModeReport]:
    """One mode's metrics per query kind, kinds in order of first appearance."""
    kinds = list(dict.fromkeys(q.kind for q in queries if q.kind))
    out = {}
    for kind in kinds:
        picked = [(q, r) for q, r in zip(queries, runs[mode], strict=True) if q.kind == kind]
        out[kind] = summarise(mode, [q for q, _ in picked], [r for _, r in picked], k)
    return out


def merge_reports(per_wiki: list[list[ModeReport]]) -> list[ModeReport]:
    """Query-weighted average of reports from several wikis (same modes, same order)."""
    out = []
    for group in zip(*per_wiki, strict=True):
        n = sum(r.queries for r in group)

        def avg(attr: str, group=group, n=n) -> float:
            return sum(getattr(r, attr) * r.queries for r in group) / n

        out.append(
            ModeReport(
                group[0].mode,
                n,
                avg("recall_any"),
                avg("recall_all"),
                avg("mrr"),
                avg("ndcg10"),
                avg("latency_median_ms"),
                avg("latency_p95_ms"),
            )
        )
    return out
