"""Regression tests on real logs written by the real clients (tests/fixtures/hosts/real/).

Each fixture was produced by `make e2e MEMWIKI_E2E_CAPTURE=...` (tests/e2e/capture.py):
the pinned client, run headless against the fake model, paths rewritten to /home/user.
The user's words in those sessions are the e2e suite's constants below.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.collect import collect_new_sessions, read_slice

REAL = Path(__file__).parent / "fixtures" / "hosts" / "real"
USER_WORDS = "how do we rotate the staging api keys for the billing service?"
SUBAGENT_ASK = "where is the billing config kept?"
SUBAGENT_PROMPT = "Search the repository for the billing config file and report its path."
MEMORY_MARK = "vault rotate staging-billing"
BLOCK_MARK = "Long-term memory (memwiki)"


def real(name: str) -> Path:
    """The one captured store of a host (whatever version captured it)."""
    [found] = sorted(REAL.glob(f"{name}-*"))
    return found


def config_for(tmp_path: Path, home: Path, **env: str):
    return load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home), **env})


def user_messages(sl) -> list[str]:
    items = sl.session["items"] if sl.session else []
    return [it["content"] for it in items if it["type"] == "message" and it["role"] == "user"]


def all_text(sl) -> str:
    return repr(sl.session)


def counted(sl) -> int:
    return sl.counts["message"] + sl.counts["tool"] + sl.counts["drop"]


# Claude Code -----------------------------------------------------------------------------


@pytest.fixture
def claude_home(tmp_path):
    home = tmp_path / "claude-home"
    shutil.copytree(real("claude-code"), home)
    return home


def test_claude_code_real_session_mines_the_words_not_the_hook_context(tmp_path, claude_home):
    cfg = config_for(tmp_path, claude_home)
    slices = collect_new_sessions("claude-code", cfg, {})
    mined = [sl for sl in slices if sl.memorizable]
    users = [m for sl in mined for m in user_messages(sl)]
    assert USER_WORDS in users and SUBAGENT_ASK in users
    for sl in mined:
        # The hook's memory arrives as an attachment (hook_additional_context): dropped.
        first_user = all_text(sl).split(user_messages(sl)[0], 1)[0]
        assert MEMORY_MARK not in first_user and BLOCK_MARK not in all_text(sl)


def test_claude_code_real_subagent_prompt_is_not_the_persons_words(tmp_path, claude_home):
    cfg = config_for(tmp_path, claude_home)
    slices = collect_new_sessions("claude-code", cfg, {})
    subs = [sl for sl in slices if "/subagents/" in sl.key]
    assert subs, "the fixture holds a real subagent transcript"
    for sl in subs:
        assert not sl.memorizable  # the parent's prompt and the subagent's work are tool activity
        assert sl.counts["tool"] >= 2 and sl.counts["message"] == 0
    users = [m for sl in slices for m in user_messages(sl)]
    assert SUBAGENT_PROMPT not in users


def test_claude_code_real_records_are_all_counted(tmp_path, claude_home):
    cfg = config_for(tmp_path, claude_home)
    source = get_source("claude-code", cfg)
    for ref in source.list_sessions():
        lines = [ln for ln in ref.path.read_text().splitlines() if ln.strip()]
        sl = read_slice(source, ref, None)
        assert counted(sl) == len(lines), ref.path
        assert sl.counts["unrecognized"] == 0


# Codex -------------------------------------------------------------------------------------

CODEX_RESUME_ASK = "and what about the production keys?"


@pytest.fixture
def codex_home(tmp_path):
    home = tmp_path / "codex-home"
    shutil.copytree(real("codex"), home)
    return home


def _codex_users(tmp_path, home) -> tuple[list[str], list]:
    cfg = config_for(tmp_path, home)
    slices = collect_new_sessions("codex", cfg, {})
    return [m for sl in slices for m in user_messages(sl)], slices


def test_codex_real_global_agents_md_and_resume_variant_are_not_user_words(tmp_path, codex_home):
    users, slices = _codex_users(tmp_path, codex_home)
    # The global AGENTS.md ("# AGENTS.md instructions\n\n<INSTRUCTIONS>", no "for <dir>") and
    # the resumed session's "These AGENTS.md instructions replace …" are harness text.
    assert users == [USER_WORDS, CODEX_RESUME_ASK]
    for sl in slices:
        assert "Global rules" not in all_text(sl) and BLOCK_MARK not in all_text(sl)


def test_codex_real_log_without_provenance_falls_back_to_markers(tmp_path, codex_home):
    import json

    # Older rollouts have no internal_chat_message_metadata_passthrough: strip it.
    for path in codex_home.rglob("rollout-*.jsonl"):
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if isinstance(rec.get("payload"), dict):
                rec["payload"].pop("internal_chat_message_metadata_passthrough", None)
            lines.append(json.dumps(rec))
        path.write_text("\n".join(lines) + "\n")
    users, _ = _codex_users(tmp_path, codex_home)
    assert users == [USER_WORDS, CODEX_RESUME_ASK]


def test_codex_real_records_are_all_counted(tmp_path, codex_home):
    cfg = config_for(tmp_path, codex_home)
    source = get_source("codex", cfg)
    refs = source.list_sessions()
    assert refs
    for ref in refs:
        lines = [ln for ln in ref.path.read_text().splitlines() if ln.strip()]
        sl = read_slice(source, ref, None)
        assert counted(sl) == len(lines) and sl.counts["unrecognized"] == 0


# Hermes ------------------------------------------------------------------------------------


@pytest.fixture
def hermes_home(tmp_path):
    import sqlite3

    home = tmp_path / "hermes-home"
    (home / ".hermes").mkdir(parents=True)
    sql = (real("hermes") / ".hermes" / "state.sql").read_text()
    with sqlite3.connect(home / ".hermes" / "state.db") as conn:
        conn.executescript(sql)
    return home


def test_hermes_real_tool_output_is_unwrapped_not_raw_json(tmp_path, hermes_home):
    cfg = config_for(tmp_path, hermes_home)
    [sl] = [s for s in collect_new_sessions("hermes", cfg, {}) if s.memorizable]
    assert user_messages(sl) == [USER_WORDS]
    [result] = [it for it in sl.session["items"] if it["type"] == "tool_result"]
    # Stored as '{"output": "...", "exit_code": 0, "error": null}': the output is the text.
    assert result["content"].startswith("<!-- memwiki:") and MEMORY_MARK in result["content"]
    assert result["is_error"] is False and result["name"] == "terminal"
    assert counted(sl) == 4


def test_hermes_failed_tool_output_is_an_error():
    from memwiki.hosts.mining.hermes import unwrap_tool_output

    text, failed = unwrap_tool_output('{"output": "", "exit_code": 127, "error": "not found"}')
    assert failed is True and text == "[error] not found"
    assert unwrap_tool_output("plain text") == ("plain text", None)
    assert unwrap_tool_output('{"output": 3}') == ('{"output": 3}', None)


def _compact(db: Path) -> None:
    """What Hermes's in-place compaction does: old rows inactive, retained ones copied on."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET active = 0, compacted = 1")
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls,"
            " tool_name, timestamp, active) SELECT session_id, role, content, tool_call_id,"
            " tool_calls, tool_name, timestamp + 100, 1 FROM messages WHERE role = 'user'"
        )
        sid = conn.execute("SELECT session_id FROM messages LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, active)"
            " VALUES (?, 'user', 'and the production keys?', 1e10, 1)",
            (sid,),
        )


