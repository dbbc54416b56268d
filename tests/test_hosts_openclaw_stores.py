"""OpenClaw transcript databases outside <state>/agents/<id>/agent/: mining finds them.

OpenClaw 2026.9.6 writes an agent's transcripts where `session.store` in openclaw.json puts
its session store (`~/oc-sessions/{agentId}/sessions.json` → `~/oc-sessions/main/
openclaw-agent.sqlite`) and records that path in `<state>/state/openclaw.sqlite`
(`agent_databases`). The store below is laid out as a real run left it: the captured agent
database, moved there, and the registry table as the client creates it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memwiki.config import load
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.collect import collect_new_sessions

REAL = Path(__file__).parent / "fixtures" / "hosts" / "real"
AGENT_SQL = REAL / "openclaw-2026.9.6" / ".openclaw" / "agents" / "main" / "agent"
USER_WORDS = "how do we rotate the staging api keys for the billing service?"
# Verbatim from the state/openclaw.sqlite of a real OpenClaw 2026.9.6 run.
REGISTRY_SQL = """CREATE TABLE agent_databases (
  agent_id TEXT NOT NULL,
  path TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  size_bytes INTEGER,
  PRIMARY KEY (agent_id, path)
) STRICT;"""


def _octet_length(value):
    if value is None:
        return None
    return len(value.encode("utf-8")) if isinstance(value, str) else len(bytes(value))


def _agent_db(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    # The real schema's CHECKs call octet_length, which older SQLite builds lack.
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    conn.executescript((AGENT_SQL / "openclaw-agent.sql").read_text())
    conn.close()


def _registry(state: Path, rows: list[str]) -> None:
    (state / "state").mkdir(parents=True)
    conn = sqlite3.connect(state / "state" / "openclaw.sqlite")
    conn.executescript(REGISTRY_SQL)
    for i, stored in enumerate(rows):
        conn.execute(
            "INSERT INTO agent_databases VALUES ('main', ?, 23, ?, 4096)",
            (stored, 1796438386092 + i),
        )
    conn.commit()
    conn.close()


def test_a_session_store_moved_by_openclaw_json_is_mined(tmp_path):
    """Bug: with `session.store` set, mining read only agents/*/agent/openclaw-agent.sqlite
    (present, but with no transcript in it) and never offered the person's session."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    moved = home / "oc-sessions" / "main" / "openclaw-agent.sqlite"
    _agent_db(moved)
    default = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    _agent_db(default)
    with sqlite3.connect(default) as conn:  # as the real run left it: schema, no transcript
        conn.execute("DELETE FROM transcript_events")
    (state / "openclaw.json").write_text(
        '{"session": {"store": "~/oc-sessions/{agentId}/sessions.json"}}\n'
    )
    # Both rows as the client wrote them: absolute outside the state directory, relative in it;
    # and a row for a database since deleted.
    gone = str(home / "old" / "openclaw-agent.sqlite")
    _registry(state, [str(moved), "agents/main/agent/openclaw-agent.sqlite", gone])
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home)})
    source = get_source("openclaw", cfg)
    refs = source.list_sessions()
    assert {r.path for r in refs} == {moved} and len(refs) == 4, refs
    assert not source.problems
    slices = collect_new_sessions("openclaw", cfg, {})
    users = [
        [i["content"] for i in s.session["items"] if i["type"] == "message" and i["role"] == "user"]
        for s in slices
        if s.memorizable and "memwiki-bridge-" not in s.session_id
    ]
    assert users and users[0][0] == USER_WORDS, users


def test_an_unreadable_registry_is_reported_and_agents_still_read(tmp_path):
    """A registry that is not a database is one problem line; agents/ is listed as before."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    _agent_db(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    (state / "state").mkdir(parents=True)
    (state / "state" / "openclaw.sqlite").write_bytes(b"not a database" * 100)
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home)})
    source = get_source("openclaw", cfg)
    assert len(source.list_sessions()) == 4
    [problem] = source.problems
    assert "openclaw.sqlite" in problem and "cannot read" in problem


def _users(slices) -> list[str]:
    return [
        i["content"]
        for s in slices
        if s.memorizable and "memwiki-bridge-" not in s.session_id
        for i in s.session["items"]
        if i["type"] == "message" and i["role"] == "user"
    ]


def test_sessions_of_openclaw_run_with_a_profile_flag_are_mined(tmp_path):
    """Bug: `openclaw --profile work` (or --dev) keeps everything in ~/.openclaw-work (it sets
    OPENCLAW_STATE_DIR inside that process only, seen in a real 2026.9.6 run) and nothing
    exported names it: mining read ~/.openclaw alone and never offered those sessions."""
    home = tmp_path / "home"
    _agent_db(home / ".openclaw-work" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home)})
    source = get_source("openclaw", cfg)
    refs = source.list_sessions()
    assert len(refs) == 4 and all(r.key.startswith(".openclaw-work:main/") for r in refs), refs
    slices = collect_new_sessions("openclaw", cfg, {})
    assert _users(slices)[:1] == [USER_WORDS]
    # The cursor keys are what the next listing gives: nothing is offered twice.
    cursors = {"streams": {s.key: s.cursor for s in slices}}
    assert not any(s.memorizable for s in collect_new_sessions("openclaw", cfg, cursors))
    # A copy of the folder (a backup named like a profile) is not mined a second time.
    (home / ".openclaw-old").mkdir()
    (home / ".openclaw-work" / "agents").rename(home / ".openclaw-old" / "agents")
    _agent_db(home / ".openclaw-work" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    assert len(get_source("openclaw", cfg).list_sessions()) == 4
    # An exported OPENCLAW_STATE_DIR is the one folder read, as OpenClaw itself reads it.
    state = home / "elsewhere"
    state.mkdir()
    env = {"HOME": str(home), "OPENCLAW_STATE_DIR": str(state)}
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ=env)
    assert get_source("openclaw", cfg).list_sessions() == []
