"""Experiment: does a small boost for the wikilink neighbours of strong hits help retrieval?

    python examples/eval/link_boost.py [--wiki COPY_OF_DEMO_WIKI] [--queries FILE]

Runs the hybrid mode of memwiki.evaluate on the demo set once as memwiki ships it and
once per boost setting. The variant changes only how items roll up to files: after each
file gets its best fused item score (as in memwiki.index.search._rollup), every file
linked to or from one of the `top` best files gains `beta * that file's score`, and files
that only a link brought in join the ranking. Nothing in memwiki is changed on disk; the
rollup is swapped in this process only. Results are in docs/obsidian.md.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

from memwiki.config import load
from memwiki.evaluate import evaluate, load_queries
from memwiki.index import search
from memwiki.links import LinkIndex
from memwiki.wiki import Wiki

HERE = Path(__file__).resolve().parent
SETTINGS = [(top, beta) for top in (1, 3) for beta in (0.05, 0.1, 0.2, 0.3)]


def neighbours(wiki: Wiki) -> dict[str, set[str]]:
    """Undirected link graph: a link is evidence in both directions."""
    out: dict[str, set[str]] = {}
    for src, targets in LinkIndex(wiki).graph().items():
        for dst in targets:
            out.setdefault(src, set()).add(dst)
            out.setdefault(dst, set()).add(src)
    return out


def boosted_rollup(graph: dict[str, set[str]], top: int, beta: float):
    """A replacement for search._rollup that adds the neighbour boost."""

    def rollup(snap, fused, k):
        best: dict[str, float] = {}
        first_row: dict[str, int] = {}
        for i, row in enumerate(snap.state.rows):
            first_row.setdefault(row.path, i)
        for i, score in fused.items():
            path = snap.state.rows[i].path
            best[path] = max(best.get(path, 0.0), score)
        strong = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        boosted = dict(best)
        for path, score in strong:
            for other in graph.get(path, ()):
                if other in first_row:
                    boosted[other] = boosted.get(other, 0.0) + beta * score
        ranked = sorted(boosted.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        out = []
        for path, score in ranked:
            row = snap.state.rows[first_row[path]]
            out.append(search.FileResult(path, row.track, row.name, row.description, score))
        return out

    return rollup


def main() -> None:
    """Print baseline and variant metrics side by side."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wiki", type=Path, help="a copy of examples/demo-wiki (default: a temp copy)")
    ap.add_argument("--queries", type=Path, default=HERE / "demo-queries.jsonl")
    args = ap.parse_args()
    root = args.wiki
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="link-boost-")) / "demo-wiki"
        shutil.copytree(HERE.parent / "demo-wiki", root)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    wiki = Wiki(root)
    config = load({"wiki": str(root)})
    queries = load_queries(args.queries)
    graph = neighbours(wiki)
    original = search._rollup
    print(f"{'variant':<22} {'R@5-any':>8} {'R@5-all':>8} {'MRR':>6} {'nDCG@10':>8}")
    rows = [("baseline (shipped)", None)] + [
        (f"top {top}, beta {beta}", boosted_rollup(graph, top, beta)) for top, beta in SETTINGS
    ]
    for label, rollup in rows:
        search._rollup = rollup or original
        try:
            (r,) = evaluate(wiki, queries, ["hybrid"], k=5, config=config)
        finally:
            search._rollup = original
        print(
            f"{label:<22} {r.recall_any:>8.3f} {r.recall_all:>8.3f} {r.mrr:>6.3f} {r.ndcg10:>8.3f}"
        )


if __name__ == "__main__":
    main()
