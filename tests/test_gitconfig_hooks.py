"""`memwiki hooks install` under a developer's global core.hooksPath (husky and the like)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from gitconfig_home import write_gitconfig

VENV_BIN = Path(sys.executable).parent
needs_pre_commit = pytest.mark.skipif(
    not (VENV_BIN / "pre-commit").exists() and shutil.which("pre-commit") is None,
    reason="pre-commit is not installed",
)


@needs_pre_commit
def test_a_global_hooks_path_is_named_with_its_file_not_a_hint_that_does_nothing(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: pre-commit's hint `git config --unset-all core.hooksPath` was passed on as the
    reason; run in the wiki it does nothing (the setting is in ~/.gitconfig), and with
    --global it turns off the developer's hooks in every repository."""
    home = Path(os.environ["HOME"])
    config = write_gitconfig(f"[core]\n\thooksPath = {home}/.husky\n")
    path = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    done = run_memwiki("-w", root, "hooks", "install", env={"PATH": path})
    assert done.returncode == 5 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert str(config) in done.stderr and f"{home}/.husky" in done.stderr
    assert "--unset-all" not in done.stderr
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    git(root, "config", "core.hooksPath", "elsewhere")  # the wiki's own: the hint fits
    done = run_memwiki("-w", root, "hooks", "install", env={"PATH": path})
    assert done.returncode == 5
    assert f"git -C {root} config --unset-all core.hooksPath" in done.stderr
