"""Messages a new user met while following the README and docs/*.md literally.

Each test pins a line that once left the user guessing: what to do next, or where a
command acted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki.wiki import Wiki

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
CODEX_ROLLOUTS = REPO / "tests" / "fixtures" / "hosts" / "real" / "codex-0.171.0" / ".codex"


def test_schedule_without_cron_says_what_to_do(cli, isolated_env, tmp_path, monkeypatch):
    """Bug: on a machine without cron, `schedule --install` said only "the crontab command is
    not installed" (exit 3), with no way forward; docs/hosts.md's Install step stopped there."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out, err = cli("schedule", "--host", "codex", "--install")
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "memwiki: error: the crontab command is not installed: install cron"
    )
    assert "`memwiki bridge prepare --host codex`" in err
    assert "`memwiki bridge commit --host codex`" in err
    # Nothing was written: the wrapper and prompt come only with a crontab to run them.
    assert not (isolated_env / ".config" / "memwiki" / "bridge").exists()


def test_hosts_detect_counts_one_session_in_the_singular(cli, isolated_env):
    shutil.copytree(CODEX_ROLLOUTS, isolated_env / ".codex")
    code, out, err = cli("hosts", "detect")
    assert code == 0, err
    codex = next(line for line in out.splitlines() if line.startswith("codex "))
    assert f"(1 session in {isolated_env / '.codex'})" in codex, codex


@pytest.mark.skipif(
    not (VENV_BIN / "pre-commit").exists(), reason="pre-commit is not installed beside this Python"
)
def test_hooks_install_names_the_wiki_it_acted_on(cli, tmp_path, monkeypatch):
    """Bug: `memwiki hooks install` run inside a second wiki installed the hooks into the
    configured one (~/memwiki: commands never go by the current directory) and printed only
    "pre-commit hooks installed", so nothing told the user it had gone elsewhere."""
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    configured, _ = Wiki.init(tmp_path / "configured")
    other, _ = Wiki.init(tmp_path / "other")
    monkeypatch.setenv("MEMWIKI_DIR", str(configured.root))
    monkeypatch.chdir(other.root)
    code, out, err = cli("hooks", "install")
    assert code == 0, err
    assert (
        out == f"pre-commit hooks installed in {configured.root}: memwiki-lint, memwiki-reindex\n"
    )
    assert (configured.root / ".git" / "hooks" / "pre-commit").exists()
    assert not (other.root / ".git" / "hooks" / "pre-commit").exists()


def test_the_readme_quick_start_prints_what_the_readme_shows(isolated_env):
    """The README's first commands, run as a new user types them (the install lines left
    out: this environment is installed), end with the retrieve block the README shows."""
    quick = (REPO / "README.md").read_text(encoding="utf-8").split("## Quick start", 1)[1]
    script, shown = re.findall(r"```sh\n(.*?)```\n\n```\n(.*?)```", quick, re.S)[0]
    typed = [ln for ln in script.splitlines() if not ln.startswith(("python3 -m venv", "pip "))]
    assert typed[0].startswith("memwiki init ~/memwiki"), typed
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if env.get("PYTHONPATH"):  # this checkout, not the installed copy, from any directory
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep)
        )
    done = subprocess.run(
        ["bash", "-e", "-c", "\n".join(typed)],
        cwd=isolated_env,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(shown), done.stdout


def test_schedule_warns_when_the_agent_is_not_on_path(cli, isolated_env, tmp_path, monkeypatch):
    """Bug: `schedule --host claude-code --install` on a machine without `claude` installed
    the entry silently; every hourly run then failed with "claude: not found" in its log."""
    from conftest import fake_crontab

    bindir, table = fake_crontab(tmp_path)
    if shutil.which("claude", path="/usr/bin:/bin"):
        pytest.skip("this machine has claude installed")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    code, out, err = cli("schedule", "--host", "claude-code", "--install")
    assert code == 0 and out.startswith("crontab installed: ")
    assert table.exists()
    assert err == (
        "memwiki: claude is not on PATH, so the hourly run cannot start it: install it (or run "
        "this where `claude` works), then `memwiki schedule --host claude-code --install` again\n"
    )
    claude = bindir / "claude"
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    code, out, err = cli("schedule", "--host", "claude-code", "--install")
    assert code == 0 and err == ""


def test_the_pre_commit_hint_names_a_wiki_that_is_not_the_configured_one(
    cli, tmp_path, monkeypatch
):
    """Bug: `memwiki init --hooks wiki2` without pre-commit (docs/obsidian.md) said "run `pip
    install pre-commit`, then `memwiki hooks install`"; typed as shown, that set up the
    configured wiki, not wiki2."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no pre-commit anywhere
    configured = tmp_path / "configured"
    monkeypatch.setenv("MEMWIKI_DIR", str(configured))
    other = tmp_path / "wiki2"
    code, _, err = cli("init", "--hooks", other)
    assert code == 0
    assert err == (
        "memwiki: pre-commit is not installed, so the hooks are not active: run `pip install "
        f"pre-commit`, then `memwiki --wiki {other} hooks install`\n"
    )
    code, _, err = cli("init", "--hooks", configured)
    assert code == 0 and err.endswith("then `memwiki hooks install`\n")
