"""Instruction files outside the defaults, with the real clients: install writes where they read.

OpenClaw: a workspace set in openclaw.json.

OpenClaw reads AGENTS.md from the default agent's workspace, which `agents.defaults.workspace`
in openclaw.json (JSON5) moves. memwiki's install used to write ~/.openclaw/workspace/AGENTS.md
regardless, so the block never reached the model.
"""

from __future__ import annotations

import json

import pytest

from .harness import request_text
from .test_hosts import BLOCK_MARK, HOSTS, World, _model_requests

RULES = "Workspace rules: name every file you touch."


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
        r = w.sb.memwiki("install", "--host", "openclaw", "--json")
        assert r.rc == 0, r.err
        [change] = r.json()["changes"]
        assert change["path"] == str(workspace / "AGENTS.md"), change
        mark = len(w.sb.requests())
        w.sb.set_script([], "Done.")
        run = w.p.run("say hello")
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        bodies = _model_requests(w.sb, mark)
        assert bodies, "openclaw sent no request to the fake model"
        seen = request_text(bodies[0])
        assert RULES in seen, "OpenClaw did not read the configured workspace"
        assert BLOCK_MARK in seen, "the block is not in the workspace OpenClaw reads"
        assert w.sb.memwiki("uninstall", "--host", "openclaw").rc == 0
        assert (workspace / "AGENTS.md").read_text() == f"{RULES}\n"
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
        r = w.sb.memwiki("install", "--host", "hermes", "--json")
        assert r.rc == 0, r.err
        [change] = r.json()["changes"]
        assert change["path"] == str(profile / "SOUL.md"), change
        mark = len(w.sb.requests())
        w.sb.set_script([], "Done.")
        run = w.p.run("say hello")
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        bodies = _model_requests(w.sb, mark)
        assert bodies, "hermes sent no request to the fake model"
        seen = request_text(bodies[0])
        assert PERSONA in seen, "Hermes did not run in the active profile"
        assert BLOCK_MARK in seen, "the block is not in the SOUL.md Hermes reads"
        assert w.sb.memwiki("uninstall", "--host", "hermes").rc == 0
        assert (profile / "SOUL.md").read_text() == f"{PERSONA}\n"
    finally:
        w.sb.close()
