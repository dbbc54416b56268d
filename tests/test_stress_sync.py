"""Scheduled jobs racing on one device while another device pushes, with random kills.

`memwiki hosts schedule` runs `sync` and the memorize/bridge jobs on timers, so on one
device (A) a sync to a real bare remote overlaps `memorize prepare`/`commit`, `add`,
`put`, `rm` and a person saving notes in an editor, while a second clone (B) adds notes
and syncs too; any of these processes is SIGKILLed at random moments (seeded). Then the
invariants: every write that reported success is in its device's HEAD and on disk, every
sync that reported success is on the remote, nothing temporary, no conflict marker and no
conflict copy was ever committed, `git fsck --strict` is clean everywhere, and both clones
converge after a final sync.

MEMWIKI_STRESS_SECONDS sets a round's length (6 s), MEMWIKI_STRESS_ROUNDS how many rounds
(1, each with its own seed), MEMWIKI_STRESS_SEED the first seed.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_stress_kill import (
    ABSENT,
    SEED,
    WORDS,
    Ledger,
    _command,
    _git,
    _spawn,
    _text,
    _token,
    kill_like_life,
)
from test_stress_kill import _memwiki as stress_memwiki

from memwiki.errors import StateError
from memwiki.fsutil import is_temp_name
from memwiki.git.copies import copies_in

# Read at import: the suite's autouse fixture removes every MEMWIKI_* variable.
SECONDS = float(os.environ.get("MEMWIKI_STRESS_SECONDS", "6"))
ROUNDS = int(os.environ.get("MEMWIKI_STRESS_ROUNDS", "1"))
SHARED = "memory/shared.md"  # the one note both devices edit
OP_LIMIT_S = 120  # a command running longer is blocked: killed and reported

# A scheduled memorize run, as one killable process: prepare, the executor's edit, commit.
MEMORIZE = r"""
import json, subprocess, sys
from pathlib import Path
command, wiki, session, rel, text = json.loads(sys.argv[1])
prep = subprocess.run(
    [*command, "--wiki", wiki, "memorize", "prepare", session, "--json"],
    capture_output=True, timeout=120,
)
if prep.returncode:
    sys.stderr.buffer.write(prep.stderr)
    sys.exit(prep.returncode)
