"""Teammates' commits holding what this device's git refuses or would not write itself.

Found by the team audit: a commit with a `.GIT/config` path (made with `git mktree`, as
any script or server-side tool can) made every later `memwiki sync` fail with `git
failed: invalid path: '.GIT/config'` (exit 5) on every device, for good.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from test_sync import clone_to, gitcli, head, read, recall, seeded_remote, write

from memwiki.config import load
from memwiki.git import sync as syncmod


def _push_tree_with(remote, tmp_path, extra: list[tuple[str, str, bytes]]) -> None:
    """A teammate's commit on main adding (mode, top-level name, file content) entries under
    a folder of that name, written with git's plumbing (which does not check names)."""
    g = tmp_path / "teammate"
    gitcli(tmp_path, "clone", "-q", str(remote), str(g))

    def plumb(*args: str, stdin: bytes) -> str:
        done = subprocess.run(
            ["git", *args], cwd=g, input=stdin, capture_output=True, check=True, timeout=30
        )
        return done.stdout.decode().strip()

    lines = gitcli(g, "ls-tree", "HEAD")
    for folder, name, data in extra:
        blob = plumb("hash-object", "-w", "--stdin", stdin=data)
        sub = plumb("mktree", stdin=f"100644 blob {blob}\t{name}\n".encode())
        lines += f"040000 tree {sub}\t{folder}\n"
    tree = plumb("mktree", stdin=lines.encode())
    commit = plumb("commit-tree", tree, "-p", "HEAD", "-m", "teammate: odd paths", stdin=b"")
    gitcli(g, "push", "-q", "origin", f"{commit}:refs/heads/main")


@pytest.mark.parametrize("local_edit", [True, False], ids=["merge", "fast-forward"])
def test_a_path_git_refuses_is_left_out_and_sync_goes_on(tmp_path, cli, local_edit):
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    _push_tree_with(remote, tmp_path, [(".GIT", "config", b"[core]\n"), ("GIT~1", "x", b"x\n")])
    if local_edit:
        write(a.root, "memory/mine.md", recall("mine", "Written on A.\n"))
    code, out, err = cli("--wiki", a.root, "sync", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["left_out"] == [".GIT/config", "GIT~1/x"]
    assert result["pushed"]
    top = gitcli(remote, "ls-tree", "--name-only", "main").split()
    assert ".GIT" not in top and "GIT~1" not in top and "memory" in top
    assert not (a.root / ".GIT").exists() and gitcli(a.root, "status", "--porcelain") == ""
    assert "Left out: .GIT/config" in gitcli(remote, "log", "--format=%B", "main")
    # The other device, and later syncs, just get the cleaned branch.
    code, out, err = cli("--wiki", b.root, "sync")
    assert code == 0, err
    assert "left out" not in out
    assert head(a.root) == head(b.root)
    if local_edit:
        assert read(b.root, "memory/mine.md").endswith("Written on A.\n")
    assert syncmod.sync(a, load()).left_out == []


def test_other_odd_entries_sync_and_lint_names_them(tmp_path, cli):
    """Guard: a gitlink, a symlink out of the wiki, an executable note, two names differing
    only in case, a backslash and a trailing space sync on Linux; lint names the bad ones."""
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a = clone_to(remote, tmp_path / "a")
    g = tmp_path / "g"
    gitcli(tmp_path, "clone", "-q", str(remote), str(g))
    sha = gitcli(g, "rev-parse", "HEAD").strip()
    gitcli(g, "update-index", "--add", "--cacheinfo", f"160000,{sha},memory/sub")
    (g / "memory/pw.md").symlink_to("/etc/passwd")
    write(g, "memory/run.md", recall("run", "Executable.\n"))
    (g / "memory/run.md").chmod(0o755)
    write(g, "memory/Case.md", recall("case", "Upper.\n"))
    write(g, "memory/case.md", recall("case", "Lower.\n"))
    write(g, "memory/a\\b.md", recall("a-b", "Backslash.\n"))
    write(g, "memory/t .md", recall("t", "Trailing space.\n"))
    gitcli(g, "add", "memory")
    gitcli(g, "commit", "-q", "-m", "teammate: odd entries")
    gitcli(g, "push", "-q", "origin", "main")
    code, out, err = cli("--wiki", a.root, "sync")
    assert code == 0, err
    assert (a.root / "memory/pw.md").is_symlink() and read(a.root, "memory/Case.md")
    code, out, _ = cli("--wiki", a.root, "lint")
    assert code == 1
    assert "memory/pw.md:1: symlink to /etc/passwd, outside the wiki" in out
