"""Instruction files outside the defaults: install writes where the real client reads.

OpenClaw reads AGENTS.md from the workspace openclaw.json names; Hermes reads SOUL.md from
the profile `hermes profile use` made sticky. Each test writes real files and runs the real
`memwiki` command with its own HOME; tests/e2e/test_homes.py shows the real clients reading
the files install wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwiki.hosts.integrate.block import BEGIN


@pytest.fixture
def mw(home_memwiki):
    """memwiki with HOME in tmp_path, where OpenClaw and Hermes have their folders."""
    (home_memwiki.home / ".openclaw").mkdir()
    (home_memwiki.home / ".hermes").mkdir()
    return home_memwiki


def config(mw, text: str) -> None:
    (mw.home / ".openclaw" / "openclaw.json").write_text(text)


def target(done) -> Path:
    assert done.returncode == 0, done.stderr
    [change] = json.loads(done.stdout)["changes"]
    return Path(change["path"])


def test_install_follows_agents_defaults_workspace(mw, tmp_path):
    """Bug: install wrote ~/.openclaw/workspace/AGENTS.md while openclaw.json set another
    workspace: OpenClaw never read the block."""
    ws = mw.home / "notes-agent"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("# Workspace rules\n")
    config(
        mw,
        "// written by openclaw onboard, then edited by hand\n"
        "{\n  agents: {\n    defaults: {\n      workspace: '~/notes-agent',\n"
        '      model: { primary: "fake/fake-model" },\n    },\n  },\n}\n',
    )
    assert target(mw("install", "--host", "openclaw", "--json")) == ws / "AGENTS.md"
    assert BEGIN in (ws / "AGENTS.md").read_text()
    assert not (mw.home / ".openclaw" / "workspace").exists()
    detect = json.loads(mw("hosts", "detect", "--json").stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "openclaw"]
    assert st["instruction_file"] == str(ws / "AGENTS.md") and st["installed"]
    mw("uninstall", "--host", "openclaw")
    assert (ws / "AGENTS.md").read_text() == "# Workspace rules\n"


def test_the_default_agents_own_workspace_wins(mw, tmp_path):
    """An agent entry's workspace beats agents.defaults.workspace (agents.list, older)."""
    own = tmp_path / "own"
    own.mkdir()
    config(
        mw,
        json.dumps(
            {
                "agents": {
                    "defaults": {"workspace": str(tmp_path / "shared")},
                    "list": [{"id": "main", "default": True, "workspace": str(own)}],
                }
            }
        ),
    )
    assert target(mw("install", "--host", "openclaw", "--json")) == own / "AGENTS.md"


def test_a_fleet_member_without_its_own_workspace_gets_a_subdirectory(mw, tmp_path):
    """In a fleet with another default agent, main uses <defaults.workspace>/main."""
    (tmp_path / "root" / "main").mkdir(parents=True)
    cfg = {
        "agents": {
            "defaults": {"workspace": str(tmp_path / "root")},
            "entries": {"work": {"default": True, "workspace": str(tmp_path / "w")}, "main": {}},
        }
    }
    config(mw, json.dumps(cfg))
    # The default agent is "work": its own workspace.
    (tmp_path / "w").mkdir()
    assert target(mw("install", "--host", "openclaw", "--json")) == tmp_path / "w" / "AGENTS.md"
    del cfg["agents"]["entries"]["work"]["default"]
    config(mw, json.dumps(cfg))
    expected = tmp_path / "root" / "main" / "AGENTS.md"
    assert target(mw("install", "--host", "openclaw", "--json")) == expected


def test_openclaw_workspace_dir_and_config_path_variables(mw, tmp_path):
    """OPENCLAW_WORKSPACE_DIR moves the default workspace; OPENCLAW_CONFIG_PATH the config."""
    ws = tmp_path / "env-ws"
    ws.mkdir()
    env = {"OPENCLAW_WORKSPACE_DIR": str(ws)}
    assert target(mw("install", "--host", "openclaw", "--json", env=env)) == ws / "AGENTS.md"
    other = tmp_path / "cfg-ws"
    other.mkdir()
    cfg = tmp_path / "elsewhere.json"
    cfg.write_text(json.dumps({"agents": {"defaults": {"workspace": str(other)}}}))
    env["OPENCLAW_CONFIG_PATH"] = str(cfg)
    assert target(mw("install", "--host", "openclaw", "--json", env=env)) == other / "AGENTS.md"


