"""Per-host fixture logs classify exactly as expected and convert to strict schema-1.0 items."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.hosts.mining import claude_code, codex, cursor, generic, hermes, openclaw
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.collect import collect_new_sessions, read_slice
from memwiki.hosts.mining.records import parse_record

FIX = Path(__file__).parent / "fixtures" / "hosts"
EXPECTED = json.loads((FIX / "expected.json").read_text())
CC_SID = "9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90"
ITEM_KEYS = {
    "message": ({"type", "role", "content"}, set()),
    "tool_call": ({"type", "name", "arguments"}, set()),
    "tool_result": ({"type", "content"}, {"name", "is_error"}),
}


def make_config(tmp_path: Path, **env: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home), **env})


def check_session(session: dict) -> None:
    """The strict schema-1.0 shape: no field beyond the allowed ones, anywhere."""
    assert set(session) == {"schema_version", "items"}
    assert session["schema_version"] == "1.0"
    assert any(it["type"] == "message" for it in session["items"])
    for item in session["items"]:
        required, optional = ITEM_KEYS[item["type"]]
        assert required <= set(item) <= required | optional, item
        if item["type"] == "message":
            assert item["role"] in ("user", "assistant") and item["content"].strip()
        if item["type"] == "tool_call":
            assert isinstance(item["name"], str) and item["name"]
    json.dumps(session, allow_nan=False)
    try:
        from memwiki.memorize.schema import validate_payload
    except ImportError:
        return
    validate_payload(session, "slice")


def verdicts_of(module, path: Path) -> list[str]:
    out = []
    for raw in path.read_bytes().split(b"\n")[:-1]:
        rec = parse_record(raw)
        out.append("drop" if rec is None else module.classify(rec).value)
    return out


@pytest.mark.parametrize(
    ("host", "module"),
    [
        ("claude-code", claude_code),
        ("codex", codex),
        ("cursor", cursor),
        ("openclaw", openclaw),
        ("generic", generic),
    ],
)
def test_jsonl_fixtures_classify_exactly(host, module):
    for rel, expected in EXPECTED[host].items():
        assert verdicts_of(module, FIX / host / rel) == expected, rel


def copy_host(tmp_path: Path, host: str, dest: Path) -> Path:
    shutil.copytree(FIX / host, dest, dirs_exist_ok=True)
    return dest


def build_db(sql_file: Path, db: Path) -> Path:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(sql_file.read_text())
    conn.commit()
    conn.close()
    return db


def test_claude_code_default_location_and_subagent_attribution(tmp_path):
    cfg = make_config(tmp_path)
    copy_host(tmp_path, "claude-code", tmp_path / "home" / ".claude")
    refs = get_source("claude-code", cfg).list_sessions()
    by_key = {r.key: r for r in refs}
    assert set(by_key) == {
        CC_SID,
        "1c0ffee0-aaaa-4bbb-8ccc-000000000002",
        f"{CC_SID}/subagents/agent-a1",
        f"{CC_SID}/subagents/workflows/wf_01/agent-b2",
    }
    # The owner is the first directory under the slug, not the parent directory.
    assert by_key[f"{CC_SID}/subagents/workflows/wf_01/agent-b2"].session_id == CC_SID
    assert by_key[f"{CC_SID}/subagents/agent-a1"].session_id == CC_SID


def test_claude_config_dir_moves_the_tree(tmp_path):
    moved = tmp_path / "elsewhere"
    cfg = make_config(tmp_path, CLAUDE_CONFIG_DIR=str(moved))
    copy_host(tmp_path, "claude-code", moved)
    assert len(get_source("claude-code", cfg).list_sessions()) == 4
    assert claude_code.instruction_file(cfg) == moved / "CLAUDE.md"
    assert claude_code.settings_file(cfg) == moved / "settings.json"


def test_claude_code_slice_items(tmp_path):
    cfg = make_config(tmp_path)
    src = get_source("claude-code", cfg, FIX / "claude-code" / "projects")
    ref = next(r for r in src.list_sessions() if r.key == CC_SID)
    sl = read_slice(src, ref, None)
    check_session(sl.session)
    items = sl.session["items"]
    assert items[0] == {
        "type": "message",
        "role": "user",
        "content": "why does checkout 500 on an empty cart?",
    }
    assert {"type": "tool_call", "name": "Grep", "arguments": {"pattern": "def checkout"}} in items
    # Tool output logged with role "user" is a tool_result, never a user message.
    assert {
        "type": "tool_result",
        "content": "cart/views.py:88: def checkout(request):",
        "name": "Grep",
    } in items
    assert {
        "type": "tool_result",
        "content": "File does not exist.",
        "name": "Read",
        "is_error": True,
    } in items
    texts = [it["content"] for it in items if it["type"] == "message"]
    assert not any("secret plan" in t or "look at the view" in t for t in texts)
    assert not any("memwiki" in t or "Caveat" in t for t in texts)
    # line 15 is not JSON and line 16 a JSON array: both counted apart as not_json
    assert sl.counts == {"message": 3, "tool": 3, "drop": 16, "unrecognized": 2, "not_json": 2}
    assert sl.not_json_line == 15
    assert sl.cursor["pos"] == 22


def test_codex_session_id_and_items(tmp_path):
    cfg = make_config(tmp_path, CODEX_HOME=str(tmp_path / "cx"))
    copy_host(tmp_path, "codex", tmp_path / "cx")
    src = get_source("codex", cfg)
    refs = src.list_sessions()
    # Ids come from session_meta (the archived file's stem carries a different UUID).
    assert {r.session_id for r in refs} == {
        "0197a3c2-7e10-7b55-9f1d-3c6a8e2b4d10",
        "0197a3c2-0000-7b55-9f1d-3c6a8e2b4d11",
    }
    main = next(r for r in refs if r.session_id.endswith("4d10"))
    sl = read_slice(src, main, None)
    check_session(sl.session)
    msgs = [it["content"] for it in sl.session["items"] if it["type"] == "message"]
    assert msgs == [
        "add a /healthz route",
        "also add a test for it",
        "why does the log say <environment_context> here?",
        "Added GET /healthz returning 200 and a test.",
    ]
    calls = [it for it in sl.session["items"] if it["type"] == "tool_call"]
    assert calls[0] == {
        "type": "tool_call",
        "name": "shell",
        "arguments": {"command": ["bash", "-lc", "rg -n router"]},
    }
    results = [it for it in sl.session["items"] if it["type"] == "tool_result"]
    assert results[0]["name"] == "shell" and results[1]["name"] == "apply_patch"


def test_codex_session_id_falls_back_to_stem_uuid(tmp_path):
    path = tmp_path / "rollout-2026-01-01T00-00-00-11111111-2222-4333-8444-555555555555.jsonl"
    path.write_text(
        '{"type":"response_item","payload":{"type":"message","role":"user","content":"hi"}}\n'
    )
    assert codex.session_id_of(path) == "11111111-2222-4333-8444-555555555555"


def test_cursor_only_agent_transcripts_and_unwrapped_query(tmp_path):
    cfg = make_config(tmp_path)
    copy_host(tmp_path, "cursor", tmp_path / "home" / ".cursor")
    src = get_source("cursor", cfg)
    refs = src.list_sessions()
    kid = "3f2a9c1e-1111-4222-8333-444455556666"
    assert sorted(r.key for r in refs) == sorted(
        [
            f"home-dev-web/agent-transcripts/{kid}/{kid}",
            f"home-dev-web/agent-transcripts/{kid}/subagents/sub-01",
        ]
    )
    assert {r.session_id for r in refs} == {kid}
    main = next(r for r in refs if "subagents" not in r.key)
    sl = read_slice(src, main, None)
    check_session(sl.session)
    items = sl.session["items"]
    assert items[0] == {"type": "message", "role": "user", "content": "bump eslint to v9"}
    assert items[1] == {"type": "message", "role": "assistant", "content": "Updating package.json."}
    assert items[2] == {
        "type": "tool_call",
        "name": "StrReplace",
        "arguments": {"path": "package.json"},
    }


def test_openclaw_database_wins_and_legacy_skips(tmp_path):
    state = tmp_path / "oc"
    cfg = make_config(tmp_path, OPENCLAW_STATE_DIR=str(state))
    copy_host(tmp_path, "openclaw", state)
    build_db(
        FIX / "openclaw" / "openclaw-agent.sql", state / "agents/main/agent/openclaw-agent.sqlite"
    )
    src = get_source("openclaw", cfg)
    refs = {r.key: r for r in src.list_sessions()}
    assert set(refs) == {"main/s-77", "main/s-88", "main/s-90"}
    assert refs["main/s-88"].path.suffix == ".sqlite"  # the database wins over s-88.jsonl
    assert "cron:job42" in refs["main/s-90"].aliases
    for key, expected in EXPECTED["openclaw-db"].items():
        records = src.read(refs[key], None).records
        assert [openclaw.classify(parse_record(r)).value for r in records] == expected
    sl = read_slice(src, refs["main/s-77"], None)
    check_session(sl.session)
    assert {"type": "tool_result", "content": "12 messages", "name": "read", "is_error": False} in (
        sl.session["items"]
    )


def test_openclaw_home_replaces_home(tmp_path):
    cfg = make_config(tmp_path, OPENCLAW_HOME=str(tmp_path / "svc"))
    assert openclaw.state_dir(cfg) == tmp_path / "svc" / ".openclaw"


def test_openclaw_rewrite_generation_resets_cursor(tmp_path):
    state = tmp_path / "oc"
    cfg = make_config(tmp_path, OPENCLAW_STATE_DIR=str(state))
    db = build_db(
        FIX / "openclaw" / "openclaw-agent.sql", state / "agents/main/agent/openclaw-agent.sqlite"
    )
    src = get_source("openclaw", cfg)
    ref = next(r for r in src.list_sessions() if r.key == "main/s-88")
    first = read_slice(src, ref, None)
    assert (
        first.cursor["pos"] == 5 and first.cursor["generation"] == "0"
    )  # compared as text, never parsed
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM transcript_events WHERE session_id='s-88'")
    conn.execute(
        "INSERT INTO transcript_events VALUES ('s-88', 1, ?, 1777999000000)",
        ('{"type":"message","id":"r1","message":{"role":"user","content":"rewritten turn"}}',),
    )
    conn.execute("UPDATE transcript_rewrite_watermarks SET generation=1 WHERE session_id='s-88'")
    conn.commit()
    conn.close()
    ref = next(r for r in src.list_sessions() if r.key == "main/s-88")
    again = read_slice(src, ref, first.cursor)
    assert [it["content"] for it in again.session["items"]] == ["rewritten turn"]


def test_hermes_rows_classify_and_convert(tmp_path):
    home = tmp_path / "hh"
    cfg = make_config(tmp_path, HERMES_HOME=str(home))
    build_db(FIX / "hermes" / "state.sql", home / "state.db")
    src = get_source("hermes", cfg)
    refs = src.list_sessions()
    assert [r.session_id for r in refs] == ["20260505_090000_aa11", "20260501_080000_bb22"]
    for ref in refs:
        records = src.read(ref, None).records
        assert [hermes.classify(r).value for r in records] == EXPECTED["hermes"][ref.session_id]
        assert all(None not in r.values() for r in records)
    sl = read_slice(src, refs[0], None)
    check_session(sl.session)
    items = sl.session["items"]
    assert items[1] == {
        "type": "tool_call",
        "name": "terminal",
        "arguments": {"command": "logrotate -f /etc/logrotate.d/nginx"},
    }
    assert items[2] == {"type": "tool_result", "content": "rotated 4 files", "name": "terminal"}
    assert hermes.instruction_file(cfg) == home / "SOUL.md"


def test_hermes_profiles_are_read(tmp_path):
    home = tmp_path / "hh"
    cfg = make_config(tmp_path, HERMES_HOME=str(home))
    build_db(FIX / "hermes" / "state.sql", home / "profiles" / "work" / "state.db")
    keys = {r.key for r in get_source("hermes", cfg).list_sessions()}
    assert "profiles/work:20260505_090000_aa11" in keys


def test_generic_counts_unrecognized(tmp_path):
    cfg = make_config(tmp_path)
    src = get_source("generic", cfg, FIX / "generic")
    refs = {r.key: r for r in src.list_sessions()}
    sl = read_slice(src, refs["mixed"], None)
    check_session(sl.session)
    assert sl.counts == {"message": 5, "tool": 5, "drop": 5, "unrecognized": 3, "not_json": 1}
    assert sl.not_json_line == 15
    empty = read_slice(src, refs["unknown-only"], None)
    assert empty.session is None and empty.counts["unrecognized"] == 2
    report = generic.sniff(FIX / "generic")
    assert report["memorizable"] and report["dialects"]["unrecognized"] == 5


def test_generic_without_session_dir_finds_nothing(tmp_path):
    assert collect_new_sessions("generic", make_config(tmp_path), {}) == []


def test_newest_first_order(tmp_path):
    cfg = make_config(tmp_path)
    root = copy_host(tmp_path, "claude-code", tmp_path / "home" / ".claude") / "projects"
    old = root / "-home-dev-shop" / f"{CC_SID}.jsonl"
    new = root / "-home-dev-api" / "1c0ffee0-aaaa-4bbb-8ccc-000000000002.jsonl"
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(new, (2_000_000, 2_000_000))
    keys = [r.key for r in get_source("claude-code", cfg).list_sessions()]
    assert keys.index(new.stem) < keys.index(old.stem)