run = json.loads(prep.stdout)
(Path(run["workspace"]) / rel).write_text(text)
done = subprocess.run(
    [*command, "--wiki", wiki, "memorize", "commit", run["run_id"], "--json"],
    capture_output=True, timeout=120,
)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
sys.exit(done.returncode)
"""


def _memwiki(root: Path, *argv: str) -> subprocess.CompletedProcess:
    return stress_memwiki(root, *argv, timeout=OP_LIMIT_S)


def _content(root: Path, path: str, ref: str | None) -> str | None:
    """The write a file comes from (its token): at ref in git, or on disk when ref is None."""
    if ref is None:
        file = root / path
        return _token(path, file.read_text()) if file.exists() else ABSENT
    done = _git(root, "show", f"{ref}:{path}", check=False)
    return _token(path, done.stdout) if done.returncode == 0 else ABSENT


@dataclass
class Op:
    """One command in flight on one device."""

    device: str
    kind: str
    proc: subprocess.Popen
    writes: dict[str, str | None]
    kill_at: float | None
    absent_ok: bool = False  # an rm of a name a killed write may never have made
    shared: str | None = None  # B's add of memory/shared.md: its token
    started: float = field(default_factory=time.monotonic)
    killed: bool = False


class Storm:
    """Device A's scheduled jobs and person, device B's writer-and-syncer, all at once."""

    def __init__(self, a: Path, b: Path, rng: random.Random, kill_rate: float):
        self.roots = {"a": a, "b": b}
        self.rng, self.kill_rate = rng, kill_rate
        self.ledgers = {"a": Ledger(), "b": Ledger()}
        self.person: dict[str, str] = {}  # path -> the token of the person's last save
        # memory/shared.md is edited on both devices: merges with conflict copies
        self.shared_person: str | None = None  # the person's last save of it on A
        self.shared_b: list[str] = []  # B's adds of it that reported success
        self.tool_copies: set[str] = set()  # Dropbox copies another sync tool made on A
        self.synced: list[tuple[str, str]] = []  # (device, commit) each successful sync reported
        self.failures: list[str] = []
        self.counts: dict[str, int] = {}
        self.serial = 0
        self.scratch = a.parent / "scratch"
        self.scratch.mkdir(exist_ok=True)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _words(self, k: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(k))

    def _token(self) -> str:
        self.serial += 1
        return f"t{self.serial}"

    def _spawn(self, device: str, kind: str, argv: list[str], writes, stdin: bytes = b"") -> Op:
        self.ledgers[device].uncertain(writes)  # until it reports success
        feed = self.scratch / f"stdin-{self.serial}"
        proc = _spawn(argv, self.roots[device], feed, stdin)
        kill_at = None
        if self.rng.random() < self.kill_rate:
            kill_at = time.monotonic() + self.rng.uniform(0.0, 1.0)
        self._count(f"{device}-{kind}")
        return Op(device, kind, proc, writes, kill_at)

    def _memwiki(self, device: str, *argv: str) -> list[str]:
        return _command("--wiki", str(self.roots[device]), *argv)

    def start(self, slot: str) -> Op:
        """The next command of a slot: A's sync, A's memorize, A's writer, or B."""
        token = self._token()
        if slot == "a-sync":
            return self._spawn("a", "sync", self._memwiki("a", "sync", "--json"), {})
        if slot == "a-memorize":
            name = f"m-{self.rng.randrange(3)}"
            rel = f"memory/{name}.md"
            text = _text(name, f"memorized {token}", f"# {name}\n{self._words(15)} {token}\n")
            session = self.scratch / f"session-{token}.json"
            said = f"remember {self._words(5)}"  # no token: the run's sources name the file
            session.write_text(
                json.dumps({"items": [{"type": "message", "role": "user", "content": said}]})
            )
            args = json.dumps([_command(), str(self.roots["a"]), str(session), rel, text])
            return self._spawn(
                "a", "memorize", [sys.executable, "-c", MEMORIZE, args], {rel: token}
            )
        if slot == "a-write":
            kind = self.rng.choice(["add", "add", "put", "rm"])
            names = [f"w-{i}" for i in range(3)]
            if kind == "add":
                name = self.rng.choice(names)
                body = f"# {name}\n{self._words(20)} {token}\n"
                argv = self._memwiki("a", "add", "memory", name, "-d", f"{self._words(3)} {token}")
                return self._spawn("a", kind, argv, {f"memory/{name}.md": token}, body.encode())
            if kind == "put":
                files = [
                    {
                        "track": "memory",
                        "name": name,
                        "description": f"{self._words(3)} {token}",
                        "content": f"# {name}\n{self._words(20)} {token}\n",
                    }
                    for name in self.rng.sample(names, 2)
                ]
                writes = {f"memory/{f['name']}.md": token for f in files}
                payload = json.dumps({"recall_files": files}).encode()
                return self._spawn("a", kind, self._memwiki("a", "put", "-"), writes, payload)
            rel = f"memory/{self.rng.choice(names)}.md"
            argv = self._memwiki("a", "rm", rel.removesuffix(".md"), "--force")
            absent_ok = ABSENT in self.ledgers["a"].possible(rel)
            op = self._spawn("a", kind, argv, {rel: ABSENT})
            op.absent_ok = absent_ok
            return op
        # Device B: a note added, or a sync.
        if self.rng.random() < 0.5:
            return self._spawn("b", "sync", self._memwiki("b", "sync", "--json"), {})
        name = self.rng.choice(["b-0", "b-1", "b-2", "shared"])
        argv = self._memwiki("b", "add", "memory", name, "-d", f"{self._words(3)} {token}")
        body = f"# {name}\n{self._words(20)} {token}\n".encode()
        if name == "shared":  # not in the ledger: a merge may rightly put A's version there
            op = self._spawn("b", "add", argv, {}, body)
            op.shared = token
            return op
        return self._spawn("b", "add", argv, {f"memory/{name}.md": token}, body)

    def person_saves(self) -> None:
        """A person saves a note in an editor on A (write aside, rename over): no lock."""
        token = self._token()
        dice = self.rng.random()
        name = "shared" if dice < 0.2 else f"p-{self.rng.randrange(3)}"
        text = _text(name, f"person {token}", f"# {name}\n{self._words(12)} {token}\n")
        if dice > 0.9:  # Dropbox syncs this folder too, and made a conflict copy of a note
            rel = f"memory/{name} (conflicted copy {token}).md"
            (self.roots["a"] / rel).write_text(text)
            self.tool_copies.add(rel)
            self._count("a-dropbox")
            return
        rel = f"memory/{name}.md"
        aside = self.roots["a"] / "memory" / f".{name}.md.swp"  # git-ignored, as vim's
        aside.write_text(text)
        os.replace(aside, self.roots["a"] / rel)
        if name == "shared":
            self.shared_person = token
        else:
            self.person[rel] = token
        self._count("a-person")
        if self.rng.random() < 0.2:  # and commits it with git, racing memwiki's commits
            done = _git(
                self.roots["a"], "commit", "-q", "-m", f"by hand {token}", "--", rel, check=False
            )
            self._count("a-git-commit" if done.returncode == 0 else "a-git-commit refused")

    def _kill(self, op: Op) -> None:
        op.killed = True
        self._count("killed")
        kill_like_life(op.proc, self.rng)

    def finish(self, op: Op) -> None:
        out, err = op.proc.communicate(timeout=OP_LIMIT_S)
        code = op.proc.returncode
        if op.killed and code in (-signal.SIGKILL, 128 + signal.SIGKILL):
            return  # its writes stay uncertain
        text = err.decode(errors="replace")
        if code == 3 and op.absent_ok and "no RecallFile" in text:
            self.ledgers[op.device].succeeded(op.writes)
            return
        if code == 4 and op.kind == "sync" and "kept moving" in text:
            self._count(f"{op.device}-sync gave up")  # documented: run it again
            return
        if code == 4 and "the branch moved" in text:  # the person's `git commit`, meanwhile
            self._count(f"{op.device}-{op.kind} refused: branch moved")  # run it again
            return
        if code != 0:
            what = "killed, then" if op.killed else ""
            self.failures.append(f"{op.device} {op.kind} {what} exit {code}: {text}")
            return
        self.ledgers[op.device].succeeded(op.writes)
        if op.shared is not None:
            self.shared_b.append(op.shared)
        if op.kind == "sync":
            result = json.loads(out)
            self.synced.append((op.device, result["commit"]))
            others = [c for c in result["conflicts"] if c["path"] != SHARED]
            if others:  # each device writes only its own names, but for SHARED
                self.failures.append(f"{op.device} sync made conflicts: {others}")

    def run(self, seconds: float) -> None:
        """Keep every slot busy for seconds, then wait for the last commands."""
        deadline = time.monotonic() + seconds
        running: dict[str, Op] = {}
        slots = ["a-sync", "a-memorize", "a-write", "b"]
        next_save = time.monotonic()
        while True:
            now = time.monotonic()
            for slot in slots:
                op = running.get(slot)
                if op is not None and op.proc.poll() is not None:
                    self.finish(op)
                    running.pop(slot)
                elif op is not None and op.kill_at is not None and now >= op.kill_at:
                    self._kill(op)
                    op.kill_at = None
                elif op is not None and now - op.started > OP_LIMIT_S:
                    self._kill(op)
                    self.failures.append(f"{slot} ran for over {OP_LIMIT_S} s (blocked?)")
                if slot not in running and now < deadline:
                    running[slot] = self.start(slot)
            if now < deadline and now >= next_save:
                self.person_saves()
                next_save = now + self.rng.uniform(0.1, 0.6)
            if not running:
                return
            time.sleep(0.01)