def test_an_exported_openclaw_profile_moves_the_workspace_not_the_state(mw, tmp_path):
    """Bug: with OPENCLAW_PROFILE=work exported, install wrote ~/.openclaw/workspace/AGENTS.md;
    OpenClaw 2026.9.6 then keeps its state and openclaw.json in ~/.openclaw but reads
    ~/.openclaw-work/workspace (the layout below is what a real run left)."""
    ws = mw.home / ".openclaw-work" / "workspace"
    ws.mkdir(parents=True)
    (ws / "AGENTS.md").write_text("# Work rules\n")
    config(mw, '{"agents": {"defaults": {"model": {"primary": "fake/fake-model"}}}}\n')
    env = {"OPENCLAW_PROFILE": "work"}
    assert target(mw("install", "--host", "openclaw", "--json", env=env)) == ws / "AGENTS.md"
    assert not (mw.home / ".openclaw" / "workspace").exists()
    detect = json.loads(mw("hosts", "detect", "--json", env=env).stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "openclaw"]
    assert st["instruction_file"] == str(ws / "AGENTS.md") and st["installed"]
    # The scheduled run, started by cron without it, gets it back from the wrapper.
    assert mw("schedule", "--host", "openclaw", "--install", env=env).returncode == 0
    [wrapper] = (mw.home / ".config").rglob("openclaw.sh")
    assert "export OPENCLAW_PROFILE=work" in wrapper.read_text()
    mw("uninstall", "--host", "openclaw", env=env)
    assert (ws / "AGENTS.md").read_text() == "# Work rules\n"
    # `openclaw --profile work` also sets OPENCLAW_STATE_DIR, which the workspace follows;
    # "default" is no profile.
    state = mw.home / ".openclaw-work"
    both = {**env, "OPENCLAW_STATE_DIR": str(state)}
    assert target(mw("install", "--host", "openclaw", "--json", env=both)) == ws / "AGENTS.md"
    plain = {"OPENCLAW_PROFILE": "Default"}
    expected = mw.home / ".openclaw" / "workspace" / "AGENTS.md"
    (mw.home / ".openclaw" / "workspace").mkdir()
    assert target(mw("install", "--host", "openclaw", "--json", env=plain)) == expected
    done = mw("install", "--host", "openclaw", env={"OPENCLAW_PROFILE": "../x"})
    assert done.returncode == 2 and "OPENCLAW_PROFILE" in done.stderr


def test_a_tilde_in_openclaw_state_dir_is_openclaw_home(mw, tmp_path):
    """Bug: OPENCLAW_STATE_DIR=~/oc with OPENCLAW_HOME set was read under HOME; OpenClaw
    (config/paths resolveStateDir) expands that ~ to OPENCLAW_HOME, as it does in
    OPENCLAW_CONFIG_PATH and openclaw.json."""
    ochome = tmp_path / "oc-home"
    ws = ochome / "oc" / "workspace"
    ws.mkdir(parents=True)
    (ochome / "oc" / "openclaw.json").write_text("{}\n")
    env = {"OPENCLAW_HOME": str(ochome), "OPENCLAW_STATE_DIR": "~/oc"}
    assert target(mw("install", "--host", "openclaw", "--json", env=env)) == ws / "AGENTS.md"
    detect = json.loads(mw("hosts", "detect", "--json", env=env).stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "openclaw"]
    assert st["session_location"] == str(ochome / "oc")
    other = ochome / "other-ws"
    other.mkdir()
    (ochome / "cfg.json").write_text(
        json.dumps({"agents": {"defaults": {"workspace": str(other)}}})
    )
    env["OPENCLAW_CONFIG_PATH"] = "~/cfg.json"
    assert target(mw("install", "--host", "openclaw", "--json", env=env)) == other / "AGENTS.md"


def test_a_config_memwiki_cannot_follow_is_one_line_not_a_guess(mw):
    """A broken openclaw.json, or a workspace OpenClaw resolves on its own (a relative path,
    a ${VAR}), is refused with one line naming the file (exit 2): never the default."""
    for text in ("{ agents: ", '{"agents": {"defaults": {"workspace": "rel/ws"}}}'):
        config(mw, text)
        done = mw("install", "--host", "openclaw")
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.splitlines()
        assert "openclaw.json" in line and "--path" in line
        detect = json.loads(mw("hosts", "detect", "--json").stdout)
        [st] = [h for h in detect["hosts"] if h["host"] == "openclaw"]
        assert any("install would stop" in n for n in st["notes"]), st
    assert not (mw.home / ".openclaw" / "workspace").exists()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("{a: 1, 'b': 'it\\'s', \"c\": [1, 2,],}", {"a": 1, "b": "it's", "c": [1, 2]}),
        (
            '/* x */ {"u": "http://h/p", // note\n n: -.5, h: 0x1F}',
            {"u": "http://h/p", "n": -0.5, "h": 31},
        ),
    ],
)
def test_json5_as_openclaw_writes_it(text, value):
    from memwiki.hosts.mining.openclaw_config import json5_loads

    assert json5_loads(text) == value


# --- Hermes: a sticky named profile ---------------------------------------------------------


def hermes_profile(mw, name: str = "work") -> Path:
    """What `hermes profile create work` and `hermes profile use work` leave behind."""
    root = mw.home / ".hermes"
    (root / "profiles" / name).mkdir(parents=True)
    (root / "active_profile").write_text(f"{name}\n")
    return root / "profiles" / name


