"""A teammate force-pushes a rewritten history: the next sync elsewhere keeps that device's
notes and never pushes the dropped commits (a removed secret) back.

Found by the team audit: after a reset of the remote branch to an older commit, or a
`git filter-branch` that removed a leaked secret from every commit, the other device's
`memwiki sync` merged (or fast-forward-pushed) its old history into the new one and the
secret was on the remote again, silently, in the tree and in history.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from test_sync import clone_to, gitcli, head, read, recall, seeded_remote, write

from memwiki.config import load
from memwiki.errors import StateError
from memwiki.git import sync as syncmod

SECRET = "password=hunter2-LEAKED"
LEAK = "memory/leak.md"


def _everything(remote) -> str:
    """Every blob of every commit the remote holds, as text (where a secret could be)."""
    revs = gitcli(remote, "rev-list", "--all").split()
    return "".join(gitcli(remote, "grep", "-I", "-h", "-e", ".", r) for r in revs if r)


def _two_devices(tmp_path):
    """a and b, both synced with a remote holding memory/base.md and the leak; b has one
    local commit of its own (memory/b-note.md), not pushed yet."""
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    write(a.root, LEAK, recall("leak", f"{SECRET}\n"))
    assert syncmod.sync(a, load()).pushed
    syncmod.sync(b, load())
    assert SECRET in read(b.root, LEAK)
    write(b.root, "memory/b-note.md", recall("b-note", "B's own work.\n"))
    b.commit("b: a note of its own\n\nMemwiki-Sessions: s-b-1\n")
    return remote, a, b


def _force_push(root):
    gitcli(root, "push", "-q", "--force", "origin", "main")


def _removed_everywhere(root):
    """`git filter-branch` removing LEAK from every commit, the root included."""
    env = {**os.environ, "FILTER_BRANCH_SQUELCH_WARNING": "1"}
    subprocess.run(
        ["git", "filter-branch", "-f", "--index-filter",
         f"git rm -q --cached --ignore-unmatch {LEAK}", "--", "--all"],
        cwd=root, env=env, capture_output=True, check=True, timeout=60,
    )  # fmt: skip


def test_a_reset_remote_keeps_local_notes_and_never_gets_the_secret_back(tmp_path):
    remote, a, b = _two_devices(tmp_path)
    gitcli(a.root, "reset", "-q", "--hard", "HEAD~1")  # the commit that added the leak
    _force_push(a.root)
    result = syncmod.sync(b, load())
    assert result.merged == "rewritten" and result.pushed
    assert SECRET not in _everything(remote)
    assert not (b.root / LEAK).exists()
    assert read(b.root, "memory/b-note.md").endswith("B's own work.\n")
    assert gitcli(b.root, "status", "--porcelain") == ""
    # One parent: the remote's branch; the message says what happened and keeps the trailer.
    assert (
        gitcli(b.root, "rev-parse", "HEAD^").strip() == gitcli(a.root, "rev-parse", "HEAD").strip()
    )
    message = gitcli(b.root, "log", "-1", "--format=%B")
    assert "origin/main was rewritten" in message and "b: a note of its own" in message
    assert "Memwiki-Sessions: s-b-1" in message
    # a gets b's note by a fast-forward; both sides agree and the next syncs do nothing.
    assert syncmod.sync(a, load()).merged == "fast-forward"
    assert head(a.root) == head(b.root) == gitcli(remote, "rev-parse", "main").strip()
    assert syncmod.sync(b, load()).merged == "none"


def test_history_rewritten_from_the_root_after_a_fetch_by_hand(tmp_path, cli):
    """The tracking branch already moved (a `git fetch` by hand): its reflog says what was synced."""
    remote, a, b = _two_devices(tmp_path)
    write(a.root, "memory/a-note.md", recall("a-note", "A's later work.\n"))
    syncmod.sync(a, load())
    b_head = head(b.root)
    _removed_everywhere(a.root)
    _force_push(a.root)
    gitcli(b.root, "fetch", "-q", "origin")
    code, out, err = cli("--wiki", b.root, "sync")
    assert code == 0, err
    assert "merged    the remote's history was rewritten" in out
    assert SECRET not in _everything(remote)
    for rel in ("memory/base.md", "memory/a-note.md", "memory/b-note.md"):
        assert (b.root / rel).is_file(), rel
    assert not (b.root / LEAK).exists()
    # The old history is still in b's reflog (nothing of b's is lost), never pushed.
    assert b_head in gitcli(b.root, "reflog", "--format=%H", "main")
    on_remote = subprocess.run(["git", "cat-file", "-e", b_head], cwd=remote, timeout=30)
    assert on_remote.returncode != 0


def test_a_note_edited_here_that_the_rewrite_removed_is_kept(tmp_path):
    """Keeping this device's work wins: an edit of the removed file stays (and is pushed)."""
    remote, a, b = _two_devices(tmp_path)
    write(b.root, LEAK, recall("leak", "Rotated; the new one is in the vault.\n"))
    gitcli(a.root, "reset", "-q", "--hard", "HEAD~1")
    _force_push(a.root)
    result = syncmod.sync(b, load())
    assert result.merged == "rewritten"
    assert read(b.root, LEAK).endswith("Rotated; the new one is in the vault.\n")
    assert [(c.path, c.kind, c.kept) for c in result.conflicts] == [
        (LEAK, "deleted-by-theirs", "ours")
    ]
    assert SECRET not in _everything(remote)


