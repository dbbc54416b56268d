"""Incremental slicing, cursor files, self-session skipping, and read-only SQLite access."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.errors import StorageError
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.collect import (
    collect_new_sessions,
    self_session_ids,
    self_session_warning,
)
from memwiki.hosts.mining.cursors import (
    CURSOR_FILE,
    PENDING_FILE,
    advance_cursor,
    claim_sessions,
    discard_pending,
    host_state_dir,
    load_cursor,
    promote_pending,
    save_cursor,
)
from memwiki.hosts.mining.sqlite_ro import connect_ro, ro_uri

FIX = Path(__file__).parent / "fixtures" / "hosts"
CC_SID = "9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90"
API_SID = "1c0ffee0-aaaa-4bbb-8ccc-000000000002"


def make_config(tmp_path: Path, **env: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    opts = {"wiki": str(tmp_path / "wiki")}
    if env.pop("bridging", None):
        opts["bridging_run"] = "1"
    return load(options=opts, environ={"HOME": str(home), **env})


def claude_tree(tmp_path: Path) -> Path:
    root = tmp_path / "home" / ".claude"
    shutil.copytree(FIX / "claude-code", root, dirs_exist_ok=True)
    return root / "projects"


def user_line(text: str, sid: str = CC_SID) -> str:
    return json.dumps(
        {"type": "user", "sessionId": sid, "message": {"role": "user", "content": text}}
    )


def append(path: Path, *lines: str, newline: bool = True) -> None:
    with path.open("a") as fh:
        fh.write("\n".join(lines) + ("\n" if newline else ""))


def messages(sl) -> list[str]:
    return [it["content"] for it in sl.session["items"] if it["type"] == "message"]


def bridge_cycle(host, cfg, state_dir: Path, **kw):
    """What the bridge does: read committed state, slice, save pending."""
    state = load_cursor(state_dir / CURSOR_FILE)
    slices = collect_new_sessions(host, cfg, state, **kw)
    save_cursor(state_dir / PENDING_FILE, advance_cursor(state, slices))
    return slices


def test_incremental_append_and_new_session_then_nothing(tmp_path):
    cfg = make_config(tmp_path)
    projects = claude_tree(tmp_path)
    sd = host_state_dir(cfg, "claude-code")
    first = bridge_cycle("claude-code", cfg, sd)
    # Subagent streams are the parent agent's tool calls: read, never memorizable alone.
    assert {s.key for s in first if s.memorizable} == {CC_SID, API_SID}
    assert {s.key for s in first} >= {
        f"{CC_SID}/subagents/agent-a1",
        f"{CC_SID}/subagents/workflows/wf_01/agent-b2",
    }
    assert promote_pending(sd)

    append(projects / "-home-dev-shop" / f"{CC_SID}.jsonl", user_line("and for a cart of one?"))
    new = projects / "-home-dev-new" / "77777777-0000-4000-8000-000000000000.jsonl"
    new.parent.mkdir()
    new.write_text(user_line("set up the release job", "7777") + "\n")
    second = bridge_cycle("claude-code", cfg, sd)
    assert {s.key: messages(s) for s in second} == {
        CC_SID: ["and for a cart of one?"],
        new.stem: ["set up the release job"],
    }
    assert promote_pending(sd)
    assert bridge_cycle("claude-code", cfg, sd) == []


def test_failed_commit_re_offers_the_same_content(tmp_path):
    cfg = make_config(tmp_path)
    claude_tree(tmp_path)
    sd = host_state_dir(cfg, "claude-code")
    first = bridge_cycle("claude-code", cfg, sd)
    # No promote: the commit failed. The next prepare sees the same slices.
    again = bridge_cycle("claude-code", cfg, sd)
    assert [s.to_dict() for s in again] == [s.to_dict() for s in first]
    assert discard_pending(sd) and not (sd / PENDING_FILE).exists()


def test_partial_last_line_waits_for_its_newline(tmp_path):
    cfg = make_config(tmp_path)
    projects = claude_tree(tmp_path)
    state = advance_cursor({}, collect_new_sessions("claude-code", cfg, {}))
    path = projects / "-home-dev-shop" / f"{CC_SID}.jsonl"
    append(path, user_line("half written"), newline=False)
    slices = collect_new_sessions("claude-code", cfg, state)
    assert all(not s.memorizable for s in slices)
    state = advance_cursor(state, slices)
    append(path, "")  # the host finishes the line
    (sl,) = collect_new_sessions("claude-code", cfg, state)
    assert messages(sl) == ["half written"]


def test_rewritten_shorter_file_is_read_again(tmp_path):
    cfg = make_config(tmp_path)
    projects = claude_tree(tmp_path)
    state = advance_cursor({}, collect_new_sessions("claude-code", cfg, {}))
    path = projects / "-home-dev-api" / f"{API_SID}.jsonl"
    path.write_text(user_line("fresh start", API_SID) + "\n")
    (sl,) = collect_new_sessions("claude-code", cfg, state)
    assert messages(sl) == ["fresh start"]


def test_tool_only_slice_advances_cursor_without_a_session(tmp_path):
    cfg = make_config(tmp_path)
    projects = claude_tree(tmp_path)
    state = advance_cursor({}, collect_new_sessions("claude-code", cfg, {}))
    tool = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
        },
    }
    append(projects / "-home-dev-api" / f"{API_SID}.jsonl", json.dumps(tool))
    (sl,) = collect_new_sessions("claude-code", cfg, state)
    assert sl.session is None and not sl.memorizable and sl.counts["tool"] == 1
    assert sl.cursor["pos"] == 3
    assert collect_new_sessions("claude-code", cfg, advance_cursor(state, [sl])) == []


def test_max_sessions_limits_memorizable_slices(tmp_path):
    cfg = make_config(tmp_path)
    claude_tree(tmp_path)
    slices = collect_new_sessions("claude-code", cfg, {}, max_sessions=2)
    assert sum(s.memorizable for s in slices) == 2


def three_sessions(tmp_path: Path) -> Path:
    """Sessions newest to oldest: the bridging run's own, then A, then B."""
    proj = tmp_path / "home" / ".claude" / "projects" / "-w"
    proj.mkdir(parents=True)
    for i, (sid, text) in enumerate(
        [("self-run", "bridge prepare"), ("sess-a", "a"), ("sess-b", "b")]
    ):
        path = proj / f"{sid}.jsonl"
        path.write_text(user_line(text, sid) + "\n")
        t = 2_000_000 - i * 1000
        os.utime(path, (t, t))
    sub = proj / "self-run" / "subagents" / "agent-1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(user_line("sub of self", "self-run") + "\n")
    return proj


