"""One read of the work tree's status per sync (there were four, ~40 ms each at 20,000
files), and what that read promises: what sync checks is what it commits."""

from __future__ import annotations

import pygit2
import pytest
from test_sync import bare, clone_to, gitcli, recall, seeded_remote, write

from memwiki.config import load
from memwiki.errors import StateError
from memwiki.git import precommit
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki

INVALID = "---\nname: late\n---\nNo description.\n"


def counted_status(monkeypatch) -> list[int]:
    """Every repo.status() call from now on, counted."""
    calls: list[int] = []
    real = pygit2.Repository.status

    def counted(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pygit2.Repository, "status", counted)
    return calls


def meanwhile(monkeypatch, action) -> None:
    """Run action after sync read the status and checked the edits, before it stages them
    (where the pre-commit hooks run: a person's editor can save at that moment too)."""
    real = precommit.refused_by_hooks

    def hooks(root, paths, env):
        action()
        return real(root, paths, env)

    monkeypatch.setattr(precommit, "refused_by_hooks", hooks)


def remote_files(remote) -> set[str]:
    return set(gitcli(remote, "ls-tree", "-r", "--name-only", "main").split())


def test_a_sync_reads_the_status_once_whatever_it_has_to_do(tmp_path, monkeypatch):
    remote, _ = seeded_remote(tmp_path, {"memory/cats.md": recall("cats", "Purr.\n")})
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    calls = counted_status(monkeypatch)
    assert syncmod.sync(a, load()).commit is not None
    assert len(calls) == 1  # nothing to do (was 4)

    # An edit, an invalid note and another tool's copy: each found in the one read.
    write(a.root, "memory/cats.md", recall("cats", "Purr. Edited.\n"))
    write(a.root, "memory/broken.md", INVALID)
    write(a.root, "memory/cats (conflicted copy).md", recall("cats", "Dropbox's.\n"))
    calls.clear()
    result = syncmod.sync(a, load())
    assert len(calls) == 1
    assert result.pushed and [c.path for c in result.changes] == ["memory/cats.md"]
    held = {p["path"] for p in result.not_committed}
    assert held == {"memory/broken.md", "memory/cats (conflicted copy).md"}

    write(b.root, "memory/dogs.md", recall("dogs", "Woof.\n"))
    syncmod.sync(b, load())
    calls.clear()
    result = syncmod.sync(a, load())
    # b's commit and its merge of a's edit, brought in by a fast-forward and its checkout
    assert len(calls) == 1 and result.merged == "fast-forward" and result.fetched == 2
    assert (a.root / "memory/dogs.md").is_file()
    assert {"memory/cats.md", "memory/dogs.md"} <= remote_files(remote)
    assert "memory/broken.md" not in remote_files(remote)


def test_a_note_written_while_sync_checks_the_edits_is_not_committed_unchecked(
    tmp_path, monkeypatch
):
    """Bug: each step read the status again, so an invalid note saved after the check and
    before the staging was committed and pushed unchecked; it now waits for the next sync,
    which holds it back as invalid."""
    remote, _ = seeded_remote(tmp_path)
    a = clone_to(remote, tmp_path / "a")
    write(a.root, "memory/cats.md", recall("cats", "Purr.\n"))
    meanwhile(monkeypatch, lambda: write(a.root, "memory/late.md", INVALID))
    result = syncmod.sync(a, load())
    assert [c.path for c in result.changes] == ["memory/cats.md"]
    assert "memory/late.md" not in remote_files(remote)
    assert "memory/late.md" not in gitcli(a.root, "ls-files")
    monkeypatch.undo()
    result = syncmod.sync(a, load())
    assert [p["path"] for p in result.not_committed] == ["memory/late.md"]
    assert "description" in result.not_committed[0]["problem"]
    assert "memory/late.md" not in remote_files(remote)
    assert (a.root / "memory/late.md").read_text() == INVALID


