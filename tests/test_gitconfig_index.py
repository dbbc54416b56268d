"""Index formats a developer's git configuration makes git write, read by libgit2."""

from __future__ import annotations

import json
import os
import shutil

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


def test_clone_names_its_remote_origin_and_asks_for_files_refs_whatever_the_config(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: with clone.defaultRemoteName = upstream in ~/.gitconfig, `memwiki clone` made
    a wiki whose every `memwiki sync` failed with "no remote 'origin'". The clone also asks
    for files refs: init.defaultRefFormat = reftable (git 2.45+) makes a repository libgit2
    cannot open (seen here through a git that logs its arguments)."""
    write_gitconfig("[clone]\n\tdefaultRemoteName = upstream\n")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    first = tmp_path / "first"
    assert run_memwiki("init", first, "--remote", remote).returncode == 0
    assert run_memwiki("-w", first, "sync").returncode == 0
    bindir, log = tmp_path / "bin", tmp_path / "git-args"
    bindir.mkdir()
    real = shutil.which("git")
    (bindir / "git").write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}" "$@"\n')
    (bindir / "git").chmod(0o755)
    path = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    other = tmp_path / "other"
    done = run_memwiki("clone", remote, other, env={"PATH": path})
    assert done.returncode == 0, done.stderr
    assert "-c init.defaultRefFormat=files clone --origin origin" in log.read_text()
    assert git(other, "remote").split() == ["origin"]
    done = run_memwiki("-w", other, "add", "memory", "n", "-d", "d", input="b")
    assert done.returncode == 0, done.stderr
    done = run_memwiki("-w", other, "sync", env={"PATH": path})
    assert done.returncode == 0, done.stderr
    assert git(remote, "rev-parse", "main") == git(other, "rev-parse", "HEAD")


@pytest.mark.parametrize(
    ("extension", "said"),
    [
        ("refStorage = reftable", "refs migrate --ref-format=files"),
        ("objectFormat = sha256", "SHA-256"),
        ("madeUpByALaterGit = true", "extensions.madeupbyalatergit"),
    ],
)
def test_a_repository_format_libgit2_cannot_read_is_named(
    tmp_path, run_memwiki, extension, said
) -> None:
    """Bug: a wiki git made with reftable refs or SHA-256 objects (init.defaultRefFormat,
    a later git's defaults) was called "not a git repository"."""
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    config = root / ".git" / "config"
    text = config.read_text().replace("repositoryformatversion = 0", "repositoryformatversion = 1")
    config.write_text(text + f"[extensions]\n\t{extension}\n")
    done = run_memwiki("-w", root, "add", "memory", "n", "-d", "d", input="b")
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert said in done.stderr and "not a git repository" not in done.stderr