def _assistant(sl) -> list[str]:
    items = sl.session["items"]
    return [it["content"] for it in items if it.get("role") == "assistant"]


def test_hermes_compacted_before_the_first_read_every_message_once(tmp_path, hermes_home):
    _compact(hermes_home / ".hermes" / "state.db")
    cfg = config_for(tmp_path, hermes_home)
    [sl] = [s for s in collect_new_sessions("hermes", cfg, {}) if s.memorizable]
    assert user_messages(sl) == [USER_WORDS, "and the production keys?"]
    assert _assistant(sl) == ["Use vault."]  # inactive, without a copy: kept, not lost
    assert counted(sl) == 6  # 4 originals + 2 new rows, the original user row a duplicate
    assert sl.counts["drop"] == 1


def test_hermes_compacted_after_a_read_only_the_new_message(tmp_path, hermes_home):
    cfg = config_for(tmp_path, hermes_home)
    [first] = [s for s in collect_new_sessions("hermes", cfg, {}) if s.memorizable]
    _compact(hermes_home / ".hermes" / "state.db")
    state = {"streams": {first.key: first.cursor}}
    [second] = [s for s in collect_new_sessions("hermes", cfg, state) if s.memorizable]
    assert user_messages(second) == ["and the production keys?"]
    assert _assistant(second) == []


# OpenClaw ----------------------------------------------------------------------------------

OPENCLAW_LONG_NOTE = "Note for later: " + "the billing service rotates its keys weekly. " * 35


def _octet_length(value):
    if value is None:
        return None
    return len(value.encode("utf-8")) if isinstance(value, str) else len(bytes(value))


