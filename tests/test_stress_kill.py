"""Many real `memwiki` processes writing and reading one wiki at once, some of them killed
with SIGKILL at random moments (seeded: MEMWIKI_STRESS_SEED reproduces a failure), then the
invariants every user relies on checked with the real tools: git, lint, doctor, retrieve.

The default suite runs a short round; `pytest -m slow tests/test_stress_kill.py` runs long
ones (MEMWIKI_STRESS_SECONDS sets their length).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memwiki.wiki import Wiki

SEED = int(os.environ.get("MEMWIKI_STRESS_SEED", "20261207"))
WORDS = "billing staging release ledger webhook kafka backup restore invoice cents".split()
QUERIES = ["release staging webhook", "ledger invoice cents", "kafka backup restore"]
ABSENT = None  # the expected content of a name that is deleted


def _command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "memwiki", *argv]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "MEMWIKI_EMBED": "hash"}
    env.update(extra)
    return env


def _text(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


@dataclass
class Op:
    """One command in flight: what it would leave when it succeeds."""

    argv: list[str]
    proc: subprocess.Popen
    writes: dict[str, str | None]  # path -> the token it holds (None: deleted) on success
    kill_at: float | None
    absent_ok: bool = False  # rm of a name a killed command may have removed already
    started: float = field(default_factory=time.monotonic)
    killed: bool = False


@dataclass
class Ledger:
    """What each path may hold: exactly one value once a write reported success, any of
    several while the last write to it was killed (before or after its commit)."""

    sure: dict[str, str | None] = field(default_factory=dict)
    maybe: dict[str, set] = field(default_factory=dict)

    def possible(self, path: str) -> set:
        return {self.sure.get(path, ABSENT)} | self.maybe.get(path, set())

    def succeeded(self, writes: dict[str, str | None]) -> None:
        for path, content in writes.items():
            self.sure[path] = content
            self.maybe.pop(path, None)

    def uncertain(self, writes: dict[str, str | None]) -> None:
        for path, content in writes.items():
            self.maybe.setdefault(path, set()).add(content)


class Stress:
    """N slots, each running one random memwiki command after another on one wiki."""

    def __init__(self, root: Path, rng: random.Random, slots: int, kill_rate: float):
        self.root, self.rng, self.slots, self.kill_rate = root, rng, slots, kill_rate
        self.scratch = root.parent / "stdin"
        self.scratch.mkdir(exist_ok=True)
        self.ledger = Ledger()
        self.failures: list[str] = []
        self.counts: dict[str, int] = {}
        self.serial = 0
        self.initial = _git(root, "ls-files").stdout.split()

    def _words(self, k: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(k))

    def _start(self, slot: int) -> Op:
        """A random command touching only this slot's names (so the ledger is exact)."""
        self.serial += 1
        token = f"t{self.serial}"
        names = [f"s{slot}-{i}" for i in range(3)]
        kind = self.rng.choice(["add", "add", "put", "rm", "commit", "retrieve", "reindex"])
        writes: dict[str, str | None] = {}
        absent_ok = False
        stdin = b""
        if kind == "add":
            name = self.rng.choice(names)
            body = f"# {name}\n{self._words(20)} {token}\n"
            argv = ["add", "memory", name, "-d", f"{self._words(3)} {token}"]
            stdin = body.encode()
            writes[f"memory/{name}.md"] = token
        elif kind == "put":
            chosen = self.rng.sample(names, 2)
            files = []
            for name in chosen:
                body = f"# {name}\n{self._words(20)} {token}\n"
                desc = f"{self._words(3)} {token}"
                files.append(
                    {"track": "memory", "name": name, "description": desc, "content": body}
                )
                writes[f"memory/{name}.md"] = token
            argv, stdin = ["put", "-"], json.dumps({"recall_files": files}).encode()
        elif kind == "rm":
            name = self.rng.choice(names)
            argv = ["rm", f"memory/{name}", "--force"]
            writes[f"memory/{name}.md"] = ABSENT
            absent_ok = ABSENT in self.ledger.possible(f"memory/{name}.md")
        elif kind == "commit":
            # A hand edit (an editor's atomic save), then `memwiki commit` of everything.
            name = f"h{slot}"
            path = f"memory/{name}.md"
            content = _text(name, f"hand {token}", f"# hand\n{self._words(12)} {token}\n")
            tmp = self.root / "memory" / f".{name}.editor"
            tmp.write_text(content)
            os.replace(tmp, self.root / path)
            writes[path] = token  # on disk now; in HEAD once the commit reports success
            argv = ["commit", "-m", f"hand {token}"]
        elif kind == "retrieve":
            argv = ["retrieve", self.rng.choice(QUERIES), "--json"]
        else:
            argv = ["reindex"]
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.ledger.uncertain(writes)  # until it reports success
        feed = self.scratch / f"stdin-{self.serial}"
        feed.write_bytes(stdin)
        with feed.open("rb") as fh:
            proc = subprocess.Popen(
                _command("--wiki", str(self.root), *argv),
                stdin=fh,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(),
                start_new_session=True,
            )
        kill_at = None
        if self.rng.random() < self.kill_rate:
            kill_at = time.monotonic() + self.rng.uniform(0.0, 0.8)
        return Op([kind, *argv], proc, writes, kill_at, absent_ok)

    def _kill(self, op: Op) -> None:
        op.killed = True
        self.counts["killed"] = self.counts.get("killed", 0) + 1
        # A closed terminal kills the group (a retrieve's forked writer too), the OOM
        # killer one process.
        try:
            if self.rng.random() < 0.5:
                os.killpg(op.proc.pid, signal.SIGKILL)
            else:
                op.proc.kill()
        except ProcessLookupError:
            pass

    def _finish(self, op: Op) -> None:
        out, err = op.proc.communicate(timeout=120)
        code = op.proc.returncode
        if op.killed and code == -signal.SIGKILL:
            return  # its writes stay uncertain
        if code == 3 and op.absent_ok and b"no RecallFile" in err:
            self.ledger.succeeded(op.writes)
            return
        if code != 0:
            self.failures.append(f"{op.argv} exit {code}: {err.decode(errors='replace')}")
            return
        self.ledger.succeeded(op.writes)
        if op.argv[0] == "retrieve":
            json.loads(out)  # a whole answer

    def run(self, seconds: float) -> None:
        """Keep every slot busy for seconds, then wait for the last commands."""
        deadline = time.monotonic() + seconds
        running: dict[int, Op] = {}
        while True:
            now = time.monotonic()
            for slot in range(self.slots):
                op = running.get(slot)
                if op is not None and op.proc.poll() is not None:
                    self._finish(op)
                    running.pop(slot)
                elif op is not None and op.kill_at is not None and now >= op.kill_at:
                    self._kill(op)
                    op.kill_at = None
                elif op is not None and now - op.started > 120:
                    self._kill(op)
                    self.failures.append(f"{op.argv} ran for over 120 s (blocked?)")
                if slot not in running and now < deadline:
                    running[slot] = self._start(slot)
            if not running:
                return
            time.sleep(0.01)


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=60, check=check
    )


