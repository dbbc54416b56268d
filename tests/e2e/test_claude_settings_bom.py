"""A settings.json that starts with a UTF-8 BOM, with the real Claude Code.

Windows editors write the BOM and Claude Code reads such a file; memwiki's install must add
its hook there (keeping the BOM), and the hook must then put memory into the prompt.
"""

from __future__ import annotations

import pytest

from .harness import request_text
from .test_hosts import HOSTS, MEMORY_BODY, MEMORY_MARK, USER_WORDS, World, _model_requests


def test_the_hook_installed_in_a_settings_json_with_a_bom_injects_memory(tmp_path_factory):
    if "claude-code" not in HOSTS:
        pytest.skip("claude-code not selected")
    w = World(tmp_path_factory.mktemp("claude-bom"), "claude-code")
    try:
        sb = w.sb
        assert sb.memwiki("init").rc == 0
        body = sb.root / "note.md"
        body.write_text(MEMORY_BODY)
        add = ("add", "memory", "staging-key-rotation", "-d", "How to rotate staging API keys")
        assert sb.memwiki(*add, "--body-file", str(body)).rc == 0
        assert sb.memwiki("reindex").rc == 0
        settings = sb.home / ".claude" / "settings.json"
        mine = b"\xef\xbb\xbf" + settings.read_bytes()
        settings.write_bytes(mine)
        r = sb.memwiki("install", "--host", "claude-code")
        assert r.rc == 0, r.err
        assert settings.read_bytes().startswith(b"\xef\xbb\xbf{")
        mark = len(sb.requests())
        sb.set_script([], "Use vault.")
        run = w.p.run(USER_WORDS)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        bodies = _model_requests(sb, mark)
        assert bodies and MEMORY_MARK in request_text(bodies[0]), "the hook's memory is missing"
        assert sb.memwiki("uninstall", "--host", "claude-code").rc == 0
        assert settings.read_bytes() == mine
    finally:
        w.sb.close()