def test_files_deleted_or_brought_back_after_the_read_lose_nothing(tmp_path, monkeypatch):
    """The read is older than the staging: an edited file deleted since is committed as
    deleted (index.add used to fail on it), a deleted one brought back waits."""
    notes = {"memory/cats.md": recall("cats", "Purr.\n"), "memory/dogs.md": recall("dogs", "W.\n")}
    remote, _ = seeded_remote(tmp_path, notes)
    a = clone_to(remote, tmp_path / "a")
    write(a.root, "memory/cats.md", recall("cats", "Purr, edited.\n"))
    (a.root / "memory/dogs.md").unlink()
    back = recall("dogs", "Woof, written again.\n")

    def person() -> None:
        (a.root / "memory/cats.md").unlink()
        write(a.root, "memory/dogs.md", back)

    meanwhile(monkeypatch, person)
    result = syncmod.sync(a, load())
    assert [(c.status, c.path) for c in result.changes] == [("deleted", "memory/cats.md")]
    assert remote_files(remote) >= {"memory/dogs.md"} and "memory/cats.md" not in remote_files(
        remote
    )
    assert gitcli(remote, "show", "main:memory/dogs.md") == notes["memory/dogs.md"]
    monkeypatch.undo()
    result = syncmod.sync(a, load())
    assert [(c.status, c.path) for c in result.changes] == [("updated", "memory/dogs.md")]
    assert gitcli(remote, "show", "main:memory/dogs.md") == back


def test_a_sync_with_nothing_to_do_leaves_the_git_index_alone(tmp_path):
    """It used to write .git/index again on every sync (20,000 entries read back and
    checked one by one for the sidecar: ~60 ms)."""
    remote, _ = seeded_remote(tmp_path, {"memory/cats.md": recall("cats", "Purr.\n")})
    a = clone_to(remote, tmp_path / "a")
    syncmod.sync(a, load())
    index = a.root / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.stat().st_ino, index.read_bytes())
    result = syncmod.sync(a, load())
    assert result.committed is None and not result.pushed and result.merged == "none"
    assert (index.stat().st_mtime_ns, index.stat().st_ino, index.read_bytes()) == before


def test_a_merge_in_progress_with_nothing_changed_is_still_refused(tmp_path):
    """The shortcut for a clean work tree keeps the check: git's merge state is in
    .git/MERGE_HEAD, which a status read does not show."""
    remote, _ = seeded_remote(tmp_path, {"memory/cats.md": recall("cats", "Purr.\n")})
    a = clone_to(remote, tmp_path / "a")
    gitcli(a.root, "checkout", "-q", "-b", "side")
    gitcli(a.root, "commit", "-q", "--allow-empty", "-m", "nothing")
    gitcli(a.root, "checkout", "-q", "main")
    gitcli(a.root, "merge", "-q", "--no-commit", "--no-ff", "side")
    assert (a.root / ".git" / "MERGE_HEAD").exists() and not a.repo.status()
    before = gitcli(a.root, "rev-parse", "HEAD")
    with pytest.raises(StateError, match="git has a merge in progress"):
        syncmod.sync(a, load())
    assert gitcli(a.root, "rev-parse", "HEAD") == before


def test_a_sidecar_an_old_tool_committed_is_untracked_by_a_sync_with_nothing_else(tmp_path):
    """The shortcut for a clean work tree does not skip the sidecar's removal."""
    remote = bare(tmp_path)
    seed, _ = Wiki.init(tmp_path / "seed")
    syncmod.add_remote(seed, str(remote))
    write(seed.root, ".memwiki/old-tool.json", "{}\n")
    gitcli(seed.root, "add", "-f", ".memwiki/old-tool.json")
    gitcli(seed.root, "commit", "-qm", "an old tool committed its sidecar")
    assert not seed.repo.status()
    result = syncmod.sync(seed, load())
    assert [(c.status, c.path) for c in result.changes] == [("deleted", ".memwiki/old-tool.json")]
    assert not any(p.startswith(".memwiki") for p in remote_files(remote))
    assert (seed.root / ".memwiki/old-tool.json").is_file()


def test_a_temporary_file_an_old_memwiki_committed_is_untracked_once_it_changes(tmp_path):
    """With the status read passed down, the index is searched for never-committed paths
    only when the read shows one (or HEAD has a sidecar): here it does (the file changed)."""
    remote, _ = seeded_remote(tmp_path, {"memory/cats.md": recall("cats", "Purr.\n")})
    a = clone_to(remote, tmp_path / "a")
    temp = "memory/.cats.md.ab12cd34.tmp"
    write(a.root, temp, "half a fi")
    gitcli(a.root, "add", "-f", temp)
    gitcli(a.root, "commit", "-qm", "an old memwiki committed a killed write's temporary file")
    write(a.root, temp, "half a file, then more")
    write(a.root, "memory/cats.md", recall("cats", "Purr, edited.\n"))
    result = syncmod.sync(a, load())
    assert {(c.status, c.path) for c in result.changes} == {
        ("updated", "memory/cats.md"),
        ("deleted", temp),
    }
    assert temp not in remote_files(remote) and "memory/cats.md" in remote_files(remote)