@pytest.fixture
def openclaw_home(tmp_path):
    import sqlite3

    home = tmp_path / "openclaw-home"
    rel = Path(".openclaw/agents/main/agent")
    (home / rel).mkdir(parents=True)
    sql = (real("openclaw") / rel / "openclaw-agent.sql").read_text()
    conn = sqlite3.connect(home / rel / "openclaw-agent.sqlite")
    # The real schema's CHECKs call octet_length, which older SQLite builds lack.
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    conn.executescript(sql)
    conn.close()
    return home


def _oc_db(home: Path) -> Path:
    return home / ".openclaw/agents/main/agent/openclaw-agent.sqlite"


def test_openclaw_real_store_lists_with_hex_generations(tmp_path, openclaw_home):
    cfg = config_for(tmp_path, openclaw_home)
    refs = get_source("openclaw", cfg).list_sessions()  # was ValueError: int('1f79…')
    assert len(refs) == 4
    users = [r for r in refs if not r.session_id.split("/")[1].startswith("memwiki-bridge-")]
    [user] = users
    slices = collect_new_sessions("openclaw", cfg, {})
    [sl] = [s for s in slices if s.key == user.key]
    assert isinstance(sl.cursor["generation"], str) and len(sl.cursor["generation"]) == 32


def test_openclaw_real_compressed_event_is_read_and_every_event_counted(tmp_path, openclaw_home):
    import sqlite3

    cfg = config_for(tmp_path, openclaw_home)
    with sqlite3.connect(_oc_db(openclaw_home)) as conn:
        [(sid, n, packed)] = conn.execute(
            "SELECT session_id, COUNT(*), SUM(event_zstd IS NOT NULL) FROM transcript_events"
            " WHERE session_id NOT LIKE 'memwiki-bridge-%' GROUP BY session_id"
        ).fetchall()
    assert packed >= 1  # the long note is stored in event_zstd with event_json NULL
    [sl] = [s for s in collect_new_sessions("openclaw", cfg, {}) if s.key == f"main/{sid}"]
    assert user_messages(sl) == [USER_WORDS, OPENCLAW_LONG_NOTE]
    assert counted(sl) == n  # custom, session, model_change … events are drops, all counted


def test_openclaw_real_scheduled_runs_are_each_claimed(tmp_path, openclaw_home):
    from memwiki.hosts.mining import openclaw

    cfg = config_for(tmp_path, openclaw_home)
    slices = collect_new_sessions(
        "openclaw", cfg, {}, skip_session_ids=[openclaw.BRIDGE_SESSION_ID]
    )
    # Three scheduled runs, one session id each, all claimed by the bridge's one id.
    assert [s.session_id for s in slices if s.memorizable] == [
        s.session_id for s in slices if "memwiki-bridge-" not in s.session_id
    ]
    assert len(slices) == 1


def test_openclaw_undecodable_event_is_reported_and_not_passed(tmp_path, openclaw_home):
    import sqlite3

    cfg = config_for(tmp_path, openclaw_home)
    conn = sqlite3.connect(_oc_db(openclaw_home))
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    sid, seq = conn.execute(
        "SELECT session_id, seq FROM transcript_events WHERE event_zstd IS NOT NULL"
        " AND session_id NOT LIKE 'memwiki-bridge-%'"
    ).fetchone()
    conn.execute(
        "UPDATE transcript_events SET event_zstd = ? WHERE session_id = ? AND seq = ?",
        (b"\x28\xb5\x2f\xfd not zstd", sid, seq),
    )
    conn.commit()
    conn.close()
    warnings: list[str] = []
    [sl] = [
        s
        for s in collect_new_sessions("openclaw", cfg, {}, warnings=warnings)
        if s.key == f"main/{sid}"
    ]
    assert sl.cursor["pos"] < seq and sl.counts["undecodable"] == 1
    assert any("could not be decoded" in w and f"seq {seq}" in w for w in warnings)
    again = collect_new_sessions(
        "openclaw", cfg, {"streams": {sl.key: sl.cursor}}, warnings=warnings
    )
    assert all(s.key != sl.key or s.cursor["pos"] < seq for s in again)


# Every real store: bridge prepare answers (never the internal-error exit 70) ---------------


@pytest.mark.parametrize("host", ["claude-code", "codex", "hermes", "openclaw"])
def test_bridge_prepare_on_each_real_store_never_exits_70(host, tmp_path, request):
    import json
    import os
    import subprocess
    import sys

    home = request.getfixturevalue(f"{host.split('-')[0]}_home")
    exe = str(Path(sys.executable).parent / "memwiki")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    wiki = str(tmp_path / "wiki")
    subprocess.run(
        [exe, "--wiki", wiki, "init"], env=env, check=True, capture_output=True, timeout=120
    )
    proc = subprocess.run(
        [exe, "--wiki", wiki, "bridge", "prepare", "--host", host, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert not out["nothing_new"] and out["sessions"]
