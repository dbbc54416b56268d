"""The identity memwiki commits with, read from the developer's own git configuration."""

from __future__ import annotations

import os
from pathlib import Path

from gitconfig_home import libgit2_reads_home, write_gitconfig


def test_a_work_identity_chosen_by_the_remote_url_is_the_one_memwiki_commits_with(
    tmp_path, run_memwiki, git, monkeypatch
) -> None:
    """Bug: `[includeIf "hasconfig:remote.*.url:..."]` (git 2.36+) is skipped by libgit2:
    memwiki committed to a work wiki with the personal email git would not use there."""
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)  # the test suite's identity: git would prefer it
    work = Path(os.environ["HOME"]) / "work.gitconfig"
    work.write_text("[user]\n\temail = ada@corp.example\n")
    write_gitconfig(
        "[user]\n\tname = Ada\n\temail = ada@home.example\n"
        '[includeIf "hasconfig:remote.*.url:https://git.corp.example/**"]\n'
        f"\tpath = {work}\n"
    )
    root = tmp_path / "wiki"
    url = "https://git.corp.example/team/wiki.git"
    assert run_memwiki("init", root, "--remote", url).returncode == 0
    done = run_memwiki("-w", root, "add", "memory", "n", "-d", "d", input="body")
    assert done.returncode == 0, done.stderr
    assert git(root, "config", "user.email") == "ada@corp.example\n"
    assert git(root, "log", "-1", "--format=%an <%ae> %cn <%ce>") == (
        "Ada <ada@corp.example> Ada <ada@corp.example>\n"
    )
    home = tmp_path / "home-wiki"  # no such remote: the personal identity, from libgit2
    assert run_memwiki("init", home).returncode == 0
    assert git(home, "log", "-1", "--format=%ae") == "ada@home.example\n"


def test_without_conditional_includes_git_is_not_asked(wiki, monkeypatch) -> None:
    """The common configuration costs no `git` process per commit."""
    import shutil

    import pygit2

    from memwiki.git import identity

    write_gitconfig("[user]\n\tname = Ada\n\temail = ada@home.example\n")
    with libgit2_reads_home():
        repo = pygit2.Repository(str(wiki.root))
        monkeypatch.setattr(shutil, "which", lambda *_: (_ for _ in ()).throw(AssertionError))
        assert identity.git_identity(repo) is None
        assert identity.signature(repo).email == "ada@home.example"
