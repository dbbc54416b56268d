"""Scrubber speed on a realistic session: this checkout against an earlier revision.

    python tests/bench/scrub_speed.py [--mb 2] [--ref 2f3342a] [--cold 7]

The earlier revision (default: 2f3342a, the first to redact short secrets by their
context, so the spans of anything earlier differ by design) is unpacked with
`git archive` into a temporary folder; each side scrubs the same generated session
(scrub_corpus_gen.py) in its own process, and the spans must be the same (the ones that
differ are printed, for revisions that redact differently by design).

Then the cost a short `bridge prepare` pays: in fresh processes, the two sides taking
turns (--cold rounds, bytecode cached, the first round only warming it), the import of
the scrubber, its first short line, then a first 20 KB session; min and median, wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


_COLD = """
import sys, time
sys.path.insert(0, {bench!r})
from scrub_corpus_gen import session_strings
session = session_strings(0.005, seed=3)  # one string of ~20 KB
import json, memwiki.memorize.schema  # what any caller of the scrubber has loaded
T = time.perf_counter
t0 = T()
from memwiki.memorize.scrub import scrub_text
t1 = T()
scrub_text("ok, I ran the tests again: 3 passed")
t2 = T()
for s in session:
    scrub_text(s)
t3 = T()
print(1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2))
"""


def _cold(trees: list[Path], rounds: int, cache: Path) -> list[list[list[float]]]:
    code = _COLD.format(bench=str(ROOT / "tests" / "bench"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times: list[list[list[float]]] = [[] for _ in trees]
    for round_ in range(rounds + 1):
        for i, tree in enumerate(trees):
            run_env = {**env, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(cache / str(i))}
            out = subprocess.run(
                [sys.executable, "-c", code], env=run_env, capture_output=True, text=True,
                timeout=300, cwd=tree,
            )  # fmt: skip
            if out.returncode != 0:
                raise SystemExit(out.stderr)
            if round_:  # the first round writes the bytecode
                times[i].append([float(x) for x in out.stdout.split()])
    return times


def _differences(before: list, after: list, mb: float, seed: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from scrub_corpus_gen import session_strings

    shown = 0
    for text, a, b in zip(session_strings(mb, seed=seed), before, after, strict=True):
        for start, end, kind in sorted(set(map(tuple, a)) ^ set(map(tuple, b))):
            side = "only before" if [start, end, kind] in a else "only now"
            print(f"    {side}: {kind} {text[max(0, start - 40) : end + 10]!r}")
            shown += 1
            if shown >= 10:
                return


def main() -> None:
    """Print MB/s of the earlier revision and of this checkout, side by side."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ref", default="2f3342a")
    ap.add_argument("--cold", type=int, default=7, help="rounds of the cold measurement")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.ref, "memwiki"],
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        tree = Path(tmp) / "tree"
        tree.mkdir()
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True, timeout=120)
        before = _run(tree, args.mb, args.seed)
        after = _run(ROOT, args.mb, args.seed)
        cold = _cold([tree, ROOT], args.cold, Path(tmp) / "pycache") if args.cold else []
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
        _differences(before["spans"], after["spans"], args.mb, args.seed)
    if cold:
        print(f"cold, in fresh processes ({args.cold} rounds each, ms, min / median)")
        print(f"  {'':14} {'import':>13} {'short line':>13} {'20 KB session':>14} {'all':>13}")
        for name, rounds in zip((args.ref, "this checkout"), cold, strict=True):
            cols = [*zip(*rounds, strict=True), [sum(r) for r in rounds]]
            cells = [f"{min(c):5.1f} / {statistics.median(c):5.1f}" for c in cols]
            print(f"  {name:<14} " + " ".join(f"{c:>13}" for c in cells))
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
