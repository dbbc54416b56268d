"""One-file edits against no-change, cold, for one or more memwiki installs side by side.

Issue 14's target "one-file edit retrieve <= no-change retrieve + that file's embedding"
asks that the reader's inline index update cost little beyond the embedding. This loop
measures exactly that pair, interleaved (per round and install: a no-change retrieve,
then one section appended to a file and the retrieve that indexes it), on a copy of a
generated wiki per install (a copy each, so every install's index evolves as its own
code leaves it), and prints medians of wall time and of CPU time (user + system, the
scan child included), which a loaded machine disturbs less.

    python tests/bench/edits.py WIKI_DIR NAME=PYTHON [NAME=PYTHON ...] [--runs N] [--work DIR]
        [--embed hash|onnx]

WIKI_DIR is a built wiki, e.g. a scale.py cache entry's `wiki/` (never measured in place:
each install gets a copy under --work). The edit's mean and maximum show the occasional
merge that a median hides. PYTHON is an interpreter with memwiki installed
(e.g. /work/main/.venv/bin/python for main, .venv/bin/python for a worktree).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale  # noqa: E402

TIMEOUT_S = 120


def run(python: str, wiki: Path, env: dict) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its reaped children included) of one cold
    `memwiki retrieve` process.

    CPU from the process's own rusage (wait4), to the microsecond: os.times() counts
    in clock ticks of 10 ms, coarser than the differences measured here.
    """
    cmd = [python, "-m", "memwiki", "--wiki", str(wiki), "retrieve", scale.QUERY]
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        deadline = started + TIMEOUT_S
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(proc.pid, 9)
                os.wait4(proc.pid, 0)
                raise TimeoutError(f"{' '.join(cmd)} took over {TIMEOUT_S} s")
            time.sleep(0.001)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.read()[-400:]!r}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(
    wiki: Path, installs: list[tuple[str, str]], runs: int, work: Path, embed: str = "hash"
) -> dict:
    """{name: {"nochange": [(wall, cpu)], "edit": [(wall, cpu)]}} over interleaved rounds."""
    env = scale.bench_env(work / "home", embed)
    copies, targets = {}, {}
    for name, _ in installs:
        copy = work / name
        shutil.copytree(wiki, copy, symlinks=True)
        copies[name] = copy
        target = sorted((copy / "memory").glob("*.md"))[1]
        targets[name] = (target, target.read_bytes())
    results: dict[str, dict[str, list]] = {n: {"nochange": [], "edit": []} for n, _ in installs}

    def timed(name: str, python: str) -> tuple[float, float]:
        got = run(python, copies[name], env)
        # An edit is written after its answer by a child the retrieve does not wait for
        # (index/deferred.py; its CPU is not in the rusage above): the next round starts
        # once it is committed.
        scale.write_settled(copies[name])
        return got

    for name, python in installs:
        timed(name, python)  # the OS file cache warm, the copy's index checked
    for i in range(runs):
        for name, python in installs:
            results[name]["nochange"].append(timed(name, python))
            target, original = targets[name]
            target.write_text(original.decode() + f"\n## Edit {i}\nwebhook secret rotation {i}\n")
            results[name]["edit"].append(timed(name, python))
    return results


def main() -> None:
    """Parse the arguments, measure, print one line per install."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wiki", type=Path)
    ap.add_argument("installs", nargs="+", help="NAME=PYTHON")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", type=Path, default=None, help="where the copies go")
    ap.add_argument("--embed", default="hash", help="the embedder the wiki was built with")
    args = ap.parse_args()
    installs = [tuple(spec.split("=", 1)) for spec in args.installs]
    work = Path(tempfile.mkdtemp(prefix="memwiki-edits-", dir=args.work))
    try:
        results = measure(args.wiki, installs, args.runs, work, args.embed)  # type: ignore[arg-type]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    print(
        f"{args.wiki}: {args.runs} interleaved rounds, medians, load {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )
    for name, r in results.items():
        nw, nc = (med(x[k] for x in r["nochange"]) * 1000 for k in (0, 1))
        ew, ec = (med(x[k] for x in r["edit"]) * 1000 for k in (0, 1))
        mean = statistics.fmean(x[0] for x in r["edit"]) * 1000
        worst = max(x[0] for x in r["edit"]) * 1000
        print(
            f"  {name:>8}: wall no-change {nw:5.0f} ms, edit {ew:5.0f} ms ({ew - nw:+.0f}, "
            f"x{ew / nw:.2f}; edit mean {mean:.0f}, max {worst:.0f}); "
            f"CPU no-change {nc:5.1f} ms, edit {ec:5.1f} ms ({ec - nc:+.1f})"
        )


if __name__ == "__main__":
    main()
