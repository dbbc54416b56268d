"""A long history: log and restore read what was asked for, and one file's log follows renames.

The shape is proved on a real repository: an old commit's object is deleted from the
object store, so any command that reads the whole history fails, and a command that reads
only the newest commits does not notice.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pygit2
import pytest

HOT = "---\nname: hot\ndescription: A note edited today\n---\nVersion {n}.\n"


def gitcli(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def note(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Notes about {name}\n---\n{body}\n"


def grow(root: Path, commits: int) -> list[str]:
    """commits one-file commits on HEAD (loose objects), the work tree checked out after."""
    repo = pygit2.Repository(str(root))
    ids = []
    for i in range(commits):
        head = repo.head.peel(pygit2.Commit)
        index = pygit2.Index()
        index.read_tree(head.tree)
        path = f"memory/note-{i % 7}.md"
        blob = repo.create_blob(note(f"note-{i % 7}", f"edit {i}").encode())
        index.add(pygit2.IndexEntry(path, blob, pygit2.GIT_FILEMODE_BLOB))
        when = pygit2.Signature("desk", "desk@example.com", 1_700_000_000 + 3600 * i, 0)
        oid = repo.create_commit(
            "HEAD", when, when, f"edit {i}\n", index.write_tree(repo), [head.id]
        )
        ids.append(str(oid))
    gitcli(root, "reset", "-q", "--hard")
    return ids


def drop_object(root: Path, oid: str) -> None:
    """Delete one loose object: whatever reads it from now on fails."""
    (root / ".git" / "objects" / oid[:2] / oid[2:]).unlink()


@pytest.fixture
def long_history(tmp_path, cli) -> Path:
    """A wiki with 120 commits, commit 10's object gone, memory/hot changed in the last two."""
    root = tmp_path / "w"
    assert cli("init", root)[0] == 0
    ids = grow(root, 120)
    for n in (1, 2):
        (root / "memory/hot.md").write_text(HOT.format(n=n))
        assert cli("--wiki", root, "commit")[0] == 0
    drop_object(root, ids[10])
    with pytest.raises(subprocess.CalledProcessError):
        gitcli(root, "rev-list", "--count", "HEAD")  # the history really is unreadable
    return root


def test_log_reads_only_the_commits_it_shows(long_history, cli):
    code, out, err = cli("--wiki", long_history, "log", "-n", "5")
    assert code == 0, err
    assert len(out.splitlines()) == 5
    code, out, err = cli("--wiki", long_history, "log", "memory/hot", "-n", "2", "--json")
    assert code == 0, err
    assert [e["changes"] for e in json.loads(out)] == [
        [{"status": "updated", "path": "memory/hot.md"}],
        [{"status": "created", "path": "memory/hot.md"}],
    ]


def test_restore_reads_history_only_back_to_the_version_it_brings_back(long_history, cli):
    code, out, err = cli("--wiki", long_history, "restore", "memory/hot")
    assert code == 0, err
    assert (long_history / "memory/hot.md").read_text() == HOT.format(n=1)


def test_log_of_a_file_follows_its_renames(tmp_path, cli):
    rota = "\n".join(f"Week {n}: Ada, then Sam." for n in range(12))
    root = tmp_path / "w"
    assert cli("init", root)[0] == 0
    old, new = root / "memory/rotation.md", root / "memory/oncall.md"
    old.write_text(note("rotation", rota + "\nAda is on call."))
    assert cli("--wiki", root, "commit")[0] == 0
    old.write_text(note("rotation", rota + "\nAda is on call.\nSam next week."))
    assert cli("--wiki", root, "commit")[0] == 0
    old.rename(new)
    new.write_text(note("oncall", rota + "\nAda is on call.\nSam next week."))
    assert cli("--wiki", root, "commit")[0] == 0
    new.write_text(note("oncall", rota + "\nAda is on call.\nSam next week.\nBo after."))
    assert cli("--wiki", root, "commit")[0] == 0
    code, out, err = cli("--wiki", root, "log", "memory/oncall", "--json")
    assert code == 0, err
    changes = [e["changes"] for e in json.loads(out)]
    assert changes == [
        [{"status": "updated", "path": "memory/oncall.md"}],
        [{"status": "renamed", "path": "memory/oncall.md", "from": "memory/rotation.md"}],
        [{"status": "updated", "path": "memory/rotation.md"}],
        [{"status": "created", "path": "memory/rotation.md"}],
    ]
    # the same commits as git's own `log --follow`
    ours = [e["commit"] for e in json.loads(out)]
    assert ours == gitcli(root, "log", "--follow", "--format=%H", "--", "memory/oncall.md").split()


def test_finding_the_merge_of_a_run_reads_only_the_newest_commits(long_history):
    """memorize commit's recovery looks for the merge of a run's commit near the head."""
    from memwiki.git.merge import find_merge_of

    repo = pygit2.Repository(str(long_history))
    head = repo.head.peel(pygit2.Commit)
    sig = pygit2.Signature("run", "run@example.com", head.commit_time + 60, 0)
    run = repo.create_commit(None, sig, sig, "run\n", head.tree.id, [head.parents[0].id])
    merge = repo.create_commit("HEAD", sig, sig, "merge run\n", head.tree.id, [head.id, run])
    assert find_merge_of(repo, str(run), merge) == str(merge)