def _devices(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    assert _memwiki(seed, "init", str(seed)).returncode == 0
    for n in range(6):
        (seed / "memory" / f"base-{n}.md").write_text(
            _text(f"base-{n}", f"base note {n}", f"# Base {n}\nbilling ledger t0\n")
        )
    (seed / SHARED).write_text(_text("shared", "both devices t0", "# shared\nt0\n"))
    for argv in (["remote", "add", str(remote)], ["sync"]):
        done = _memwiki(seed, *argv)
        assert done.returncode == 0, done.stderr
    for name in ("a", "b"):
        done = _memwiki(seed, "clone", str(remote), str(tmp_path / name))
        assert done.returncode == 0, done.stderr
    return remote, tmp_path / "a", tmp_path / "b"


def _final_sync(root: Path) -> dict:
    done = _memwiki(root, "sync", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {c["path"] for c in result["conflicts"]} <= {SHARED}, result["conflicts"]
    return result


def _tokens(root: Path, paths: list[str]) -> set[str]:
    """The tokens the files at these paths hold on disk."""
    return {_token(p, (root / p).read_text()) for p in paths}


def check(storm: Storm, remote: Path, a: Path, b: Path) -> None:
    """The invariants, before and after the final syncs."""
    assert not storm.failures, "\n".join(storm.failures)
    # Locally, right after the storm: a write that reported success is in HEAD and on disk.
    for device, root in (("a", a), ("b", b)):
        ledger = storm.ledgers[device]
        for path in sorted(ledger.sure.keys() - ledger.maybe.keys()):
            assert _content(root, path, "HEAD") == ledger.sure[path], (device, path, "HEAD")
            assert _content(root, path, None) == ledger.sure[path], (device, path, "disk")
    for path, token in storm.person.items():  # no sync ever overwrote a person's save
        assert _content(a, path, None) == token, path
    # Every sync that reported success is on the remote.
    for device, commit in storm.synced:
        done = _git(remote, "merge-base", "--is-ancestor", commit, "main", check=False)
        assert done.returncode == 0, f"{device}'s synced commit {commit} is not on the remote"

    for root in (a, b, a):  # B's last pushes reach A
        held = _final_sync(root)["not_committed"]
    # Another sync tool's copies were never committed, only named.
    assert {p["path"] for p in held} == storm.tool_copies
    # The shared note: the person's last save and every one of B's adds that reported
    # success are in the remote's history (a later write on the other device, made after
    # it synced, may rightly have replaced it since); what is there now is whole.
    shared = [SHARED] + [c for c in copies_in(a) if c.startswith("memory/shared.conflict-")]
    assert _tokens(a, shared)  # each one write's whole text
    # --full-history: a side that a merge dropped is shown, not simplified away.
    log = ["log", "main", "--full-history", "--format=%H"]
    history = _git(remote, *log, "-p", "--", "memory/shared*").stdout
    written = set(re.findall(r"\bt[0-9]+\b", history))
    for token in storm.shared_b + [storm.shared_person or "t0"]:
        assert token in written, token
    last = storm.shared_person
    if last is not None and last not in _tokens(a, shared):
        # Gone from the note and its copies: then a later write replaced it, one whose
        # parent held it (`log -G` without -m shows no merge: one dropping it is a loss).
        word = f"-G(^|[^0-9a-z]){last}([^0-9]|$)"
        found = _git(remote, *log, word, "--", SHARED).stdout.split()
        assert found and _content(remote, SHARED, found[0]) != last, f"{last} dropped"
    # The person merges the copies by hand (here: deletes them); that syncs everywhere.
    assert set(copies_in(a)) == set(shared[1:]) | storm.tool_copies
    for rel in copies_in(a):
        (a / rel).unlink()
    for root in (a, b):
        assert _final_sync(root)["conflict_copies"] == []
    head = _git(remote, "rev-parse", "main").stdout.strip()
    assert _git(a, "rev-parse", "HEAD").stdout.strip() == head
    assert _git(b, "rev-parse", "HEAD").stdout.strip() == head
    for root in (a, b):
        for device in ("a", "b"):
            ledger = storm.ledgers[device]
            for path in sorted(ledger.sure.keys() | ledger.maybe.keys()):
                allowed = ledger.possible(path)
                assert _content(root, path, "HEAD") in allowed, (root.name, device, path)
                assert _content(root, path, None) in allowed, (root.name, device, path)
        for path, token in storm.person.items():
            assert _content(root, path, "HEAD") == token, (root.name, path)
            assert _content(root, path, None) == token, (root.name, path)
        left = _git(root, "status", "--porcelain").stdout.splitlines()
        assert all(is_temp_name(line[3:].rsplit("/", 1)[-1]) for line in left), left
        assert copies_in(root) == {}, root
        fsck = _git(root, "fsck", "--strict", "--no-dangling", check=False)
        assert fsck.returncode == 0 and not fsck.stderr.strip(), fsck.stderr
        lint = _memwiki(root, "lint")
        assert lint.returncode == 0, lint.stdout + lint.stderr
    fsck = _git(remote, "fsck", "--strict", "--no-dangling", check=False)
    assert fsck.returncode == 0 and not fsck.stderr.strip(), fsck.stderr
    # Nothing in the remote's whole history is a temporary file, a conflict copy or a
    # file with conflict markers.
    # -m: what a merge commit itself brought (a conflict copy is made by one) is listed.
    paths = set(_git(remote, "log", "main", "-m", "--name-only", "--format=").stdout.split("\n"))
    bad = [
        p
        for p in paths
        if is_temp_name(p.rsplit("/", 1)[-1])
        or (".conflict-" in p and not p.startswith("memory/shared.conflict-remote-"))
        or p in storm.tool_copies
    ]
    assert not bad, bad
    marked = _git(remote, "log", "main", "-m", "--format=%H", "-G^(<<<<<<<|>>>>>>>)( |$)").stdout
    assert not marked.strip(), marked


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_scheduled_sync_racing_memorize_writers_a_person_and_another_device(tmp_path, round_):
    """Sync, memorize, add/put/rm and a person on A, B adding and syncing, kills at random:
    nothing that reported success is lost, here or on the remote, and the clones converge."""
    remote, a, b = _devices(tmp_path)
    storm = Storm(a, b, random.Random(SEED + 1000 * round_), kill_rate=0.3)
    storm.run(SECONDS)
    print(storm.counts)  # shown with -s: what the round did
    check(storm, remote, a, b)
    counts = storm.counts
    assert counts.get("a-sync", 0) >= 2 and counts.get("b-sync", 0) >= 1, counts
    assert counts.get("a-memorize", 0) >= 1 and counts.get("killed", 0) >= 1, counts


# ------------------------------------------------ regression tests for what the storm found


@pytest.mark.parametrize("pushes", [True, False])
def test_the_commit_a_sync_reports_is_the_one_on_the_remote(tmp_path, pushes):
    """Bug (seed 20265207, round 4): sync read the branch for its report after the push,
    outside the wiki's lock, so an `add` or a memorize run committing in between was
    reported as synced (`"commit"`, with `"pushed": true`) though it never left the device."""
    from memwiki.config import load
    from memwiki.git import sync as syncmod
    from memwiki.recallfile import RecallFile
    from memwiki.wiki import Wiki

    remote, a, _ = _devices(tmp_path)
    wiki = Wiki.open(a)
    if pushes:
        (a / "memory/hand.md").write_text(_text("hand", "a hand edit", "# hand\nt1\n"))

    def agent_writes(step: str) -> None:
        # Once the wiki's lock is free again: after the push, or when there is none to make.
        if step == ("pushed" if pushes else "integrated"):
            wiki.save(RecallFile("memory", "late", "written meanwhile t2", "# late\nt2\n"))

    result = syncmod.sync(wiki, load(), _checkpoint=agent_writes)
    assert result.pushed is pushes
    on_remote = _git(remote, "rev-parse", "main").stdout.strip()
    assert result.commit == on_remote
    assert _content(a, "memory/late.md", "HEAD") == "t2"  # committed, for the next sync
    assert _content(remote, "memory/late.md", "main") is ABSENT


def test_a_git_commit_by_hand_during_a_memorize_merge_is_never_undone(tmp_path):
    """The same race in memorize commit (update.apply moves the branch for both): a
    person's `git commit` landing while a scheduled run merges is kept, on disk and in git."""
    from memwiki.memorize import commit as memorize_commit
    from memwiki.wiki import Wiki

    _, a, _ = _devices(tmp_path)
    session = tmp_path / "session.json"
    session.write_text(
        json.dumps({"items": [{"type": "message", "role": "user", "content": "hi"}]})
    )
    prep = _memwiki(a, "memorize", "prepare", str(session), "--json")
    assert prep.returncode == 0, prep.stderr
    run = json.loads(prep.stdout)
    learned = _text("learned", "from the run t1", "# learned\nt1\n")
    (Path(run["workspace"]) / "memory/learned.md").write_text(learned)
    mine = _text("base-0", "edited by hand t2", "# Base 0\nt2\n")

    def person_commits(step: str) -> None:
        if step == "merge-made":
            (a / "memory/base-0.md").write_text(mine)
            _git(a, "commit", "-q", "-am", "by hand")

    wiki = Wiki.open(a)
    with pytest.raises(StateError, match="the branch moved"):
        memorize_commit(wiki, run["run_id"], _checkpoint=person_commits)
    assert (a / "memory/base-0.md").read_text() == mine
    done = _memwiki(a, "memorize", "commit", run["run_id"], "--json")  # run again: merged
    assert done.returncode == 0, done.stderr
    assert _content(a, "memory/base-0.md", "HEAD") == "t2"
    assert _content(a, "memory/learned.md", "HEAD") == "t1"
    assert _git(a, "status", "--porcelain").stdout == ""