def test_self_session_is_skipped_while_older_sessions_are_still_read(tmp_path):
    three_sessions(tmp_path)
    cfg = make_config(tmp_path, bridging=True, CLAUDE_CODE_SESSION_ID="self-run")
    skip = self_session_ids(cfg, "claude-code")
    assert skip == {"self-run"}
    slices = collect_new_sessions("claude-code", cfg, {}, max_sessions=2, skip_session_ids=skip)
    assert [s.session_id for s in slices] == ["sess-a", "sess-b"]


def test_without_bridging_run_nothing_is_skipped(tmp_path):
    three_sessions(tmp_path)
    cfg = make_config(tmp_path, CLAUDE_CODE_SESSION_ID="self-run")
    assert self_session_ids(cfg) == set()
    slices = collect_new_sessions("claude-code", cfg, {}, skip_session_ids=self_session_ids(cfg))
    assert {s.session_id for s in slices} == {"self-run", "sess-a", "sess-b"}


def test_claimed_sessions_stay_skipped_in_later_runs(tmp_path):
    three_sessions(tmp_path)
    cfg = make_config(tmp_path)  # a later, unscheduled run
    state = claim_sessions({}, ["self-run"])
    assert {s.session_id for s in collect_new_sessions("claude-code", cfg, state)} == {
        "sess-a",
        "sess-b",
    }
    assert len(claim_sessions({}, [str(i) for i in range(1500)])["claimed"]) == 1000


def test_self_session_warning_when_variable_is_missing(tmp_path):
    assert self_session_warning(make_config(tmp_path, bridging=True), "claude-code")
    cfg = make_config(tmp_path, bridging=True, CLAUDE_CODE_SESSION_ID="x")
    assert self_session_warning(cfg, "claude-code") is None
    assert self_session_warning(make_config(tmp_path), "claude-code") is None


