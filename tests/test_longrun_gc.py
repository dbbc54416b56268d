"""A year of commits in seconds: memwiki's loose git objects are packed by a background `git gc --auto`.

git's threshold is `gc.auto` (6700 loose objects, estimated from `objects/17/`); the tests
set it to 256 (more than one object in `objects/17/`) and plant objects there, so that
one commit stands for a year of them.
"""

from __future__ import annotations

import os
import subprocess
import time

import pygit2
import pytest

from memwiki.git import maintenance
from memwiki.recallfile import RecallFile


def _git(wiki, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(wiki.root), *args], capture_output=True, text=True, timeout=60, check=True
    ).stdout


def _loose(wiki) -> int:
    counts = dict(line.split(": ") for line in _git(wiki, "count-objects", "-v").splitlines())
    return int(counts["count"])


def _plant(wiki, n: int = 3, age_days: float = 0) -> None:
    """n unreachable blobs in objects/17/ (what git samples), age_days old."""
    repo = pygit2.Repository(str(wiki.root))
    planted, i = 0, 0
    while planted < n:
        data = f"planted {i}\n".encode()
        i += 1
        if str(pygit2.hash(data)).startswith("17"):
            oid = repo.create_blob(data)
            path = wiki.root / ".git" / "objects" / "17" / str(oid)[2:]
            when = time.time() - age_days * 86400
            os.utime(path, (when, when))
            planted += 1


def _save(wiki, i: int) -> None:
    wiki.save(RecallFile("memory", f"note-{i % 7}", f"Note {i}", body=f"# Note\nedit {i}\n"))


def _wait_for_gc() -> None:
    for proc in list(maintenance._STARTED):
        proc.wait(timeout=60)


@pytest.fixture(autouse=True)
def no_gc_of_another_test():
    """Each test sees only the gc processes it started (the list is the process's)."""
    _wait_for_gc()
    maintenance._STARTED.clear()
    yield
    _wait_for_gc()
    maintenance._STARTED.clear()


@pytest.fixture
def busy_wiki(wiki):
    """A wiki with a year's commits, as far as git's estimate can tell."""
    for i in range(20):
        _save(wiki, i)
    _git(wiki, "config", "gc.auto", "256")
    return wiki


def test_a_commit_past_gc_auto_packs_the_loose_objects_in_the_background(busy_wiki):
    # Before: nothing ever packed memwiki's objects (libgit2 never runs gc): 3,000 commits
    # left 12,007 loose objects, 61 MB of .git/ (3.2 MB once packed).
    wiki = busy_wiki
    _plant(wiki, age_days=30)  # unreachable and old: git gc prunes them
    loose = _loose(wiki)
    assert loose > 80
    started = time.monotonic()
    _save(wiki, 100)
    assert time.monotonic() - started < 1.0  # the commit does not wait for the gc
    assert len(maintenance._STARTED) == 1
    _wait_for_gc()
    assert _loose(wiki) == 0
    assert "in-pack: 0" not in _git(wiki, "count-objects", "-v")
    log = (wiki.sidecar / "logs" / "gc.log").read_text()
    assert "git gc --auto: started" in log and "exit 0" in log
    _git(wiki, "fsck", "--strict")
    assert wiki.get("memory", "note-2").body == "# Note\nedit 100\n"
    assert not maintenance.after_commit(wiki.repo)  # nothing left to do


def test_gc_auto_zero_and_maintenance_auto_false_are_respected(busy_wiki):
    wiki = busy_wiki
    _plant(wiki, age_days=30)
    for setting, value in (("gc.auto", "0"), ("maintenance.auto", "false")):
        _git(wiki, "config", setting, value)
        _save(wiki, 200 + len(value))
        assert not maintenance._STARTED
        _git(wiki, "config", "--unset", setting)
        _git(wiki, "config", "gc.auto", "256")
    assert not (wiki.sidecar / "logs" / "gc.log").exists()
    assert _loose(wiki) > 80


def test_the_gc_never_waits_for_a_writer_and_its_ref_step_never_races_one(busy_wiki):
    wiki = busy_wiki
    _plant(wiki, age_days=30)
    _git(wiki, "config", "gc.reflogExpire", "now")  # so the reflog step shows
    _git(wiki, "config", "gc.reflogExpireUnreachable", "now")
    reflog = wiki.root / ".git" / "logs" / "HEAD"
    lines = reflog.read_text().count("\n")
    assert lines > 20
    repo = pygit2.Repository(str(wiki.root))
    with wiki.write_lock():  # a memwiki write (a sync, a memorize merge) in progress
        assert maintenance.after_commit(repo)
        assert not maintenance.after_commit(repo)  # gc.lock is the first one's from the start
        deadline = time.monotonic() + 60
        while _loose(wiki) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _loose(wiki) == 0  # the objects were packed while the writer held its lock
        time.sleep(0.5)
        # ...but the reflogs, whose expiry locks the branch, wait for it
        assert reflog.read_text().count("\n") == lines
        assert maintenance._STARTED[0].poll() is None
    _wait_for_gc()
    assert len(maintenance._STARTED) == 1
    assert reflog.read_text().count("\n") < lines
    assert "git reflog expire: exit 0" in (wiki.sidecar / "logs" / "gc.log").read_text()
    _git(wiki, "fsck", "--strict")


def test_objects_gc_cannot_prune_yet_start_no_gc_on_every_commit(busy_wiki):
    # Unreachable objects younger than two weeks stay loose after a gc: without the stamp
    # every later commit would start a gc that packs nothing.
    wiki = busy_wiki
    _plant(wiki, age_days=0)
    _save(wiki, 300)
    _wait_for_gc()
    assert (wiki.sidecar / "gc-still-due").exists()
    maintenance._STARTED.clear()
    for i in range(3):
        _save(wiki, 400 + i)
    assert not maintenance._STARTED
    assert "not started again for a day" in (wiki.sidecar / "logs" / "gc.log").read_text()


def test_a_commit_in_a_memorize_runs_worktree_packs_the_wikis_objects_and_keeps_the_run(
    busy_wiki, tmp_path
):
    from memwiki.git import repo as gitstore
    from memwiki.memorize import worktrees

    wiki = busy_wiki
    _plant(wiki, age_days=30)
    workspace = tmp_path / "run" / "workspace"
    worktrees.create(wiki.repo, "r1", workspace, wiki.repo.head.peel(pygit2.Commit))
    (workspace / "memory" / "from-run.md").write_text("---\ndescription: r\n---\n# R\n")
    wrepo = worktrees.open_workspace(workspace)
    oid, _ = gitstore.commit_paths(wrepo, ["memory/from-run.md"], "run commit\n")
    assert oid is not None
    assert len(maintenance._STARTED) == 1  # the wiki's gc, started from the run's worktree
    _wait_for_gc()
    assert _loose(wiki) == 0
    _git(wiki, "fsck", "--strict")
    assert str(workspace) in _git(wiki, "worktree", "list")
    assert _git(wiki, "log", "-1", "--format=%s", "memwiki/run/r1").strip() == "run commit"
