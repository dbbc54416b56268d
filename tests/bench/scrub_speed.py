"""Scrubber speed on a realistic session: this checkout against an earlier revision.

    python tests/bench/scrub_speed.py [--mb 2] [--ref 2f3342a]

The earlier revision (default: 2f3342a, the first to redact short secrets by their
context, so the spans of anything earlier differ by design) is unpacked with
`git archive` into a temporary folder; each side scrubs the same generated session
(scrub_corpus_gen.py) in its own process, and the spans must be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_CHILD = """
import json, sys, time
sys.path.insert(0, {bench!r})
from scrub_corpus_gen import session_strings
from memwiki.memorize.scrub import find_spans
strings = session_strings({mb}, seed={seed})
times = []
for _ in range(2):  # the first pass also compiles the rules: the second is the speed
    started = time.process_time()  # CPU time: the machine may be busy with others
    spans = [find_spans(s) for s in strings]
    times.append(time.process_time() - started)
print(json.dumps({{"bytes": sum(map(len, strings)), "cold": times[0], "seconds": times[1],
                  "spans": spans}}))
"""


def _run(tree: Path, mb: float, seed: int) -> dict:
    code = _CHILD.format(bench=str(ROOT / "tests" / "bench"), mb=mb, seed=seed)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=3600,
        cwd=tree,  # `python -c` imports from its working folder first
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout)


def main() -> None:
    """Print MB/s of the earlier revision and of this checkout, side by side."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ref", default="2f3342a")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.ref, "memwiki"],
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True, timeout=120)
        before = _run(Path(tmp), args.mb, args.seed)
    after = _run(ROOT, args.mb, args.seed)
    mb = before["bytes"] / 1e6
    print(f"scrubber on a generated session of {mb:.1f} MB (seed {args.seed})")
    for name, r in ((args.ref, before), ("this checkout", after)):
        print(
            f"  {name:<14} {mb / r['seconds']:6.2f} MB/s  ({r['seconds']:.2f} s;"
            f" first pass, compiling the rules: {r['cold']:.2f} s)"
        )
    print(f"  speed-up       {before['seconds'] / after['seconds']:.1f}x")
    same = before["spans"] == after["spans"]
    print(f"  same spans     {same} ({sum(map(len, after['spans']))} spans)")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
