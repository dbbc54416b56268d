"""Fixtures shared by every test file: isolation from the real user, a wiki, the CLI.

Every test runs with HOME and XDG_CONFIG_HOME inside its own tmp_path and without any
MEMWIKI_* variable, so nothing a developer has configured (or their real ~/memwiki) can
leak into a test or be touched by one.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
}


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    """One prepared-model cache for the whole run: preparing costs 0.4 s and 90 MB each time."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch, model_cache) -> Path:
    """A private HOME, XDG_CONFIG_HOME and XDG_CACHE_HOME, no MEMWIKI_* variables but a
    shared prepared-model cache, a git identity."""
    home = tmp_path_factory.mktemp("home")
    for var in list(os.environ):
        if var.startswith("MEMWIKI_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("MEMWIKI_MODEL_CACHE", str(model_cache))
    # The git CLI must not read the machine's or the developer's git configuration.
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    for var, value in GIT_IDENTITY.items():
        monkeypatch.setenv(var, value)
    return home


@pytest.fixture
def wiki(tmp_path):
    """A freshly initialised wiki in tmp_path/wiki."""
    from memwiki.wiki import Wiki

    w, _ = Wiki.init(tmp_path / "wiki")
    return w


@pytest.fixture
def cli(capsys, monkeypatch) -> Callable[..., tuple[int, str, str]]:
    """Run `memwiki ARGV` in-process: cli(*argv, stdin="") -> (exit_code, stdout, stderr).

    stdin is replaced by the given text (empty by default), so commands that read a piped
    body or payload behave as they would under a shell pipe.
    """
    from memwiki.cli import main

    def run(*argv: str, stdin: str | bytes = "") -> tuple[int, str, str]:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        capsys.readouterr()  # drop anything printed before this call
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _memwiki_command() -> list[str]:
    exe = Path(sys.executable).parent / "memwiki"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("memwiki")
    return [found] if found else [sys.executable, "-m", "memwiki"]


@pytest.fixture
def run_memwiki() -> Callable[..., subprocess.CompletedProcess]:
    """Run the real `memwiki` console script as a subprocess (stdout/stderr as text)."""
    command = _memwiki_command()

    def run(
        *argv: str,
        input: str | bytes | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess:
        # The autouse fixture has already isolated os.environ; the child inherits it.
        full_env = {**os.environ, **(env or {})}
        # `PYTHONPATH=. pytest` names this checkout relative to the runner's directory: made
        # absolute, a child run in another cwd still imports this checkout, not an install.
        if full_env.get("PYTHONPATH"):
            parts = full_env["PYTHONPATH"].split(os.pathsep)
            full_env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(x) for x in parts if x)
        done = subprocess.run(
            [*command, *[str(a) for a in argv]],
            input=input.encode() if isinstance(input, str) else input,
            # Without input the child gets an empty stdin, never the test runner's terminal:
            # `memwiki add` reads a piped body and would otherwise wait for it.
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            cwd=cwd,
            env=full_env,
            timeout=timeout,
        )
        done.stdout = done.stdout.decode("utf-8", "replace")
        done.stderr = done.stderr.decode("utf-8", "replace")
        return done

    return run


@pytest.fixture
def git() -> Callable[..., str]:
    """The git CLI, to cross-check what pygit2 wrote: git(cwd, *args) -> stdout."""

    def run(cwd: Path, *args: str) -> str:
        result = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30
        )
        return result.stdout

    return run


def fake_crontab(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in `crontab` command (its folder, its table file) keeping the table in a
    file: cron is per user, not per HOME, so the real one would edit the developer's own."""
    import stat

    bindir, table = tmp_path / "bin", tmp_path / "crontab.txt"
    bindir.mkdir(exist_ok=True)
    script = bindir / "crontab"
    script.write_text(
        "#!/bin/sh\n"
        f'T="{table}"\n'
        'case "$1" in\n'
        '  -l) [ -f "$T" ] || { echo "no crontab for $USER" >&2; exit 1; }; cat "$T" ;;\n'
        '  -r) rm -f "$T" ;;\n'
        '  -) cat > "$T" ;;\n'
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir, table


@pytest.fixture
def home_memwiki(run_memwiki, tmp_path) -> Callable[..., subprocess.CompletedProcess]:
    """`memwiki ARGS` with HOME (and XDG) in tmp_path/home and a stand-in crontab holding
    nothing; `.home` is that HOME. A traceback on stderr fails the test."""
    home = tmp_path / "home"
    home.mkdir()
    bindir, _ = fake_crontab(tmp_path)

    def run(
        *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess:
        full = {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "PATH": f"{bindir}:/usr/bin:/bin",
            **(env or {}),
        }
        done = run_memwiki(*argv, env=full, cwd=cwd)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    run.home = home  # type: ignore[attr-defined]
    return run
