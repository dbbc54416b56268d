"""Installing again from another memwiki (a new virtualenv, pipx after a venv) refreshes
what the earlier install wrote, and says so."""

from __future__ import annotations

import json

from memwiki.config import load
from memwiki.hosts.integrate import claude_settings, inject


def test_a_hook_refreshed_to_another_memwiki_is_updated_not_added(tmp_path):
    """Bug: install printed `settings added` when it only rewrote the path of the hook an
    earlier install wrote, as if Claude Code now had a second hook."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home)})
    old = {"type": "command", "command": "/gone/venv/bin/memwiki hook claude-code"}
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [old]}]}}))
    result = inject.install("claude-code", cfg)
    actions = {c.kind: c.action for c in result.changes}
    assert actions["settings"] == "updated", actions
    [command] = claude_settings.hook_commands(json.loads(settings.read_text()))
    assert command != old["command"] and command.endswith("memwiki hook claude-code")
    again = inject.install("claude-code", cfg)
    assert {c.kind: c.action for c in again.changes}["settings"] == "unchanged"