def test_hermes_install_follows_the_active_profile(mw):
    """Bug: with a profile made sticky by `hermes profile use`, install wrote ~/.hermes/SOUL.md,
    which Hermes no longer reads (it reads the profile's SOUL.md)."""
    profile = hermes_profile(mw)
    (mw.home / ".hermes" / "SOUL.md").write_text("You are Hermes.\n")
    assert target(mw("install", "--host", "hermes", "--json")) == profile / "SOUL.md"
    assert (mw.home / ".hermes" / "SOUL.md").read_text() == "You are Hermes.\n"
    detect = json.loads(mw("hosts", "detect", "--json").stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "hermes"]
    assert st["instruction_file"] == str(profile / "SOUL.md") and st["installed"]
    mw("uninstall", "--host", "hermes")
    assert not (profile / "SOUL.md").exists()


def test_hermes_home_set_to_a_profile_or_a_missing_profile(mw, tmp_path):
    """HERMES_HOME naming a profile directory wins over active_profile, as in Hermes; a
    sticky name whose directory is gone leaves the default home (Hermes stops on it)."""
    hermes_profile(mw, "work")
    other = mw.home / ".hermes" / "profiles" / "play"
    other.mkdir()
    env = {"HERMES_HOME": str(other)}
    assert target(mw("install", "--host", "hermes", "--json", env=env)) == other / "SOUL.md"
    (mw.home / ".hermes" / "active_profile").write_text("gone\n")
    default = mw.home / ".hermes" / "SOUL.md"
    assert target(mw("install", "--host", "hermes", "--json")) == default
    # HERMES_HOME at the root (a systemd unit) still follows the sticky profile.
    (mw.home / ".hermes" / "active_profile").write_text("Work\n")
    env = {"HERMES_HOME": str(mw.home / ".hermes")}
    expected = mw.home / ".hermes" / "profiles" / "work" / "SOUL.md"
    assert target(mw("install", "--host", "hermes", "--json", env=env)) == expected


CLAUDE_TURN = (
    '{"type":"user","sessionId":"s1","message":{"role":"user","content":"rotate the keys"}}\n'
    '{"type":"assistant","sessionId":"s1","message":{"role":"assistant","content":'
    '[{"type":"text","text":"rotated"}]}}\n'
)


@pytest.mark.parametrize(
    ("host", "var", "value", "marker"),
    [
        ("claude-code", "CLAUDE_CONFIG_DIR", "~/cc", "projects/-proj/s1.jsonl"),
        ("claude-code", "CLAUDE_CONFIG_DIR", "cc-rel", "projects/-proj/s1.jsonl"),
        ("codex", "CODEX_HOME", "~/cx", "AGENTS.md"),
        ("hermes", "HERMES_HOME", "hermes-rel", "SOUL.md"),
    ],
)
def test_a_home_variable_that_is_not_absolute_is_the_clients_folder(
    mw, tmp_path, host, var, value, marker
):
    """Bug: CLAUDE_CONFIG_DIR=~/cc (as a systemd unit or a quoted dotenv line leaves it) was
    read as $HOME/cc; Claude Code 2.1.197, Codex 0.171.0 and Hermes 0.19 expand no ~ and
    read a relative value in their working directory (Claude Code wrote <cwd>/~/cc/projects/
    in a real run). detect, mining and install now read the client's folder, and detect
    says the value is not absolute."""
    proj = tmp_path / "proj"
    folder = proj / value  # a literal folder named "~" for "~/cc"
    (folder / marker).parent.mkdir(parents=True)
    (folder / marker).write_text(CLAUDE_TURN if marker.endswith(".jsonl") else "# mine\n")
    env = {var: value}
    detect = json.loads(mw("hosts", "detect", "--json", env=env, cwd=proj).stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == host]
    assert st["session_location"] == str(folder if host != "claude-code" else folder / "projects")
    assert any(var in n and "not an absolute path" in n for n in st["notes"]), st["notes"]
    if host == "claude-code":
        assert st["sessions"] == 1 and st["memorize"]
        assert mw("init", env=env, cwd=proj).returncode == 0
        done = mw("bridge", "prepare", "--host", host, "--json", env=env, cwd=proj)
        assert done.returncode == 0, done.stderr
        [session] = json.loads(done.stdout)["sessions"]
        assert session["source_path"] == str(folder / marker)
    changes = mw("install", "--host", host, "--json", env=env, cwd=proj)
    assert changes.returncode == 0, changes.stderr
    paths = [c["path"] for c in json.loads(changes.stdout)["changes"]]
    assert paths and all(p.startswith(str(folder) + "/") for p in paths), paths
    assert not (mw.home / value.removeprefix("~/")).exists()  # nothing under $HOME/cc
