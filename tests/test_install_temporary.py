"""`uvx memwiki install --host H` (or `pipx run`): memwiki runs from a cache that is
emptied later, and install writes that path into the agents' files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_install_gone import venv_install


def install_from(venv: Path, home: Path) -> subprocess.CompletedProcess:
    """`memwiki install --host claude-code` run by the memwiki in venv, HOME=home."""
    python = venv_install(venv)
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PATH="/usr/bin:/bin")
    return subprocess.run(
        [str(python), "-m", "memwiki", "install", "--host", "claude-code"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("cache", "named"),
    [(".cache/uv/archive-v0/fmru85QCb0mC", "uvx"), (".local/share/pipx/.cache/0a1b2c", "pipx run")],
)
def test_install_from_a_cached_run_warns_that_the_path_will_go(tmp_path, cache, named):
    """Bug: `uvx memwiki install --host claude-code` wrote
    ~/.cache/uv/archive-v0/<hash>/bin/memwiki into settings.json without a word; the next
    `uv cache clean` (or a uvx of another version) left a hook that fails on every prompt."""
    home = tmp_path / "home"
    done = install_from(home / cache, home)
    assert done.returncode == 0, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("memwiki: ") and named in line and "uv tool install" in line, line
    assert str(home / cache / "bin" / "memwiki") in (home / ".claude" / "settings.json").read_text()


def test_install_from_a_virtualenv_says_nothing_on_stderr(tmp_path):
    home = tmp_path / "home"
    done = install_from(home / ".venvs" / "memwiki", home)
    assert done.returncode == 0 and done.stderr == "", done.stderr
