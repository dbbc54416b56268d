"""`make bench`: one quality table (LoCoMo dev and test, agentwiki and opswiki with per-kind
rows, CJK) per mode, then the latency benchmark.

Each quality set is a function returning rows; new benches (scale, hook load) are
modules called from main() the way latency is.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agentwiki  # noqa: E402
import cjk  # noqa: E402
import fresh_clone  # noqa: E402
import hook_load  # noqa: E402
import latency  # noqa: E402
import locomo  # noqa: E402
import projects  # noqa: E402
import scale  # noqa: E402
import scrub  # noqa: E402

MODES = ["bm25", "vector", "hybrid"]
OPSWIKI = Path(__file__).resolve().parent / "opswiki"
# Issue 11's targets (k=5, hybrid): (set, kind) -> (R@5-any, R@5-all)
TARGETS = {
    ("agentwiki", ""): (0.97, 0.92),
    ("agentwiki", "paraphrase"): (0.92, None),
    ("agentwiki", "identifier"): (0.95, None),
    ("LoCoMo test", ""): (0.925, 0.81),
    ("CJK", ""): (1.0, 1.0),
}


def quality_rows(args) -> list[tuple[str, str, object]]:
    """(set, kind, report) rows for every quality set that is present."""
    rows: list[tuple[str, str, object]] = []
    if not args.skip_locomo:
        if not Path(args.locomo).is_dir():
            print(f"LoCoMo not found at {args.locomo}: skipped (pass LOCOMO=DIR to make bench)")
        else:
            for split in ("dev", "test"):
                merged, _ = locomo.run(Path(args.locomo), split, MODES)
                rows += [(f"LoCoMo {split}", "", r) for r in merged]
    if Path(args.agentwiki).is_dir():
        reports, kinds = agentwiki.run(Path(args.agentwiki), MODES)
        rows += [("agentwiki", "", r) for r in reports]
        for kind, r in kinds["hybrid"].items():
            rows.append(("agentwiki", kind, r))
    else:
        print(f"agentwiki not found at {args.agentwiki}: skipped")
    # A second agent wiki, written blind (no search run over it) and never tuned on: the
    # closest this repository has to issue 11's held-out wiki (tests/bench/opswiki/README.md).
    reports, kinds = agentwiki.run(OPSWIKI, MODES)
    rows += [("opswiki", "", r) for r in reports]
    for kind, r in kinds["hybrid"].items():
        rows.append(("opswiki", kind, r))
    reports, _ = cjk.run(MODES)
    rows += [("CJK", "", r) for r in reports]
    return rows


def print_table(rows) -> None:
    """One table; a target column for the hybrid rows that issue 11 sets targets for."""
    print("\nRetrieval quality (k=5; per-kind rows are hybrid)")
    head = f"  {'set':<12} {'kind':<11} {'mode':<7} {'queries':>7} {'R@5-any':>8} {'R@5-all':>8} {'MRR':>6} {'nDCG@10':>8} {'p50 ms':>7}  target"
    print(head)
    for name, kind, r in rows:
        target = ""
        if r.mode == "hybrid" or kind:
            t = TARGETS.get((name, kind))
            if t:
                ok = r.recall_any >= t[0] - 1e-9 and (t[1] is None or r.recall_all >= t[1] - 1e-9)
                target = (
                    f"any>={t[0]}"
                    + (f" all>={t[1]}" if t[1] else "")
                    + (" ok" if ok else " MISSED")
                )
        print(
            f"  {name:<12} {kind or '-':<11} {r.mode:<7} {r.queries:>7} {r.recall_any:>8.3f} {r.recall_all:>8.3f} "
            f"{r.mrr:>6.3f} {r.ndcg10:>8.3f} {r.latency_median_ms:>7.1f}  {target}"
        )


def main() -> None:
    """Run everything and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--locomo", default=str(locomo.ROOT.parent / "shared/eval/locomo"))
    ap.add_argument("--agentwiki", default=str(agentwiki.DEFAULT))
    ap.add_argument(
        "--files", type=int, default=2000, help="size of the generated wiki for latency"
    )
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-scale", action="store_true", help="skip the 2k/10k/50k-file table")
    ap.add_argument(
        "--embed",
        help="embedder for the quality sets (the `embed` setting, e.g. ensemble; default: config)",
    )
    args = ap.parse_args()
    if args.embed:  # the bench is an entry point: its settings reach config.load this way
        os.environ["MEMWIKI_EMBED"] = args.embed
    started = time.time()
    if not args.skip_quality:
        print_table(quality_rows(args))
        projects.print_table(projects.run(MODES))  # scoped vs unscoped
    if not args.skip_latency:
        latency.cold_ratios(files=args.files)  # cold hybrid/bm25 vs the reference, real model
        latency.main(files=args.files)
        fresh_clone.main()  # a 70-file wiki without an index: first answer, then hybrid
    if not args.skip_scale:
        scale.main()  # 2k, 10k, 50k files: cold, edit, build, list, lint, RSS
        hook_load.main()  # the Claude Code hook with six CPU-bound processes competing
    scrub.main()
    print(f"\nbench finished in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