def _memwiki(root: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command("--wiki", str(root), *argv),
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )


def _ranked(root: Path, query: str) -> list[tuple[str, float]]:
    done = _memwiki(root, "retrieve", query, "--json", "-k", "8")
    assert done.returncode == 0, done.stderr
    return [(r["path"], round(r["score"], 6)) for r in json.loads(done.stdout)["results"]]


def _token(path: str, text: str) -> str:
    """The one write a file's text comes from: its description and body name the same
    token, or the file is half of one write and half of another (or half-written)."""
    tokens = set(re.findall(r"\bt[0-9]+\b", text))
    assert len(tokens) == 1 and text.count("\n---\n") >= 1, f"{path} is not whole:\n{text}"
    return tokens.pop()


def _head_content(root: Path, path: str) -> str | None:
    done = _git(root, "show", f"HEAD:{path}", check=False)
    return _token(path, done.stdout) if done.returncode == 0 else ABSENT


def _disk_content(root: Path, path: str) -> str | None:
    file = root / path
    return _token(path, file.read_text()) if file.exists() else ABSENT


def check_invariants(root: Path, stress: Stress, tmp_path: Path) -> None:
    """Everything a user relies on after the storm (see docs/architecture.md)."""
    assert not stress.failures, "\n".join(stress.failures)
    ledger = stress.ledger
    for path in sorted(set(ledger.sure) | set(ledger.maybe)):
        head, disk = _head_content(root, path), _disk_content(root, path)
        if path in ledger.maybe:
            allowed = ledger.possible(path)
            assert head in allowed, f"{path}: HEAD holds a version no write made"
            assert disk in allowed, f"{path}: the disk holds a version no write made"
        else:  # the last write reported success: committed, and on disk
            assert head == ledger.sure[path], f"{path}: a write that succeeded is not in HEAD"
            assert disk == ledger.sure[path], f"{path}: a write that succeeded is not on disk"
    # Nothing half-written or left over is committed: every tracked file is a whole file
    # some command wrote (a killed write's temporary file must never be committed).
    for path in set(_git(root, "ls-files").stdout.split()) - set(stress.initial):
        if path.startswith("memory/"):
            assert path in ledger.sure or path in ledger.maybe, f"{path}: no write made it"
    fsck = _git(root, "fsck", "--strict", "--no-dangling", check=False)
    assert fsck.returncode == 0 and not fsck.stderr.strip(), fsck.stderr
    lint = _memwiki(root, "lint")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    doctor = _memwiki(root, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    commit = _memwiki(root, "commit")  # what a killed write saved but did not commit
    assert commit.returncode == 0, commit.stderr
    assert _git(root, "status", "--porcelain").stdout == ""
    # The index the storm left answers as a rebuild of the same files does.
    fresh = tmp_path / "fresh"
    shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".memwiki"))
    for query in QUERIES:
        assert _ranked(root, query) == _ranked(fresh, query), query


def _seed_wiki(root: Path) -> Wiki:
    wiki, _ = Wiki.init(root)
    rng = random.Random(SEED)
    for n in range(12):
        words = " ".join(rng.choice(WORDS) for _ in range(40))
        (root / "memory" / f"base-{n}.md").write_text(
            _text(f"base-{n}", f"base note {n}", f"# Base {n}\n{words}\n")
        )
    wiki.commit("base notes\n")
    assert _memwiki(root, "reindex").returncode == 0
    return wiki


@pytest.mark.parametrize("kill_rate", [0.0, 0.35])
def test_concurrent_writers_killed_at_random_moments_lose_nothing(tmp_path, kill_rate) -> None:
    """Four processes at once for a few seconds: without kills every command succeeds;
    with them, every write that reported success is in HEAD and on disk, and the rest of
    the invariants hold."""
    wiki = _seed_wiki(tmp_path / "w")
    stress = Stress(wiki.root, random.Random(SEED + int(kill_rate * 100)), 4, kill_rate)
    stress.run(float(os.environ.get("MEMWIKI_STRESS_SECONDS", "8")))
    check_invariants(wiki.root, stress, tmp_path)
    assert stress.counts.get("add", 0) > 3, stress.counts
    if kill_rate:
        assert stress.counts.get("killed", 0) > 2, stress.counts
