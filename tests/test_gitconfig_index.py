"""Index formats a developer's git configuration makes git write, read by libgit2."""

from __future__ import annotations

import json
import os

import pytest
from gitconfig_home import write_gitconfig


def test_a_split_index_git_wrote_is_one_line_and_memwiki_keeps_it_from_coming_back(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: with core.splitIndex = true in ~/.gitconfig, the first `git status` in the
    wiki split its index; every memwiki write then failed with libgit2's "unsupported
    mandatory extension: 'link'" and nothing about what to do."""
    write_gitconfig("[core]\n\tsplitIndex = true\n")
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    assert git(root, "config", "--local", "core.splitIndex") == "false\n"  # set by init
    clone = tmp_path / "clone"
    assert run_memwiki("clone", root, clone).returncode == 0
    assert git(clone, "config", "--local", "core.splitIndex") == "false\n"  # and by clone
    git(root, "config", "--local", "--unset", "core.splitIndex")  # a wiki an older init made
    git(root, "update-index", "--split-index")
    done = run_memwiki("-w", root, "add", "memory", "split", "-d", "d", input="body")
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "split" in done.stderr and "update-index --no-split-index" in done.stderr
    assert not (root / "memory" / "split.md").exists()  # refused before writing: run again
    doctor = run_memwiki("-w", root, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert "update-index --no-split-index" in checks["git"]["detail"]
    git(root, "update-index", "--no-split-index")
    git(root, "status")  # would split it again but for the wiki's own core.splitIndex
    done = run_memwiki("-w", root, "add", "memory", "split", "-d", "d", input="body")
    assert done.returncode == 0, done.stderr
    assert "memory/split.md" in git(root, "ls-files")
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_wiki_another_user_owns_says_so_and_safe_directory_opens_it(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: a wiki owned by another uid (a copy from another account, a shared folder)
    was called "not a git repository"; git's own safe.directory is the way in."""
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    tmp_path.chmod(0o755)
    for path in [root, *root.rglob("*")]:
        os.lchown(path, 65534, 65534)
    done = run_memwiki("-w", root, "add", "memory", "owned", "-d", "d", input="body")
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "another user owns" in done.stderr and "not a git repository" not in done.stderr
    assert f"safe.directory {root}" in done.stderr
    write_gitconfig(f"[safe]\n\tdirectory = {root}\n")
    done = run_memwiki("-w", root, "add", "memory", "owned", "-d", "d", input="body")
    assert done.returncode == 0, done.stderr
    assert "memory/owned.md" in git(root, "ls-files")
