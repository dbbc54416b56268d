"""Instruction files outside the defaults, with the real clients: install writes where they read.

OpenClaw: a workspace set in openclaw.json or moved by an exported OPENCLAW_PROFILE; a
session store set in openclaw.json (mining).

OpenClaw reads AGENTS.md from the default agent's workspace, which `agents.defaults.workspace`
in openclaw.json (JSON5) moves. memwiki's install used to write ~/.openclaw/workspace/AGENTS.md
regardless, so the block never reached the model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .harness import request_text
from .test_hosts import BLOCK_MARK, HOSTS, USER_WORDS, World, _model_requests, _tool_outputs

RULES = "Workspace rules: name every file you touch."


def _install(w, host: str, env: dict | None = None) -> list[dict]:
    """`memwiki install --host HOST --json` in the world (with env, if given): its changes."""
    r = w.sb.memwiki("install", "--host", host, "--json", **({"env": env} if env else {}))
    assert r.rc == 0, r.err
    return r.json()["changes"]


def _what_the_model_saw(w, env: dict | None = None) -> str:
    """Run the real client once on "say hello" (with env, if given); the text of the first
    request it sent the fake model."""
    mark = len(w.sb.requests())
    w.sb.set_script([], "Done.")
    run = w.sb.run(w.p.argv("say hello"), env=env or w.p.env(), cwd=w.sb.project)
    assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
    bodies = _model_requests(w.sb, mark)
    assert bodies, f"{w.host} sent no request to the fake model"
    return request_text(bodies[0])


def test_the_block_goes_into_the_configured_workspace(tmp_path_factory):
    if "openclaw" not in HOSTS:
        pytest.skip("openclaw not selected")
    w = World(tmp_path_factory.mktemp("openclaw-workspace"), "openclaw")
    try:
        home = w.sb.home
        workspace = home / "agent-notes"
        workspace.mkdir()
        (workspace / "AGENTS.md").write_text(f"{RULES}\n")
        config = home / ".openclaw" / "openclaw.json"
        cfg = json.loads(config.read_text())
        cfg["agents"]["defaults"]["workspace"] = "~/agent-notes"
        # As people edit it: a comment and unquoted keys (OpenClaw reads JSON5).
        config.write_text("// my workspace lives in ~/agent-notes\n" + json.dumps(cfg, indent=2))
        [change] = _install(w, "openclaw")
        assert change["path"] == str(workspace / "AGENTS.md"), change
        seen = _what_the_model_saw(w)
        assert RULES in seen, "OpenClaw did not read the configured workspace"
        assert BLOCK_MARK in seen, "the block is not in the workspace OpenClaw reads"
        assert w.sb.memwiki("uninstall", "--host", "openclaw").rc == 0
        assert (workspace / "AGENTS.md").read_text() == f"{RULES}\n"
    finally:
        w.sb.close()


def test_the_block_goes_into_the_workspace_of_an_exported_profile(tmp_path_factory):
    """An exported OPENCLAW_PROFILE moves the default workspace to ~/.openclaw-<name>/workspace
    (state and openclaw.json stay in ~/.openclaw); install wrote ~/.openclaw/workspace."""
    if "openclaw" not in HOSTS:
        pytest.skip("openclaw not selected")
    w = World(tmp_path_factory.mktemp("openclaw-profile"), "openclaw")
    try:
        sb = w.sb
        workspace = sb.home / ".openclaw-work" / "workspace"
        workspace.mkdir(parents=True)
        (workspace / "AGENTS.md").write_text(f"{RULES}\n")
        env = {**w.p.env(), "OPENCLAW_PROFILE": "work"}
        [change] = _install(w, "openclaw", env)
        assert change["path"] == str(workspace / "AGENTS.md"), change
        seen = _what_the_model_saw(w, env)
        assert RULES in seen, "OpenClaw did not read the profile's workspace"
        assert BLOCK_MARK in seen, "the block is not in the workspace OpenClaw reads"
    finally:
        w.sb.close()


def test_bridge_prepare_finds_a_session_store_openclaw_json_moved(tmp_path_factory):
    """OpenClaw writes an agent's transcripts where `session.store` in openclaw.json puts
    its store (and records it in state/openclaw.sqlite); mining read only
    ~/.openclaw/agents/*/agent/openclaw-agent.sqlite and never offered the session."""
    if "openclaw" not in HOSTS:
        pytest.skip("openclaw not selected")
    w = World(tmp_path_factory.mktemp("openclaw-store"), "openclaw")
    try:
        sb = w.sb
        config = sb.home / ".openclaw" / "openclaw.json"
        cfg = json.loads(config.read_text())
        cfg["session"] = {"store": "~/oc-sessions/{agentId}/sessions.json"}
        config.write_text(json.dumps(cfg, indent=2))
        assert sb.memwiki("init").rc == 0
        sb.set_script([], "Use vault.")
        run = w.p.run(USER_WORDS)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        moved = sb.home / "oc-sessions" / "main" / "openclaw-agent.sqlite"
        assert moved.is_file(), "the client did not use the configured store"
        r = sb.memwiki("bridge", "prepare", "--host", "openclaw", "--json")
        assert r.rc == 0, r.err
        out = r.json()
        assert not out["nothing_new"], out
        offered = [x for x in out["sessions"] if str(moved) in json.dumps(x)]
        assert offered, ("the session in the moved store was not offered", out["sessions"])
        texts = [Path(t["messages"]).read_text() for t in out["transcripts"]]
        assert any(USER_WORDS in t for t in texts), out["transcripts"]
    finally:
        w.sb.close()


PERSONA = "You are Hermes at work. Sign every answer with -- H."


def test_the_block_goes_into_the_active_hermes_profile(tmp_path_factory):
    """Hermes: a named profile made sticky by `hermes profile use` (~/.hermes/active_profile)
    moves its home, and SOUL.md with it; install wrote ~/.hermes/SOUL.md, not read then."""
    if "hermes" not in HOSTS:
        pytest.skip("hermes not selected")
    w = World(tmp_path_factory.mktemp("hermes-profile"), "hermes")
    try:
        root = w.sb.home / ".hermes"
        profile = root / "profiles" / "work"
        profile.mkdir(parents=True)
        (profile / "config.yaml").write_bytes((root / "config.yaml").read_bytes())
        (profile / "SOUL.md").write_text(f"{PERSONA}\n")
        (root / "active_profile").write_text("work\n")
        [change] = _install(w, "hermes")
        assert change["path"] == str(profile / "SOUL.md"), change
        seen = _what_the_model_saw(w)
        assert PERSONA in seen, "Hermes did not run in the active profile"
        assert BLOCK_MARK in seen, "the block is not in the SOUL.md Hermes reads"
        assert w.sb.memwiki("uninstall", "--host", "hermes").rc == 0
        assert (profile / "SOUL.md").read_text() == f"{PERSONA}\n"
    finally:
        w.sb.close()


def test_the_scheduled_run_mines_a_moved_claude_config_dir(tmp_path_factory):
    """Claude Code with CLAUDE_CONFIG_DIR: cron starts the scheduled run without it, so the
    run's `bridge prepare` read ~/.claude/projects and never offered the person's sessions."""
    if "claude-code" not in HOSTS:
        pytest.skip("claude-code not selected")
    w = World(tmp_path_factory.mktemp("claude-config-dir"), "claude-code")
    try:
        sb = w.sb
        moved = sb.home / "claude-cfg"
        (sb.home / ".claude").rename(moved)
        env = {**w.p.env(), "CLAUDE_CONFIG_DIR": str(moved)}
        assert sb.memwiki("init").rc == 0
        sb.set_script([], "Use vault.")
        run = sb.run(w.p.argv(USER_WORDS), env=env, cwd=sb.project)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        assert list(moved.glob("projects/*/*.jsonl")), "the client did not use the moved dir"
        r = sb.memwiki("schedule", "--host", "claude-code", "--install", env=env)
        assert r.rc == 0, r.err
        wrapper = Path(re.search(r"/bin/sh (\S+)", (sb.home / ".crontab").read_text()).group(1))
        prompt = (wrapper.parent / "claude-code.prompt.md").read_text()
        cmds = re.findall(r"`([^`]*bridge (?:prepare|commit) --host \S+ --json)`", prompt)
        sb.set_script(cmds, "Memorized.")
        mark = len(sb.requests())
        # As cron starts it: /bin/sh, a minimal PATH, and no CLAUDE_CONFIG_DIR.
        cron = {k: v for k, v in w.p.env().items() if k not in ("PATH", "SHELL")}
        cron.update(PATH=f"{sb.bin}:/usr/bin:/bin", SHELL="/bin/sh")
        run = sb.run(["/bin/sh", str(wrapper)], env=cron, cwd=sb.home, timeout=180)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        flat = [o.replace("\\", "") for b in _model_requests(sb, mark) for o in _tool_outputs(b)]
        prepared = [o for o in flat if '"nothing_new"' in o]
        assert prepared and '"nothing_new": false' in prepared[0], flat
    finally:
        w.sb.close()


