"""git's repository variables in memwiki's environment: a git hook of a code repository
(GIT_DIR in a worktree's hooks, GIT_INDEX_FILE in all), a dotfiles set-up's GIT_DIR."""

from __future__ import annotations


def test_sync_run_with_another_repositorys_git_dir_pushes_the_wiki_only(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: memwiki's `git fetch`/`git push` inherited GIT_DIR and GIT_WORK_TREE, so a
    sync run from a code worktree's hook (or under a dotfiles GIT_DIR) fetched and pushed
    the code repository: its main went to its own origin, the wiki's stayed unpushed."""
    code_remote, wiki_remote = tmp_path / "code-remote.git", tmp_path / "wiki-remote.git"
    for bare in (code_remote, wiki_remote):
        git(tmp_path, "init", "-q", "--bare", str(bare))
    code = tmp_path / "code"
    git(tmp_path, "init", "-q", "-b", "main", str(code))
    git(code, "commit", "-q", "--allow-empty", "-m", "code work not meant to be pushed")
    git(code, "remote", "add", "origin", str(code_remote))
    root = tmp_path / "wiki"
    assert run_memwiki("init", root, "--remote", wiki_remote).returncode == 0
    done = run_memwiki("-w", root, "add", "memory", "n", "-d", "d", input="body")
    assert done.returncode == 0, done.stderr
    hook_env = {
        "GIT_DIR": str(code / ".git"),
        "GIT_WORK_TREE": str(code),
        "GIT_INDEX_FILE": str(code / ".git" / "index"),
    }
    done = run_memwiki("-w", root, "sync", env=hook_env)
    assert done.returncode == 0, done.stderr
    assert git(wiki_remote, "rev-parse", "main") == git(root, "rev-parse", "HEAD")
    assert git(code_remote, "for-each-ref") == ""  # the code repository was not pushed
    other = tmp_path / "other"
    done = run_memwiki("clone", wiki_remote, other, env=hook_env)
    assert done.returncode == 0, done.stderr
    assert (other / "memory" / "n.md").is_file()