def test_cursor_files_roundtrip_and_promotion_keeps_claims(tmp_path):
    d = tmp_path / "state"
    assert load_cursor(d / CURSOR_FILE) == {"version": 1, "streams": {}, "claimed": []}
    assert promote_pending(d) is False
    save_cursor(d / PENDING_FILE, {"version": 1, "streams": {"k": {"pos": 3}}, "claimed": []})
    save_cursor(d / CURSOR_FILE, claim_sessions({}, ["claimed-later"]))
    assert promote_pending(d)
    state = load_cursor(d / CURSOR_FILE)
    assert state["streams"] == {"k": {"pos": 3}} and state["claimed"] == ["claimed-later"]
    assert sorted(p.name for p in d.iterdir()) == [CURSOR_FILE]
    (d / CURSOR_FILE).write_text("{broken")
    with pytest.raises(StorageError):
        load_cursor(d / CURSOR_FILE)


def test_codex_archiving_a_session_keeps_its_cursor(tmp_path):
    home = tmp_path / "cx"
    shutil.copytree(FIX / "codex", home)
    cfg = make_config(tmp_path, CODEX_HOME=str(home))
    state = advance_cursor({}, collect_new_sessions("codex", cfg, {}))
    live = next((home / "sessions").rglob("rollout-*.jsonl"))
    shutil.move(live, home / "archived_sessions" / live.name)
    slices = collect_new_sessions("codex", cfg, state)
    assert all(not s.memorizable for s in slices)


# --- Hermes (SQLite) -----------------------------------------------------------------------


def hermes_db(tmp_path: Path, dirname: str = "hh") -> tuple[Path, object]:
    home = tmp_path / dirname
    home.mkdir(parents=True)
    db = home / "state.db"
    conn = sqlite3.connect(db)
    conn.executescript((FIX / "hermes" / "state.sql").read_text())
    conn.commit()
    conn.close()
    return db, make_config(tmp_path, HERMES_HOME=str(home))


def insert(db: Path, sid: str, role: str, content: str, ts: float = 1777999999.0) -> None:
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
        (sid, role, content, ts),
    )
    conn.commit()
    conn.close()


def test_hermes_incremental_by_row_id(tmp_path):
    db, cfg = hermes_db(tmp_path)
    state = advance_cursor({}, collect_new_sessions("hermes", cfg, {}))
    assert collect_new_sessions("hermes", cfg, state) == []
    insert(db, "20260501_080000_bb22", "user", "and /home?")
    (sl,) = collect_new_sessions("hermes", cfg, state)
    assert messages(sl) == ["and /home?"]


def test_hermes_is_read_only_and_never_blocks_a_writer(tmp_path):
    # A directory name with % and # would silently lose mode=ro in a raw path.
    db, cfg = hermes_db(tmp_path, "odd%41dir#1")
    assert "%2541" in ro_uri(db) and "%23" in ro_uri(db)
    writer = sqlite3.connect(db, timeout=0, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('20260501_080000_bb22', 'user', 'uncommitted', 1777999999.0)"
    )
    started = time.monotonic()
    slices = collect_new_sessions("hermes", cfg, {})
    assert time.monotonic() - started < 1.5
    assert "uncommitted" not in json.dumps([s.to_dict() for s in slices])
    writer.execute("COMMIT")  # not blocked by the reader
    writer.execute("BEGIN EXCLUSIVE")  # nothing of ours lingers holding a lock
    writer.execute("COMMIT")
    writer.close()
    with connect_ro(db) as conn, pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM messages")
    state = advance_cursor({}, slices)
    (sl,) = collect_new_sessions("hermes", cfg, state)
    assert messages(sl) == ["uncommitted"]


def test_hermes_compaction_copies_are_not_re_mined(tmp_path):
    db, cfg = hermes_db(tmp_path)
    state = advance_cursor({}, collect_new_sessions("hermes", cfg, {}))
    sid = "20260505_090000_aa11"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE messages SET active = 0 WHERE session_id = ?", (sid,))
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp, active)"
        " SELECT session_id, role, content, timestamp, 1 FROM messages"
        " WHERE session_id = ? AND role = 'user'",
        (sid,),
    )
    conn.commit()
    conn.close()
    insert(db, sid, "user", "now the apache logs too")
    (sl,) = collect_new_sessions("hermes", cfg, state)
    assert messages(sl) == ["now the apache logs too"]
    assert sl.counts["drop"] >= 1


