"""`make bench`: LoCoMo dev and test splits in all three modes, then the latency benchmark."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hook_load  # noqa: E402
import latency  # noqa: E402
import locomo  # noqa: E402
import projects  # noqa: E402
import scale  # noqa: E402
import scrub  # noqa: E402


def main() -> None:
    """Run everything and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--locomo", default=str(locomo.ROOT.parent / "shared/eval/locomo"))
    ap.add_argument(
        "--files", type=int, default=2000, help="size of the generated wiki for latency"
    )
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-scale", action="store_true", help="skip the 2k/10k/50k-file table")
    args = ap.parse_args()
    started = time.time()
    if not args.skip_locomo:
        if not Path(args.locomo).is_dir():
            print(f"LoCoMo not found at {args.locomo}: skipped (pass LOCOMO=DIR to make bench)")
        else:
            for split in ("dev", "test"):
                merged, _ = locomo.run(Path(args.locomo), split, ["bm25", "vector", "hybrid"])
                locomo.print_table(f"LoCoMo {split} split (k=5)", merged)
    projects.print_table(projects.run(["bm25", "vector", "hybrid"]))  # scoped vs unscoped
    if not args.skip_latency:
        latency.main(files=args.files)
    if not args.skip_scale:
        scale.main()  # 2k, 10k, 50k files: cold, edit, build, list, lint, RSS
        hook_load.main()  # the Claude Code hook with six CPU-bound processes competing
    scrub.main()
    print(f"\nbench finished in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
