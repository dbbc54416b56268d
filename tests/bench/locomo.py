"""LoCoMo retrieval benchmark: one wiki per conversation, R@5-any/all, MRR, nDCG@10 per mode.

Tune on the dev split only (26, 30, 41, 42, 43); the test split is for reporting.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def convert(source: Path, split: str, out: Path) -> list[Path]:
    """Run examples/locomo/convert.py; returns the conversation directories."""
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples/locomo/convert.py"),
            str(source),
            "--split",
            split,
            "--out",
            str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return sorted(p for p in out.iterdir() if (p / "queries.jsonl").exists())


def run(
    source: Path, split: str, modes: list[str], k: int = 5, work: Path | None = None, **options
):
    """Evaluate every conversation of a split; returns (merged reports, per-conversation reports)."""
    from memwiki.config import load
    from memwiki.evaluate import evaluate, load_queries, merge_reports
    from memwiki.wiki import Wiki

    work = work or Path(tempfile.mkdtemp(prefix="memwiki-locomo-"))
    per_conv = {}
    for conv in convert(source, split, work):
        cfg = load({"wiki": str(conv)})
        per_conv[conv.name] = evaluate(
            Wiki(conv), load_queries(conv / "queries.jsonl"), modes, k=k, config=cfg, **options
        )
    return merge_reports(list(per_conv.values())), per_conv


def print_table(title: str, reports) -> None:
    """One row per mode."""
    print(f"\n{title}")
    print(
        f"  {'mode':<8} {'queries':>7} {'R@5-any':>8} {'R@5-all':>8} {'MRR':>6} {'nDCG@10':>8} {'p50 ms':>7} {'p95 ms':>7}"
    )
    for r in reports:
        print(
            f"  {r.mode:<8} {r.queries:>7} {r.recall_any:>8.3f} {r.recall_all:>8.3f} {r.mrr:>6.3f} "
            f"{r.ndcg10:>8.3f} {r.latency_median_ms:>7.1f} {r.latency_p95_ms:>7.1f}"
        )


def main(argv: list[str] | None = None) -> None:
    """Command line: --split dev|test|all, --locomo DIR."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--locomo", default=str(ROOT.parent / "shared/eval/locomo"))
    ap.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    ap.add_argument("--modes", default="bm25,vector,hybrid")
    ap.add_argument(
        "--work", default=None, help="keep the converted wikis (and their indexes) here"
    )
    args = ap.parse_args(argv)
    work = Path(args.work) if args.work else None
    if work:
        work.mkdir(parents=True, exist_ok=True)
    merged, _ = run(Path(args.locomo), args.split, args.modes.split(","), work=work)
    print_table(f"LoCoMo {args.split} split", merged)


if __name__ == "__main__":
    main()
