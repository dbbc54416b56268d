"""The remote's branch renamed (main -> trunk) or deleted, or the remote moved to a new URL.

Found by the team audit: `git fetch` kept a deleted branch's remote-tracking ref, so after
a teammate renamed `main` to `trunk` on the remote, every device's `memwiki sync` pushed
`main` back beside it and merged nothing from `trunk`: memwiki's devices and the people
using git wrote to two branches from then on, each side missing the other's notes.
"""

from __future__ import annotations

import json

from test_sync import bare, clone_to, gitcli, head, recall, seeded_remote, write

from memwiki.config import load
from memwiki.errors import StateError
from memwiki.git import sync as syncmod


def _branches(remote) -> list[str]:
    return gitcli(remote, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()


def test_a_renamed_remote_branch_is_followed_not_pushed_back(tmp_path, cli, monkeypatch):
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    gitcli(remote, "branch", "-m", "main", "trunk")
    gitcli(remote, "symbolic-ref", "HEAD", "refs/heads/trunk")
    monkeypatch.setenv("MEMWIKI_EMBED", "hash")  # doctor's retrieve: no model to load
    code, out, _ = cli("--wiki", a.root, "doctor")
    assert "branch main is gone from it (deleted or renamed)" in out
    assert "the next `memwiki sync` pushes it" not in out
    write(a.root, "memory/from-a.md", recall("from-a", "A, after the rename.\n"))
    code, out, err = cli("--wiki", a.root, "sync", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["upstream"], result["upstream_gone"], result["pushed"]) == (
        "trunk",
        "main",
        True,
    )
    assert _branches(remote) == ["trunk"]
    assert gitcli(a.root, "rev-parse", "--abbrev-ref", "@{u}").strip() == "origin/trunk"
    write(b.root, "memory/from-b.md", recall("from-b", "B, after the rename.\n"))
    code, out, err = cli("--wiki", b.root, "sync")
    assert code == 0, err
    assert "upstream  origin/main is gone: now syncing with origin/trunk" in out
    assert "pushed    main to origin/trunk" in out
    assert (b.root / "memory/from-a.md").is_file()
    syncmod.sync(a, load())
    assert _branches(remote) == ["trunk"]
    assert head(a.root) == head(b.root) == gitcli(remote, "rev-parse", "trunk").strip()
    # Later syncs say nothing about it any more.
    assert syncmod.sync(a, load()).upstream_gone is None


def test_a_deleted_remote_branch_is_not_pushed_back_until_asked(tmp_path, cli):
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a = clone_to(remote, tmp_path / "a")
    gitcli(remote, "update-ref", "-d", "refs/heads/main")  # deleted (a leak being cleaned?)
    write(a.root, "memory/mine.md", recall("mine", "Written here.\n"))
    before = head(a.root)
    for _ in range(2):  # the refusal holds for the next (scheduled) sync too
        code, _, err = cli("--wiki", a.root, "sync")
        assert code == StateError.exit_code
        assert err.startswith("memwiki: error: origin has no branch main any more")
        assert "git branch --unset-upstream" in err and err.count("\n") == 1
        assert _branches(remote) == [] and head(a.root) == before
        assert (a.root / "memory/mine.md").is_file()
    gitcli(a.root, "branch", "--unset-upstream")
    result = syncmod.sync(a, load())
    assert result.pushed and gitcli(remote, "rev-parse", "main").strip() == head(a.root)


def test_a_deleted_branch_with_two_candidates_names_them(tmp_path):
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a = clone_to(remote, tmp_path / "a")
    gitcli(remote, "branch", "trunk", "main")
    gitcli(remote, "branch", "backup", "main")
    gitcli(remote, "update-ref", "-d", "refs/heads/main")
    try:
        syncmod.sync(a, load())
    except StateError as exc:
        assert "origin has no branch main any more (it has backup, trunk)" in str(exc)
    else:
        raise AssertionError("sync chose a branch")
    gitcli(a.root, "branch", "--set-upstream-to", "origin/trunk")
    write(a.root, "memory/mine.md", recall("mine", "Written here.\n"))
    assert syncmod.sync(a, load()).pushed
    assert gitcli(remote, "rev-parse", "trunk").strip() == head(a.root)
    assert _branches(remote) == ["backup", "trunk"]


def test_a_new_empty_remote_url_gets_the_wiki(tmp_path):
    """`memwiki remote add` of a new URL: what was known of the old remote is forgotten."""
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a = clone_to(remote, tmp_path / "a")
    moved = bare(tmp_path, "moved.git")
    syncmod.add_remote(a, str(moved))
    result = syncmod.sync(a, load())
    assert result.pushed and result.upstream_gone is None
    assert gitcli(moved, "rev-parse", "main").strip() == head(a.root)
