"""Codex's AGENTS.override.md with the real client: which file the block must go into.

Codex reads AGENTS.override.md instead of AGENTS.md only when the override holds text; an
empty one is skipped. memwiki's install follows the same rule, and moves its block when the
override gets text, so that Codex always sees exactly one block and the user's own rules.
"""

from __future__ import annotations

import pytest

from .harness import request_text
from .profiles import CODEX_GLOBAL_RULES
from .test_hosts import BLOCK_MARK, HOSTS, World, _model_requests

OVERRIDE_WORDS = "For this week: answer in French."


def _seen_by_codex(w: World) -> str:
    """What the first model request of one real Codex session holds."""
    mark = len(w.sb.requests())
    w.sb.set_script([], "Done.")
    run = w.p.run("say hello")
    assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
    bodies = _model_requests(w.sb, mark)
    assert bodies, "codex sent no request to the fake model"
    return request_text(bodies[0])


def test_the_block_goes_where_codex_reads_it(tmp_path_factory):
    if "codex" not in HOSTS:
        pytest.skip("codex not selected")
    w = World(tmp_path_factory.mktemp("codex-override"), "codex")
    try:
        codex = w.sb.home / ".codex"
        plain, override = codex / "AGENTS.md", codex / "AGENTS.override.md"
        mine = plain.read_bytes()
        rules = CODEX_GLOBAL_RULES.strip().splitlines()[0]
        # An empty override: Codex skips it, so the block belongs in AGENTS.md, beside the
        # user's rules. In the override (where an older memwiki put it) it hides them.
        override.write_text("\n")
        assert w.sb.memwiki("install", "--host", "codex", "--path", str(override)).rc == 0
        seen = _seen_by_codex(w)
        assert BLOCK_MARK in seen and rules not in seen
        assert w.sb.memwiki("install", "--host", "codex").rc == 0  # moves it to AGENTS.md
        assert override.read_text() == "\n"
        seen = _seen_by_codex(w)
        assert BLOCK_MARK in seen and rules in seen
        # The override gets text: Codex now reads only it; install again moves the block.
        override.write_text(f"{OVERRIDE_WORDS}\n")
        seen = _seen_by_codex(w)
        assert rules not in seen and BLOCK_MARK not in seen  # the old block is not read
        r = w.sb.memwiki("install", "--host", "codex")
        assert r.rc == 0, r.err
        assert plain.read_bytes() == mine
        seen = _seen_by_codex(w)
        assert OVERRIDE_WORDS in seen and seen.count(BLOCK_MARK) == 1
        assert w.sb.memwiki("uninstall", "--host", "codex").rc == 0
        assert plain.read_bytes() == mine and override.read_text() == f"{OVERRIDE_WORDS}\n"
    finally:
        w.sb.close()