def test_hermes_child_of_a_claimed_session_is_skipped(tmp_path):
    db, cfg = hermes_db(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO sessions (id, parent_session_id) VALUES ('child-1', 'self-h')")
    conn.commit()
    conn.close()
    insert(db, "self-h", "user", "bridge prepare --host hermes", 1778000000.0)
    insert(db, "child-1", "user", "continued after compression", 1778000001.0)
    cfg = make_config(
        tmp_path, bridging=True, HERMES_HOME=str(db.parent), HERMES_SESSION_ID="self-h"
    )
    got = {
        s.session_id
        for s in collect_new_sessions(
            "hermes", cfg, {}, skip_session_ids=self_session_ids(cfg, "hermes")
        )
    }
    assert got == {"20260505_090000_aa11", "20260501_080000_bb22"}


def test_sources_never_need_os_environ(tmp_path, monkeypatch):
    # Poison the process environment: a source that read it would look in the wrong place.
    monkeypatch.setenv("HOME", str(tmp_path / "wrong"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "wrong"))
    claude_tree(tmp_path)
    cfg = make_config(tmp_path)
    assert len(get_source("claude-code", cfg).list_sessions()) == 4


def test_openclaw_bridge_session_and_registered_cron_job_are_skipped(tmp_path):
    state = tmp_path / "oc"
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript((FIX / "openclaw" / "openclaw-agent.sql").read_text())
    conn.execute(
        "INSERT INTO transcript_events VALUES ('memwiki-bridge', 1, ?, 1778000000000)",
        ('{"type":"message","message":{"role":"user","content":"run the memwiki task"}}',),
    )
    conn.commit()
    conn.close()
    cfg = make_config(tmp_path, bridging=True, OPENCLAW_STATE_DIR=str(state))
    skip = self_session_ids(cfg, "openclaw")
    got = {s.session_id for s in collect_new_sessions("openclaw", cfg, {}, skip_session_ids=skip)}
    assert got == {"main/s-88", "main/s-90"}
    got = collect_new_sessions("openclaw", cfg, {}, skip_session_ids=skip | {"cron:job42"})
    assert {s.session_id for s in got} == {"main/s-88"}


# --- Stores that cannot be read ------------------------------------------------------------


def openclaw_state(tmp_path: Path) -> tuple[Path, Path]:
    state = tmp_path / "oc"
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript((FIX / "openclaw" / "openclaw-agent.sql").read_text())
    conn.commit()
    conn.close()
    return state, db


@pytest.mark.parametrize("host", ["hermes", "openclaw"])
def test_a_corrupt_store_is_reported_not_nothing_new(tmp_path, host):
    """Bug: a corrupt Hermes/OpenClaw database was skipped in silence ("nothing new")."""
    if host == "hermes":
        db, cfg = hermes_db(tmp_path)
    else:
        state, db = openclaw_state(tmp_path)
        cfg = make_config(tmp_path, OPENCLAW_STATE_DIR=str(state))
    raw, count = db.read_bytes(), len(collect_new_sessions(host, cfg, {}))
    db.write_bytes(b"garbage\n")
    warnings: list[str] = []
    assert collect_new_sessions(host, cfg, {}, warnings=warnings) == []
    (line,) = warnings
    assert str(db) in line and "file is not a database" in line
    # No slice, so no cursor moved: once the store is repaired every session is offered.
    db.write_bytes(raw)
    assert count and len(collect_new_sessions(host, cfg, {})) == count


def test_a_locked_hermes_store_is_reported_and_read_next_time(tmp_path):
    """Bug: a Hermes store locked past the busy timeout was reported as nothing new."""
    db, cfg = hermes_db(tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("BEGIN EXCLUSIVE")
    warnings: list[str] = []
    state = load_cursor(tmp_path / "none.json")
    slices = collect_new_sessions("hermes", cfg, state, warnings=warnings)
    conn.execute("ROLLBACK")
    conn.close()
    assert slices == []
    (line,) = warnings
    assert str(db) in line and "database is locked" in line and "try again later" in line
    assert advance_cursor(state, slices)["streams"] == {}
    assert len(collect_new_sessions("hermes", cfg, state)) == 2
