"""memwiki's commands in agents' files work in a login shell and from cron (issue 10 item 3).

Codex and Hermes run tools through `bash -l`, whose /etc/profile resets PATH, and cron
starts with a minimal PATH: a bare `memwiki` from a virtualenv is "command not found".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from memwiki.config import load
from memwiki.hosts import executable
from memwiki.hosts.integrate import claude_settings, inject, schedule
from memwiki.hosts.integrate.block import render_block
from memwiki.hosts.integrate.detect import host_status
from memwiki.hosts.integrate.texts import instruction_block

VENV_MEMWIKI = Path(sys.executable).parent / "memwiki"
LOGIN_ENV_PATH = "/usr/bin:/bin"  # what a login shell or cron has: not the virtualenv


def cfg_for(tmp_path: Path, **env: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environ = {"HOME": str(home), "PATH": LOGIN_ENV_PATH, **env}
    return load(options={"wiki": str(tmp_path / "wiki")}, environ=environ)


def block_command(text: str) -> str:
    match = re.search(r"^    (.*) retrieve ", text, re.M)
    assert match, text
    return match.group(1)


def test_the_block_names_the_absolute_executable_and_runs_in_a_login_shell(tmp_path):
    cfg = cfg_for(tmp_path)
    (cfg.home / ".codex").mkdir()
    inject.install("codex", cfg)
    text = (cfg.home / ".codex" / "AGENTS.md").read_text()
    exe = block_command(text)
    assert exe == str(VENV_MEMWIKI)
    env = {"HOME": str(cfg.home), "PATH": LOGIN_ENV_PATH}
    bare = subprocess.run(
        ["bash", "-lc", "memwiki --version"], env=env, capture_output=True, timeout=60
    )
    assert bare.returncode == 127  # the defect: a login shell does not find the venv
    ok = subprocess.run(
        ["bash", "-lc", f"{exe} --version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0 and ok.stdout.strip()


def test_install_refreshes_an_old_path_in_block_and_hook_in_place(tmp_path):
    cfg = cfg_for(tmp_path)
    claude = cfg.home / ".claude"
    claude.mkdir()
    old = "/gone/venv/bin/memwiki"
    settings = {
        "env": {"A": "1"},
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": f"{old} hook claude-code"}]}
            ]
        },
    }
    (claude / "settings.json").write_text(json.dumps(settings, indent=4) + "\n")
    # The block as an install from that gone virtualenv wrote it.
    written_block = render_block(instruction_block(old))
    (claude / "CLAUDE.md").write_text(f"mine\n\n{written_block}\n")
    status = host_status("claude-code", cfg)
    assert any(old in n and "no longer exists" in n for n in status.notes), status.notes
    inject.install("claude-code", cfg)
    data = json.loads((claude / "settings.json").read_text())
    [cmd] = claude_settings.hook_commands(data)
    assert cmd == f"{VENV_MEMWIKI} hook claude-code"
    assert data["env"] == {"A": "1"} and (claude / "settings.json").read_text().startswith(
        "{\n    "
    )
    assert old not in (claude / "CLAUDE.md").read_text()
    assert not any("no longer exists" in n for n in host_status("claude-code", cfg).notes)


def test_hook_command_recognised_whatever_the_path():
    assert claude_settings.is_hook_command("memwiki hook claude-code")
    assert claude_settings.is_hook_command("'/a b/memwiki' hook claude-code")
    assert not claude_settings.is_hook_command("/x/notmemwiki hook claude-code")
    assert not claude_settings.is_hook_command("memwiki hook claude-code --extra")
    assert not claude_settings.is_hook_command("memwiki 'unterminated")


def test_written_paths_finds_quoted_and_bare_paths():
    text = "run `/v/bin/memwiki retrieve` or '/a b/memwiki' bridge; Bash(/c/memwiki:*) memwiki"
    assert executable.written_paths(text) == ["/v/bin/memwiki", "/a b/memwiki", "/c/memwiki"]


def test_schedule_files_use_absolute_paths_and_the_allowed_tools_pattern_matches(tmp_path):
    bindir = tmp_path / "clientbin"
    bindir.mkdir()
    claude = bindir / "claude"
    claude.write_text("#!/bin/sh\n")
    claude.chmod(0o755)
    cfg = cfg_for(tmp_path, PATH=f"{bindir}:{LOGIN_ENV_PATH}")
    command = schedule.headless_command("claude-code", cfg)
    assert command.startswith(f"{claude} -p ")
    assert f"'Bash({VENV_MEMWIKI}:*)'" in command
    prompt = schedule.task_prompt("claude-code", executable.memwiki_command())
    assert f"`{VENV_MEMWIKI} bridge prepare --host claude-code --json`" in prompt
    # Every tool command the prompt asks for starts with the path the pattern allows.
    for cmd in re.findall(r"`([^`]*bridge [a-z]+ --host claude-code --json)`", prompt):
        assert cmd.startswith(f"{VENV_MEMWIKI} ")


def test_codex_and_openclaw_schedule_flags(tmp_path):
    cfg = cfg_for(tmp_path)
    codex = schedule.headless_command("codex", cfg)
    assert "--full-auto" not in codex  # gone from Codex CLI 0.171
    assert "--sandbox danger-full-access" in codex  # workspace-write makes .git read-only
    claw = schedule.headless_command("openclaw", cfg)
    assert " --local " in claw  # no gateway: the tools get the wrapper's env and directory
    assert '--session-id "memwiki-bridge-$(date' in claw  # one session per run


def test_detect_prints_the_client_version_and_whether_e2e_passed_with_it(tmp_path):
    from memwiki.hosts.integrate.detect import tested_versions

    bindir = tmp_path / "clientbin"
    bindir.mkdir()
    claude = bindir / "claude"
    passed = tested_versions()["claude-code"]
    assert passed
    for version, ok in ((passed[0], True), ("99.0.1", False)):
        claude.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
        claude.chmod(0o755)
        cfg = cfg_for(tmp_path, PATH=f"{bindir}:{LOGIN_ENV_PATH}")
        st = host_status("claude-code", cfg)
        assert st.version == version and st.version_tested is ok
        assert any("drifted" in n for n in st.notes) is (not ok)
    assert set(tested_versions()) >= {"claude-code", "codex", "openclaw", "hermes"}


def test_version_parsing_of_each_clients_output():
    from memwiki.hosts.integrate.detect import _VERSION

    outputs = {
        "2.1.197 (Claude Code)": "2.1.197",
        "codex-cli 0.171.0": "0.171.0",
        "OpenClaw 2026.9.6 (abc1234)": "2026.9.6",
        "Hermes Agent v0.19.0 (2026.7.20)\nInstall directory: /x": "0.19.0",
    }
    for text, version in outputs.items():
        assert _VERSION.search(text).group(1) == version
