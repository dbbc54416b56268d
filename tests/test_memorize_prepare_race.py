"""memorize prepare racing other memwiki processes (real processes, bounded): a session is
never opened in two runs at once, and prepare's branch and worktree never cost a
concurrent commit or another run anything."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from test_memorize_support import git, make_wiki, payload, recall, run_branches

from memwiki import memorize


def memwiki_process(root: Path, *argv: str, piped: bool = False) -> subprocess.Popen:
    """`memwiki --wiki ROOT ARGV` as a child process (this checkout's code); piped: its
    stdin is a pipe (for a body), else empty."""
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    return subprocess.Popen(
        [sys.executable, "-m", "memwiki", "--wiki", str(root), *argv],
        stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_session_being_prepared_is_not_opened_again_by_a_second_prepare(tmp_path):
    wiki = make_wiki(tmp_path)
    session = payload(tmp_path, "s.json", ["Deploys go through the staging cluster."])
    children: list[subprocess.Popen] = []

    def second_prepare(step: str) -> None:
        # While this prepare's run exists but is not finished, another process prepares
        # the same session; before the fix it opened a second run of it (the check for
        # memorized sessions passes over a run still being prepared).
        if step != "state-written" or children:
            return
        children.append(memwiki_process(wiki.root, "memorize", "prepare", str(session)))
        # Before the fix it finished meanwhile; now it waits for this prepare.
        with contextlib.suppress(subprocess.TimeoutExpired):
            children[0].wait(timeout=4)

    first = memorize.prepare(wiki, [session], _checkpoint=second_prepare)
    out, err = children[0].communicate(timeout=60)
    assert children[0].returncode == 4, (out, err)
    assert "already memorized" in err and first.run_id in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert run_branches(wiki.root) == [f"memwiki/run/{first.run_id}"]


def test_prepares_commits_and_adds_at_once_lose_nothing(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/seed.md": recall("seed", "Seed.\n")})
    rounds = 2
    deadline = time.monotonic() + 120
    for r in range(rounds):
        (wiki.root / "memory" / f"hand-{r}.md").write_text(recall(f"hand-{r}", "By hand.\n"))
        procs = [
            memwiki_process(
                wiki.root, "memorize", "prepare",
                str(payload(tmp_path, f"p{r}-{i}.json", [f"Round {r} session {i}."])),
            )
            for i in range(2)
        ]  # fmt: skip
        add = ("add", "memory", f"agent-{r}", "-d", f"Agent note {r}")
        procs.append(memwiki_process(wiki.root, *add, piped=True))
        procs.append(memwiki_process(wiki.root, "commit"))
        results = []
        for proc in procs:
            left = max(1.0, deadline - time.monotonic())
            body = "Written by an agent.\n" if proc.stdin else None
            results.append(proc.communicate(body, timeout=left))
        for proc, (_, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0, err
    tracked = set(git(wiki.root, "ls-files").split())
    for r in range(rounds):
        assert {f"memory/hand-{r}.md", f"memory/agent-{r}.md"} <= tracked
    statuses = memorize.status(wiki)
    assert len(statuses) == 2 * rounds
    assert {s.state for s in statuses} == {"prepared"}, statuses
    assert git(wiki.root, "fsck", "--no-dangling").strip() == ""
    assert git(wiki.root, "status", "--porcelain").strip() == ""
