"""Scale benchmark: generated wikis of 2k, 10k and 50k files (about 5 items a file).

For each size, in one run and side by side with the reference process of latency.py:
cold `retrieve` (hybrid and bm25) on an unchanged wiki (the no-change case: a fresh
process, a fresh index, the OS file cache warm), `retrieve` right after editing one file,
a full build, `list`, `lint`, and the peak RSS of the hybrid retrieve and of the build.
Embedding 250k items with the real model on two cores takes hours, so the vectors come
from the registered deterministic test embedder (`embed = hash`); `--real` also runs the
real model on the smallest size.
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

import latency  # noqa: E402

QUERY = "how do I rotate the webhook secret"
SIZES = (2000, 10_000, 50_000)


def run_measured(cmd: list[str], env: dict, timeout: float = 3600) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MB, stderr) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        proc.kill()
        raise
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[3:])} exited {proc.returncode}: {err[-500:]}")
    return wall, usage.ru_maxrss // 1024, err


def median_of(cmd: list[str], env: dict, runs: int) -> tuple[float, int]:
    """Median wall time and largest peak RSS of `runs` cold runs."""
    walls, peak = [], 0
    for _ in range(runs):
        wall, rss, _ = run_measured(cmd, env)
        walls.append(wall)
        peak = max(peak, rss)
    return statistics.median(walls), peak


def measure(files: int, work: Path, embed: str, runs: int, reference: list[str]) -> dict:
    """Every figure for one generated wiki."""
    from memwiki.wiki import Wiki

    root = work / f"wiki-{files}-{embed}"
    wiki, _ = Wiki.init(root)
    latency.generate_wiki(wiki.root, files)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIKI_")}
    env.update(HOME=str(work), XDG_CONFIG_HOME=str(work / ".config"), MEMWIKI_EMBED=embed)
    base = [sys.executable, "-m", "memwiki", "--wiki", str(root)]
    build_s, build_rss, _ = run_measured(base + ["reindex"], env)
    retrieve = base + ["retrieve", QUERY]
    run_measured(retrieve, env)  # warm the OS file cache
    ref, hybrid, bm25 = [], [], []
    rss = 0
    for _ in range(runs):  # interleaved with the reference: both see the same noise
        ref.append(run_measured(reference, env)[0])
        wall, peak, _ = run_measured(retrieve, env)
        hybrid.append(wall)
        rss = max(rss, peak)
        bm25.append(run_measured(retrieve + ["--mode", "bm25"], env)[0])
    edit, nochange = [], []
    target = next((root / "memory").glob("*.md"))
    for i in range(runs):
        nochange.append(run_measured(retrieve, env)[0])
        target.write_text(target.read_text() + f"\n## Edit {i}\nwebhook secret rotation {i}\n")
        edit.append(run_measured(retrieve, env)[0])
    list_s, _ = median_of(base + ["list"], env, max(1, runs // 2))
    lint_s, _ = median_of(base + ["lint"], env, max(1, runs // 2))
    items = _items(root)
    med = statistics.median
    return {
        "files": files,
        "items": items,
        "embed": embed,
        "reference_s": med(ref),
        "hybrid_s": med(hybrid),
        "bm25_s": med(bm25),
        "nochange_s": med(nochange),
        "edit_s": med(edit),
        "build_s": build_s,
        "build_rss_mb": build_rss,
        "retrieve_rss_mb": rss,
        "list_s": list_s,
        "lint_s": lint_s,
    }


def _items(root: Path) -> int:
    from memwiki.index import manifest as st

    state = st.load(root / ".memwiki" / "index" / "state.pkl")
    return len(state.rows) if state else 0


def print_table(rows: list[dict]) -> None:
    """One table, each size's figures and their growth over the smallest."""
    base = rows[0]
    print(
        f"\nScale (generated wikis; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    head = (
        f"{'files':>6} {'items':>7} {'embed':>5} {'ref ms':>7} {'hybrid ms':>9} {'x ref':>5} "
        f"{'bm25 ms':>8} {'x ref':>5} {'edit ms':>8} {'build s':>8} {'list s':>7} {'lint s':>7} "
        f"{'RSS MB':>7} {'build MB':>8}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['files']:>6} {r['items']:>7} {r['embed']:>5} {r['reference_s'] * 1000:>7.0f} "
            f"{r['hybrid_s'] * 1000:>9.0f} {r['hybrid_s'] / r['reference_s']:>5.2f} "
            f"{r['bm25_s'] * 1000:>8.0f} {r['bm25_s'] / r['reference_s']:>5.2f} "
            f"{r['edit_s'] * 1000:>8.0f} {r['build_s']:>8.1f} {r['list_s']:>7.2f} "
            f"{r['lint_s']:>7.2f} {r['retrieve_rss_mb']:>7} {r['build_rss_mb']:>8}"
        )
    print("growth over the first row (same embedder):")
    for r in rows[1:]:
        if r["embed"] != base["embed"]:
            continue
        print(
            f"  {r['files']:>6} files: hybrid x{r['hybrid_s'] / base['hybrid_s']:.2f} "
            f"(target <= 2 at 50k), bm25 x{r['bm25_s'] / base['bm25_s']:.2f}, "
            f"edit - no-change {1000 * (r['edit_s'] - r['nochange_s']):+.0f} ms, "
            f"build x{r['build_s'] / base['build_s']:.1f}, list x{r['list_s'] / base['list_s']:.1f}, "
            f"RSS x{r['retrieve_rss_mb'] / base['retrieve_rss_mb']:.2f}"
        )


def main(sizes=SIZES, runs: int = 3, real: bool = True) -> list[dict]:
    """Run the scale benchmark and print its table."""
    import numpy as np

    work = Path(tempfile.mkdtemp(prefix="memwiki-scale-"))
    try:
        matrix = work / "ref.npy"
        np.save(matrix, np.random.default_rng(0).standard_normal((10_000, 384)).astype(np.float32))
        reference = [sys.executable, "-c", latency.REFERENCE.replace("MATRIX", repr(str(matrix)))]
        rows = []
        if real:
            rows.append(measure(sizes[0], work, "onnx", runs, reference))
        for files in sizes:
            rows.append(measure(files, work, "hash", runs, reference))
            print(f"  measured {files} files", flush=True)
            shutil.rmtree(work / f"wiki-{files}-hash", ignore_errors=True)
        rows.sort(key=lambda r: (r["embed"] != "hash", r["files"]))
        print_table(rows)
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    chosen = tuple(int(a) for a in sys.argv[1:] if a.isdigit()) or SIZES
    main(chosen, real="--no-real" not in sys.argv)
