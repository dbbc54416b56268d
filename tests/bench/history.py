"""A wiki that has lived for years: thousands of commits from two devices, measured as a user runs it.

`build_history` writes a git history with `git fast-import` in seconds: a base commit of
FILES RecallFiles, then COMMITS small commits (edits, creations, deletions, renames, one or
two files each, about two hours apart) from two devices, the second one merged into the
first every MERGE_EVERY commits. Known landmarks (see `Landmarks`) make the correctness
checks possible: a file deleted long ago, a file renamed half-way through its history.

    python tests/bench/history.py [--commits 10000] [--files 2000] [--runs 3]

measures `memwiki log` (whole wiki and one file), `restore` (a file deleted long ago, an
old version), `commit` (one file, 2,000 files), `sync` (the other device made 500 commits,
changed 2,000 files, renamed a folder of 1,000 files), `clone` and the first retrieve, and
`links`, each as a fresh process, with the test embedder (MEMWIKI_EMBED=hash).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GIT_TIMEOUT_S = 600
START = 1672531200  # 2023-01-01T00:00:00Z
STEP_S = 7200  # a commit every two hours: 10,000 commits are about 2.3 years

WORDS = (
    "deploy release billing staging cluster token rotate secret webhook queue worker cache "
    "schema migration index backup restore alert pager oncall review branch merge build test "
    "lint config network proxy certificate database replica shard latency budget customer "
    "invoice refund ledger report dashboard metric trace log retention archive policy owner"
).split()


@dataclass
class Landmarks:
    """Paths and commit counts the correctness checks rely on."""

    deleted: str = "memory/ancient-decision.md"  # created in the base, deleted long ago
    deleted_at: int = 0  # how many commits before the head it was deleted
    renamed_old: str = "memory/oncall-rotation.md"
    renamed_new: str = "memory/oncall.md"
    renamed_edits_before: int = 0  # commits that changed it under its old name
    renamed_edits_after: int = 0  # under its new name, the rename included
    rare: str = "skill/rarely-touched.md"  # created in the base, edited once long ago
    commits: int = 0
    paths: list[str] = field(default_factory=list)


def _text(rng: random.Random, name: str, lines: int = 8) -> bytes:
    body = "\n".join(" ".join(rng.choices(WORDS, k=12)) for _ in range(lines))
    return f"---\nname: {name}\ndescription: {' '.join(rng.choices(WORDS, k=6))}\n---\n# {name}\n{body}\n".encode()


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[1][:-3]


class _Stream:
    """A git fast-import stream, written to a file."""

    def __init__(self, out) -> None:
        self.out = out
        self.mark = 0

    def commit(self, ref, when, who, message, parents, changes) -> int:
        self.mark += 1
        w = self.out.write
        w(f"commit {ref}\nmark :{self.mark}\n".encode())
        w(f"author {who} <{who}@example.com> {when} +0000\n".encode())
        w(f"committer {who} <{who}@example.com> {when} +0000\n".encode())
        msg = message.encode()
        w(f"data {len(msg)}\n".encode() + msg + b"\n")
        if parents:
            w(f"from :{parents[0]}\n".encode())
            for p in parents[1:]:
                w(f"merge :{p}\n".encode())
        for op in changes:
            if op[0] == "M":
                w(f"M 100644 inline {op[1]}\ndata {len(op[2])}\n".encode() + op[2] + b"\n")
            elif op[0] == "D":
                w(f"D {op[1]}\n".encode())
            else:
                w(f"R {op[1]} {op[2]}\n".encode())
        w(b"\n")
        return self.mark


def _git(root: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, timeout=GIT_TIMEOUT_S, capture_output=True, **kw
    )


def build_history(
    root: Path, files: int = 2000, commits: int = 10_000, merge_every: int = 50, seed: int = 7
) -> Landmarks:
    """A wiki at root whose main branch has `commits` commits over `files` files (see module)."""
    rng = random.Random(seed)
    marks = Landmarks(commits=commits)
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    state: dict[str, bytes] = {}
    base = [("M", ".gitignore", b"/.memwiki/\n")]
    for n in range(files):
        track = "memory" if n % 3 else "skill"
        path = f"{track}/note-{n:05d}.md"
        state[path] = _text(rng, _stem(path))
    for path in (marks.deleted, marks.renamed_old, marks.rare):
        state[path] = _text(rng, _stem(path))
    base += [("M", p, d) for p, d in sorted(state.items())]
    delete_at = max(1, commits - min(5000, commits // 2))
    rename_at = commits * 2 // 3 + 7
    rare_at = max(2, commits // 10)
    delete_at, rename_at, rare_at = (
        x + 1 if x % merge_every == 0 else x for x in (delete_at, rename_at, rare_at)
    )
    special = {marks.deleted, marks.renamed_old, marks.renamed_new, marks.rare}
    created = 0
    fd, tmp = tempfile.mkstemp(suffix=".fi")
    with os.fdopen(fd, "wb") as out:
        s = _Stream(out)
        when = START
        tip = s.commit("refs/heads/main", when, "desk", "memwiki: initialise the wiki\n", [], base)
        laptop_tip, laptop_state, fork_state = tip, dict(state), dict(state)
        for i in range(1, commits + 1):
            when += STEP_S
            if i % merge_every == 0:  # the desktop merges the laptop's work
                merged = dict(state)
                for p in set(laptop_state) | set(fork_state):
                    if laptop_state.get(p) != fork_state.get(p):
                        if p in laptop_state:
                            merged[p] = laptop_state[p]
                        else:
                            merged.pop(p, None)
                mops = [("M", p, d) for p, d in merged.items() if state.get(p) != d]
                mops += [("D", p) for p in state if p not in merged]
                tip = s.commit(
                    "refs/heads/main",
                    when,
                    "desk",
                    "memwiki sync: merge origin/main\n",
                    [tip, laptop_tip],
                    mops,
                )
                state, laptop_tip, laptop_state, fork_state = (
                    merged,
                    tip,
                    dict(merged),
                    dict(merged),
                )
                continue
            ops: list[tuple] = []
            if i == delete_at:
                ops.append(("D", marks.deleted))
            elif i == rename_at:
                ops.append(("R", marks.renamed_old, marks.renamed_new))
            elif i == rare_at:
                ops.append(("M", marks.rare, state[marks.rare] + b"edited once\n"))
            elif i % (rename_at // 4 or 1) == 0:
                p = marks.renamed_old if i < rename_at else marks.renamed_new
                if p in state:
                    ops.append(("M", p, state[p] + f"edit {i}\n".encode()))
                    if i < rename_at:
                        marks.renamed_edits_before += 1
                    else:
                        marks.renamed_edits_after += 1
            elif i % 500 == 1 and i < delete_at:
                ops.append(("M", marks.deleted, state[marks.deleted] + f"edit {i}\n".encode()))
            laptop = not ops and rng.random() < 0.4
            own = laptop_state if laptop else state
            if not ops:
                # the laptop only edits odd files and creates its own: merges never conflict
                pool = [
                    p
                    for p in rng.sample(sorted(own), 4)
                    if p not in special
                    and (hash_parity(p) == laptop)
                    and not p.startswith("memory/laptop-")
                ]
                kind = rng.random()
                if laptop or kind < 0.75:
                    for p in pool[: rng.randint(1, 2)]:
                        ops.append(
                            ("M", p, own[p] + f"{' '.join(rng.choices(WORDS, k=8))}\n".encode())
                        )
                    if not ops or kind > 0.9:
                        created += 1
                        who = "laptop" if laptop else "desk"
                        p = f"memory/{who}-{created:05d}.md"
                        ops.append(("M", p, _text(rng, _stem(p))))
                elif kind < 0.85 and pool:
                    ops.append(("D", pool[0]))
                elif pool:
                    old = pool[0]
                    new = f"{old[:-3]}-r{i}.md"
                    ops.append(("R", old, new))
                    if rng.random() < 0.5:
                        ops.append(("M", new, own[old] + b"renamed and edited\n"))
            for op in ops:
                if op[0] == "M":
                    own[op[1]] = op[2]
                elif op[0] == "D":
                    own.pop(op[1], None)
                else:
                    own[op[2]] = own.pop(op[1])
            verb = {"M": "updated", "D": "deleted", "R": "renamed"}
            message = "memwiki: " + "; ".join(f"{verb[o[0]]} {o[1][:-3]}" for o in ops)
            if laptop:
                laptop_tip = s.commit(
                    "refs/heads/laptop", when, "laptop", message + "\n", [laptop_tip], ops
                )
            else:
                tip = s.commit("refs/heads/main", when, "desk", message + "\n", [tip], ops)
        out.write(b"done\n")
    try:
        with open(tmp, "rb") as stream:
            subprocess.run(
                ["git", "fast-import", "--quiet", "--done"],
                cwd=root,
                stdin=stream,
                check=True,
                timeout=GIT_TIMEOUT_S,
                capture_output=True,
            )
    finally:
        Path(tmp).unlink(missing_ok=True)
    _git(root, "checkout", "-q", "-f", "main")
    _git(root, "branch", "-q", "-D", "laptop")
    gone = _deleting(root, marks)
    marks.deleted_at = int(_git(root, "rev-list", "--count", f"{gone}..HEAD").stdout)
    marks.paths = sorted(state)
    return marks


def hash_parity(path: str) -> bool:
    """Which device may edit a file (stable across runs: not Python's salted hash)."""
    import zlib

    return bool(zlib.crc32(path.encode()) & 1)


def _deleting(root: Path, marks: Landmarks) -> str:
    out = _git(root, "log", "--format=%H", "--diff-filter=D", "-1", "--", marks.deleted)
    return out.stdout.decode().strip()


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    return time.perf_counter() - started, done.returncode


def main() -> None:
    """Build a history (or reuse --wiki) and time log and restore as fresh processes."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pythonpath", action="append", help="code to compare (default: this tree)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memwiki-history-") as tmp:
        base = Path(tmp)
        started = time.perf_counter()
        marks = build_history(base / "wiki", args.files, args.commits)
        print(
            f"built {args.commits} commits over {args.files} files in "
            f"{time.perf_counter() - started:.1f} s; {marks.deleted} deleted "
            f"{marks.deleted_at} commits ago"
        )
        home = base / "home"
        env = dict(
            os.environ,
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_CACHE_HOME=str(home / ".cache"),
            MEMWIKI_EMBED="hash",
        )
        wiki = str(base / "wiki")
        cases = {
            "log -n 20": ["log", "-n", "20"],
            f"log {marks.renamed_new[:-3]} (renamed)": ["log", marks.renamed_new[:-3]],
            f"log {marks.rare[:-3]} -n 1": ["log", marks.rare[:-3], "-n", "1"],
            f"restore {marks.deleted[:-3]}": ["restore", marks.deleted[:-3]],
        }
        for label, argv in cases.items():
            row = []
            for code in args.pythonpath or [str(REPO)]:
                env["PYTHONPATH"] = code
                times = []
                for _ in range(args.runs):  # interleaved runs of each code on a noisy machine
                    secs, rc = _timed([sys.executable, "-m", "memwiki", "-w", wiki, *argv], env)
                    times.append(secs)
                    if argv[0] == "restore" and rc == 0:
                        _git(base / "wiki", "reset", "-q", "--hard", "HEAD~1")
                row.append(f"{statistics.median(times):6.2f} s (rc {rc})")
            print(f"{label:45s} " + "  ".join(row))


if __name__ == "__main__":
    main()
