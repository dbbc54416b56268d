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
        env=env, capture_output=True, text=True, timeout=60, cwd=home,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("venv", "cache"),
    [  # as uv 0.9 and pipx 1.8 lay them out
        (".cache/uv/archive-v0/fmru85QCb0mC", ".cache/uv/archive-v0/fmru85QCb0mC"),
        (".cache/pipx/be26f46efcac652", ".cache/pipx/be26f46efcac652"),
    ],
)
def test_install_from_a_cached_run_warns_that_the_path_will_go(tmp_path, venv, cache):
    """Bug: `uvx memwiki install --host claude-code` wrote
    ~/.cache/uv/archive-v0/<hash>/bin/memwiki into settings.json without a word; the next
    `uv cache clean` (or a uvx of another version) left a hook that fails on every prompt.
    The same for `pipx run` (~/.cache/pipx/<hash>, gone after 14 days unused)."""
    home = tmp_path / "home"
    done = install_from(home / venv, home)
    assert done.returncode == 0, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("memwiki: ") and f"the cache {home / cache} " in line, line
    assert "uv tool install" in line, line
    assert str(home / venv / "bin" / "memwiki") in (home / ".claude" / "settings.json").read_text()


@pytest.mark.parametrize(
    "venv", [".venvs/memwiki", ".local/share/uv/tools/memwiki", ".local/share/pipx/venvs/memwiki"]
)
def test_an_installed_memwiki_says_nothing_on_stderr(tmp_path, venv):
    """A virtualenv, `uv tool install`, `pipx install`: their venvs hold a CACHEDIR.TAG too,
    and stay."""
    home = tmp_path / "home"
    (home / venv).mkdir(parents=True)
    (home / venv / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    done = install_from(home / venv, home)
    assert done.returncode == 0 and done.stderr == "", done.stderr
