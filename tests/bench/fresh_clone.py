"""Fresh clone: the first `memwiki retrieve` on a 70-file wiki without an index, then hybrid.

Issue 14's targets: on a fresh clone the first retrieve returns results within 8 s wall,
and a hybrid answer is there within 3 minutes with no further action (the first
retrieve answers from BM25 and starts one background reindex for the vectors). The
clone is the cached generated wiki copied without its git-ignored `.memwiki/`, which
is what `git clone` gives; the real model is used.

    python tests/bench/fresh_clone.py [--files 70] [--runs 1]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency  # noqa: E402

FIRST_TARGET_S = 8.0
HYBRID_TARGET_S = 180.0
POLL_S = 2.0
QUERY = "how do I rotate the webhook secret"  # the query latency.py answers with RELEVANT


def retrieve(root: Path, env: dict) -> dict:
    """One cold `memwiki retrieve --json` of the bench query."""
    out = subprocess.run(
        [sys.executable, "-m", "memwiki", "--wiki", str(root), "retrieve", QUERY, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-300:])
    return json.loads(out.stdout)


def wait_for_background(root: Path, limit_s: float = 600) -> None:
    """Until no background reindex holds the index lock (so the clone can be removed)."""
    lock = root / ".memwiki" / "index.lock"
    until = time.monotonic() + limit_s
    while time.monotonic() < until:
        try:
            with open(lock, "a") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
        except BlockingIOError:
            time.sleep(0.5)
        except FileNotFoundError:
            return


def one_clone(source: Path, work: Path, env: dict, n: int) -> dict:
    """Clone, first retrieve, then poll until the answer is hybrid (or the limit passes)."""
    clone = work / f"clone-{n}"
    shutil.copytree(source, clone, symlinks=True, ignore=shutil.ignore_patterns(".memwiki"))
    started = time.monotonic()
    first = retrieve(clone, env)
    first_s = time.monotonic() - started
    paths = [r["path"] for r in first["results"]]
    row = {
        "first_s": first_s,
        "first_mode": first["mode"],
        "first_relevant": bool(paths) and paths[0] == latency.RELEVANT,
        "background": first["index"].get("background_reindex", False),
        "hybrid_s": None,
        "polls": 0,
    }
    while time.monotonic() - started < HYBRID_TARGET_S + 60:
        time.sleep(POLL_S)
        row["polls"] += 1
        if retrieve(clone, env)["mode"] == "hybrid":
            row["hybrid_s"] = time.monotonic() - started
            break
    wait_for_background(clone)
    shutil.rmtree(clone, ignore_errors=True)
    return row


def main(files: int = 70, runs: int = 1) -> list[dict]:
    """Print the fresh-clone table; returns its rows."""
    latency.compile_bytecode()
    work = Path(tempfile.mkdtemp(prefix="memwiki-clone-"))
    try:
        env = latency.clean_env(work)
        source = latency.cached_wiki(files, "onnx", env, work)
        env = {**env, "MEMWIKI_EMBED": "onnx"}
        load = os.getloadavg()[0]
        rows = [one_clone(source, work, env, n) for n in range(runs)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    items = "real model, no index"
    print(f"\nFresh clone of a {files}-file wiki ({items}; load {load:.1f}; {runs} run(s))")
    print("  run  first retrieve  mode   relevant first  background  hybrid answer after")
    for n, r in enumerate(rows):
        hybrid = f"{r['hybrid_s']:.0f} s" if r["hybrid_s"] is not None else "not within limit"
        print(
            f"  {n + 1:>3}  {r['first_s']:>12.1f} s  {r['first_mode']:<6} "
            f"{'yes' if r['first_relevant'] else 'no':>14}  {str(r['background']):>10}  {hybrid}"
        )
    first = statistics.median(r["first_s"] for r in rows)
    hybrids = [r["hybrid_s"] for r in rows]
    ok_first = all(r["first_s"] <= FIRST_TARGET_S for r in rows)
    ok_hybrid = all(h is not None and h <= HYBRID_TARGET_S for h in hybrids)
    print(
        f"target first retrieve <= {FIRST_TARGET_S:.0f} s: {first:.1f} s "
        f"{'met' if ok_first else 'MISSED'}"
    )
    worst = max((h for h in hybrids if h is not None), default=None)
    shown = f"{worst:.0f} s" if worst is not None and ok_hybrid else "not every run"
    print(
        f"target hybrid answer <= {HYBRID_TARGET_S:.0f} s with no further action: {shown} "
        f"{'met' if ok_hybrid else 'MISSED'}"
    )
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=70)
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    main(a.files, a.runs)
