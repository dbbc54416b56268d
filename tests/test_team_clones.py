"""A teammate's device cloned with `--filter=blob:none`, `--depth 1` or `--single-branch`.

Found by the team audit: in a partial clone (`git clone --filter=blob:none`), whose file
contents git fetches only when it needs them, libgit2 cannot fetch a missing blob: every
`memwiki sync` that had to merge failed with `git failed: failed to insert entry: invalid
object specified - base.md` (exit 5), sync after sync, and `restore` with `git failed:
'<sha>'`.
"""

from __future__ import annotations

import subprocess

import pytest
from test_sync import gitcli, head, read, recall, seeded_remote, write

from memwiki.config import load
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki


def _missing(root) -> int:
    listed = gitcli(root, "rev-list", "--objects", "--all", "--missing=print")
    return sum(1 for line in listed.splitlines() if line.startswith("?"))


def _remote_with_history(tmp_path):
    remote, seed = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Version 1.\n")})
    gitcli(remote, "config", "uploadpack.allowFilter", "true")
    write(seed.root, "memory/base.md", recall("base", "Version 2.\n"))
    syncmod.sync(seed, load())
    return remote, seed


def _git_clone(remote, path, *options: str) -> Wiki:
    subprocess.run(
        ["git", "clone", "-q", *options, f"file://{remote}", str(path)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return Wiki.open(path)


def test_a_partial_clone_syncs_merges_and_restores(tmp_path, cli):
    remote, seed = _remote_with_history(tmp_path)
    p = _git_clone(remote, tmp_path / "p", "--filter=blob:none")
    assert _missing(p.root) > 0
    write(seed.root, "memory/base.md", recall("base", "Version 3, from the seed.\n"))
    syncmod.sync(seed, load())
    write(p.root, "memory/mine.md", recall("mine", "Written on the partial clone.\n"))
    code, out, err = cli("--wiki", p.root, "sync")
    assert code == 0, err
    assert "merged    merge commit" in out and "pushed    main to origin" in out
    assert _missing(p.root) == 0
    assert "partialclonefilter" not in gitcli(p.root, "config", "--local", "--list")
    assert read(p.root, "memory/base.md").endswith("Version 3, from the seed.\n")
    code, out, err = cli("--wiki", p.root, "restore", "memory/base", "--rev", "HEAD~3")
    assert code == 0, err
    assert read(p.root, "memory/base.md").endswith("Version 1.\n")
    syncmod.sync(p, load())
    syncmod.sync(seed, load())
    assert head(seed.root) == head(p.root)


@pytest.mark.parametrize("options", [("--depth", "1"), ("--single-branch",)])
def test_shallow_and_single_branch_clones_sync(tmp_path, cli, options):
    """Guard: both merge; restore in a shallow clone says how to get the history."""
    remote, seed = _remote_with_history(tmp_path)
    c = _git_clone(remote, tmp_path / "c", *options)
    code, _, err = cli("--wiki", c.root, "restore", "memory/base")
    if options[0] == "--depth":
        assert code != 0 and "git fetch --unshallow" in err and "Traceback" not in err
    else:
        assert code == 0, err
    write(seed.root, "memory/base.md", recall("base", "Version 3, from the seed.\n"))
    syncmod.sync(seed, load())
    write(c.root, "memory/mine.md", recall("mine", "Written on the clone.\n"))
    code, out, err = cli("--wiki", c.root, "sync")
    assert code == 0, err
    assert (c.root / "memory/mine.md").is_file() and (seed.root / "memory/base.md").is_file()
    syncmod.sync(seed, load())
    assert head(seed.root) == head(c.root)
