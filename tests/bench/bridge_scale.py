"""`memwiki bridge prepare` at a heavy user's scale: thousands of sessions, a few very large.

Generates a home with Claude Code sessions (~/.claude/projects/<project>/<session>.jsonl,
subagent transcripts included) and Codex rollouts (~/.codex/sessions/YYYY/MM/DD/), then
measures cold `memwiki bridge prepare` processes, per host:

- first:     everything new (the first run, --max-sessions 10, as the scheduled run does;
             measured once: it is mostly memorize's scrubbing of the new sessions);
- no change: every session already mined (the hourly run that finds nothing new);
- grew:      one large session grew by a few lines since it was mined;

with wall time (median of --rounds, revisions interleaved) and peak RSS (through scale.py's launcher). With
--before REV the same runs of another revision (a detached `git worktree` of this
repository) are measured side by side, on the same generated files.

The "already mined" cursor is made by each revision's own reader (the complete lines of
every stream, as a prepare and commit of everything would leave it), so each is measured on
its own cursor format.

    python tests/bench/bridge_scale.py [--sessions 2000] [--projects 50] [--big 4]
        [--big-mb 40] [--rounds 5] [--before REV] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import run_measured  # noqa: E402

# Bytes the measured process read (rchar: read(2) calls, page cache or disk). Linux adds a
# reaped child's I/O counts to its parent's, so a launcher reads its own /proc/self/io
# before and after: the OS file cache makes wall times on a warm machine hide what a
# prepare reads, and after an hour of other work its logs are mostly not cached.
READS = """
import os, sys
def rchar():
    with open("/proc/self/io") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("rchar:"))
before = rchar()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
os.waitpid(pid, 0)
print(rchar() - before)
"""

REPO = Path(__file__).resolve().parents[2]
HOSTS = ("claude-code", "codex")
TIMEOUT_S = 600
GROW_LINES = 4

# Builds the "everything mined" cursor with the revision's own reader (no JSON parsing).
MINED = """
import sys
from memwiki.config import load
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.cursors import CURSOR_FILE, empty_state, host_state_dir, save_cursor
host = sys.argv[1]
config = load()
source = get_source(host, config)
state = empty_state()
for ref in source.list_sessions():
    state["streams"][ref.key] = source.read(ref, None).cursor