def test_an_amended_commit_is_not_merged_twice(tmp_path):
    remote, a, b = _two_devices(tmp_path)
    write(a.root, LEAK, recall("leak", "Nothing secret here.\n"))
    gitcli(a.root, "commit", "-q", "-a", "--amend", "-m", "memwiki: a note, amended")
    _force_push(a.root)
    syncmod.sync(b, load())
    assert read(b.root, LEAK).endswith("Nothing secret here.\n")
    assert (b.root / "memory/b-note.md").is_file()
    assert SECRET not in _everything(remote)
    assert gitcli(remote, "rev-list", "--merges", "main") == ""


def test_a_remote_replaced_by_an_unrelated_repository_is_refused(tmp_path, cli):
    remote, a, b = _two_devices(tmp_path)
    other = tmp_path / "other"
    gitcli(tmp_path, "init", "-q", "-b", "main", str(other))
    write(other, "memory/other.md", recall("other", "Another team's wiki.\n"))
    gitcli(other, "add", "-A")
    gitcli(other, "commit", "-q", "-m", "another team's wiki")
    gitcli(other, "push", "-q", "--force", str(remote), "HEAD:main")
    before, remote_before = head(b.root), gitcli(remote, "rev-parse", "main")
    code, _, err = cli("--wiki", b.root, "sync")
    assert code == StateError.exit_code
    assert "origin/main has no history in common with what this device synced last" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert head(b.root) == before and gitcli(remote, "rev-parse", "main") == remote_before
    assert read(b.root, LEAK) and (b.root / "memory/b-note.md").is_file()
    # Merging the two on purpose, as the message says, then syncing, works.
    gitcli(b.root, "merge", "-q", "--no-edit", "--allow-unrelated-histories", "origin/main")
    result = syncmod.sync(b, load())
    assert result.pushed and (b.root / "memory/other.md").is_file()


class _Killed(BaseException):
    """Stands for a kill -9: not a MemwikiError, so sync keeps its journals."""


def test_a_sync_killed_while_it_replays_finishes_next_time(tmp_path):
    remote, a, b = _two_devices(tmp_path)
    gitcli(a.root, "reset", "-q", "--hard", "HEAD~1")
    _force_push(a.root)

    def kill(step):
        if step == "checked-out":
            raise _Killed

    with pytest.raises(_Killed):
        syncmod.sync(b, load(), _checkpoint=kill)
    assert (b.sidecar / "update.json").exists()
    result = syncmod.sync(b, load())
    assert result.pushed
    assert SECRET not in _everything(remote)
    assert read(b.root, "memory/b-note.md").endswith("B's own work.\n")
    assert not (b.root / LEAK).exists() and gitcli(b.root, "status", "--porcelain") == ""
    assert gitcli(b.root, "rev-parse", "HEAD^").strip() == head(a.root)