def test_install_under_moved_homes_reaches_claude_code_and_codex(tmp_path_factory):
    """CLAUDE_CONFIG_DIR and CODEX_HOME move where the real clients read their instruction
    files (and Claude Code its settings.json): install with them set writes there."""
    for host, var, folder in (
        ("claude-code", "CLAUDE_CONFIG_DIR", ".claude"),
        ("codex", "CODEX_HOME", ".codex"),
    ):
        if host not in HOSTS:
            continue
        w = World(tmp_path_factory.mktemp(f"{host}-moved-home"), host)
        try:
            sb = w.sb
            moved = sb.home / f"{host}-home"
            (sb.home / folder).rename(moved)
            if host == "codex":  # a default home too, on the fake model: never the network
                (sb.home / folder).mkdir()
                (sb.home / folder / "config.toml").write_bytes((moved / "config.toml").read_bytes())
            env = {**w.p.env(), var: str(moved)}
            assert sb.memwiki("init").rc == 0
            changes = _install(w, host, env)
            assert all(c["path"].startswith(str(moved)) for c in changes), changes
            assert BLOCK_MARK in _what_the_model_saw(w, env), f"{host}: block not read"
            assert sb.memwiki("uninstall", "--host", host, env=env).rc == 0
        finally:
            w.sb.close()