directory = host_state_dir(config, host)
directory.mkdir(parents=True, exist_ok=True)
save_cursor(directory / CURSOR_FILE, state)
print(len(state["streams"]))
"""

WORDS = (
    "billing invoice retry queue deploy staging webhook secret rotate flaky test fixture "
    "rounding postgres migration index cache latency timeout worker cron release branch "
    "review lint schema config parser token budget memory wiki project session"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def claude_lines(rng: random.Random, sid: str, cwd: str, turns: int, tool_kb: int) -> list[str]:
    """Records of one Claude Code session: prompts, prose, tool calls and their output."""
    out = []
    blob = (_text(rng, 60) + "\n") * max(1, tool_kb * 1024 // 400)
    for t in range(turns):
        common = {"sessionId": sid, "cwd": cwd, "version": "2.1.197", "isSidechain": False}
        out.append({"type": "user", "message": {"role": "user", "content": _text(rng, 25)},
                    "uuid": str(uuid.UUID(int=rng.getrandbits(128))), **common})  # fmt: skip
        call = f"toolu_{t:06d}"
        out.append({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": _text(rng, 40)},
            {"type": "text", "text": _text(rng, 30)},
            {"type": "tool_use", "id": call, "name": "Bash",
             "input": {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py"}}]},
            **common})  # fmt: skip
        out.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": blob}]}, **common})  # fmt: skip
        out.append({"type": "attachment", "attachment": {"type": "hook_additional_context",
                    "content": _text(rng, 40)}, **common})  # fmt: skip
    return [json.dumps(r) for r in out]


def codex_lines(rng: random.Random, sid: str, cwd: str, turns: int, tool_kb: int) -> list[str]:
    """Records of one Codex rollout: session_meta, turn_context, messages, function calls."""
    blob = (_text(rng, 60) + "\n") * max(1, tool_kb * 1024 // 400)
    out: list[dict] = [{"type": "session_meta", "payload": {"id": sid, "cwd": cwd,
                        "base_instructions": {"text": _text(rng, 300)}}}]  # fmt: skip
    for t in range(turns):
        out.append({"type": "turn_context", "payload": {"cwd": cwd}})
        out.append({"type": "response_item", "payload": {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": _text(rng, 25)}]}})  # fmt: skip
        out.append({"type": "response_item", "payload": {"type": "function_call",
                    "name": "exec_command", "call_id": f"c{t}",
                    "arguments": json.dumps({"cmd": "make test"})}})  # fmt: skip
        out.append({"type": "response_item", "payload": {"type": "function_call_output",
                    "call_id": f"c{t}", "output": blob}})  # fmt: skip
        out.append({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": _text(rng, 30)}]}})  # fmt: skip
        out.append({"type": "event_msg", "payload": {"type": "token_count", "total": t}})
    return [json.dumps(r) for r in out]


def _write(path: Path, lines: list[str], mtime: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "\n".join(lines) + "\n"
    path.write_text(data)
    os.utime(path, (mtime, mtime))
    return len(data)


def generate(home: Path, sessions: int, projects: int, big: int, big_mb: int) -> dict:
    """Claude Code and Codex sessions under home; returns the large sessions' paths and sizes."""
    rng = random.Random(7)
    now = time.time() - 3600
    total = {"claude-code": 0, "codex": 0}
    bigs: dict[str, Path] = {}
    for i in range(sessions):
        project = f"-home-ana-src-proj{i % projects:02d}"
        cwd = f"/home/ana/src/proj{i % projects:02d}"
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        # The large sessions spread over the history, the newest among them (the one being
        # worked in, which grows).
        large = (sessions - 1 - i) % max(1, sessions // max(big, 1)) == 0 and big > 0
        turns, kb = (big_mb * 1024 // 40, 40) if large else (rng.randint(3, 30), rng.randint(1, 8))
        mtime = now - (sessions - i) * 600  # one every 10 minutes, newest last
        path = home / ".claude" / "projects" / project / f"{sid}.jsonl"
        total["claude-code"] += _write(path, claude_lines(rng, sid, cwd, turns, kb), mtime)
        if i % 10 == 0:  # a subagent transcript beside one session in ten
            sub = path.parent / sid / "subagents" / f"agent-{i:08x}.jsonl"
            lines = [json.dumps({**json.loads(ln), "isSidechain": True}) for ln in
                     claude_lines(rng, sid, cwd, 3, 2)]  # fmt: skip
            total["claude-code"] += _write(sub, lines, mtime)
        day = time.gmtime(mtime)
        folder = home / ".codex" / "sessions" / time.strftime("%Y/%m/%d", day)
        cpath = folder / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', day)}-{sid}.jsonl"
        total["codex"] += _write(cpath, codex_lines(rng, sid, cwd, turns, kb), mtime)
        if i == sessions - 1:
            bigs = {"claude-code": path, "codex": cpath}
    return {"bytes": total, "big": {h: str(p) for h, p in bigs.items()}}


def grow(path: Path, host: str, round_: int) -> None:
    """A few new lines at the end of a session, as the client appends them."""
    rng = random.Random(round_)
    make = claude_lines if host == "claude-code" else codex_lines
    lines = make(rng, "grown", "/home/ana/src/proj00", 1, 1)[-GROW_LINES:]
    with path.open("a") as f:
        f.write("\n".join(lines) + "\n")


def env_for(home: Path, code: Path, wiki: Path) -> dict:
    """A child's environment: the generated HOME, one revision's code, one wiki."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIKI_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        PYTHONPATH=str(code),
        MEMWIKI_DIR=str(wiki),
        MEMWIKI_EMBED="hash",
    )
    return env


def memwiki(env: dict, *args: str) -> str:
    """Run memwiki (not measured) and return its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "memwiki", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    return done.stdout


def prepare(env: dict, host: str, reads: bool = False) -> tuple[float, int, dict, int]:
    """One measured cold `bridge prepare`: (seconds, peak RSS MB, its JSON, bytes read);
    with reads, the same prepare is run again afterwards to count what it reads."""
    out = Path(env["HOME"]) / "prepare.json"
    cmd = ["/bin/sh", "-c", f'exec "$0" -m memwiki bridge prepare --host {host} --json > "$1"']
    directory = Path(env["MEMWIKI_DIR"]) / ".memwiki" / "hosts" / host
    kept = (
        (directory / "cursor.json").read_bytes() if (directory / "cursor.json").exists() else None
    )
    wall, rss, _, _ = run_measured([*cmd, sys.executable, str(out)], env, timeout=TIMEOUT_S)
    result = json.loads(out.read_text())
    read = -1  # not counted
    if reads:
        reset(env, host, result, None)
        if kept is not None:
            (directory / "cursor.json").write_bytes(kept)
        done = subprocess.run([sys.executable, "-S", "-c", READS, *cmd, sys.executable, str(out)],
                              env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=True)  # fmt: skip
        read = int(done.stdout)
        result = json.loads(out.read_text())
    return wall, rss, result, read


def reset(env: dict, host: str, result: dict, baseline: Path | None) -> None:
    """Drop the run a prepare opened and put the host's cursor back as it was."""
    if result.get("run_id"):
        memwiki(env, "memorize", "discard", result["run_id"])
    directory = Path(env["MEMWIKI_DIR"]) / ".memwiki" / "hosts" / host
    (directory / "pending.json").unlink(missing_ok=True)
    if baseline is None:
        (directory / "cursor.json").unlink(missing_ok=True)
    else:
        shutil.copyfile(baseline, directory / "cursor.json")


def offered(result: dict) -> list[tuple[str, dict]]:
    """What a prepare offered: each session's key and counts (compared across revisions)."""
    return [(s["key"], s["counts"]) for s in result.get("sessions", [])]


def measure(name: str, code: Path, home: Path) -> dict:
    """One revision's first prepare (once: it is mostly the scrubbing of the new sessions)
    and its "everything mined" cursor."""
    wiki = home / f"wiki-{name}"
    env = env_for(home, code, wiki)
    memwiki(env, "init", str(wiki))
    row: dict = {}
    for host in HOSTS:
        run = prepare(env, host)
        reset(env, host, run[2], None)
        count = memwiki_py(env, MINED, host)
        shutil.copyfile(
            wiki / ".memwiki" / "hosts" / host / "cursor.json",
            home / f"cursor-{name}-{host}.json",
        )
        row[host] = {"first": [run], "streams": count, "nochange": [], "grew": []}
    return row


def memwiki_py(env: dict, script: str, *args: str) -> int:
    """Run a Python snippet with the revision's code; its printed number."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    return int(done.stdout.strip())


def interleaved(revs: dict[str, Path], home: Path, big: dict, rounds: int, rows: dict) -> None:
    """No-change rounds, then rounds after the large session grew; the revisions take turns
    within each round, so a busy moment of the machine falls on both."""
    for case in ("nochange", "grew"):
        for host in HOSTS:
            for r in range(rounds):
                if case == "grew":
                    grow(Path(big[host]), host, r)
                for name, code in revs.items():
                    env = env_for(home, code, home / f"wiki-{name}")
                    run = prepare(env, host, reads=r == 0)
                    rows[name][host][case].append(run)
                    reset(env, host, run[2], home / f"cursor-{name}-{host}.json")


def summary(runs: list) -> str:
    """Median seconds and the largest peak RSS of some runs."""
    wall = statistics.median(r[0] for r in runs)
    read = max(r[3] for r in runs)
    counted = f"{read / 2**20:7.1f} MB read" if read >= 0 else " " * 15
    return f"{wall:6.3f} s {max(r[1] for r in runs):4d} MB {counted}"


def report(rows: dict, data: dict, before: str | None) -> None:
    """The table, and whether the revisions offered the same sessions."""
    names = list(rows)
    print(f"\nbefore = {before}" if before else "")
    print("each cell: median wall time, peak RSS, bytes the prepare read")
    print(f"{'host':12} {'case':9} " + " ".join(f"{n:>32}" for n in names))
    for host in HOSTS:
        size = data["bytes"][host] / 2**20
        streams = rows[names[0]][host]["streams"]
        print(f"{host} ({streams} streams, {size:,.0f} MB)")
        for case in ("first", "nochange", "grew"):
            cells = " ".join(f"{summary(rows[n][host][case]):>32}" for n in names)
            print(f"{'':12} {case:9} {cells}")
            if len(names) > 1:
                same = all(
                    offered(rows[n][host][case][0][2]) == offered(rows[names[0]][host][case][0][2])
                    for n in names
                )
                if not same:
                    print(f"{'':22} DIFFERENT sessions offered by {', '.join(names)}")


def main() -> None:
    """Generate, measure each revision, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--projects", type=int, default=50)
    ap.add_argument("--big", type=int, default=4, help="large sessions per host")
    ap.add_argument("--big-mb", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", help="a revision to measure side by side (e.g. main)")
    ap.add_argument("--keep", type=Path, help="generate into (or reuse) this folder")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="memwiki-bridge-scale-"))
    home = base / "home"
    worktree = base / "before"
    try:
        marker = base / "generated.json"
        if not marker.is_file():
            started = time.perf_counter()
            data = generate(home, args.sessions, args.projects, args.big, args.big_mb)
            marker.write_text(json.dumps(data))
            print(f"generated in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        data = json.loads(marker.read_text())
        for wiki in home.glob("wiki-*"):
            shutil.rmtree(wiki)
        revs = {"after": REPO}
        if args.before:
            if worktree.exists():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(worktree)], timeout=60, check=False)  # fmt: skip
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree),
                            args.before], timeout=60, check=True, capture_output=True)  # fmt: skip
            revs = {"before": worktree, "after": REPO}
        rows = {name: measure(name, code, home) for name, code in revs.items()}
        interleaved(revs, home, data["big"], args.rounds, rows)
        report(rows, data, args.before)
    finally:
        if worktree.exists():
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(worktree)], timeout=60, check=False)  # fmt: skip
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
