"""One test per trap that hosts.md lists: each would silently corrupt memory if missed."""

from __future__ import annotations

import json
from pathlib import Path

from memwiki.config import load
from memwiki.hosts.mining import claude_code, codex, cursor, generic, hermes, openclaw
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.collect import read_slice
from memwiki.hosts.mining.records import Verdict, parse_record

M, T, D = Verdict.MESSAGE, Verdict.TOOL, Verdict.DROP


def cc(content, kind="user", **extra):
    role = "assistant" if kind == "assistant" else "user"
    return {"type": kind, "sessionId": "s", "message": {"role": role, "content": content}, **extra}


def items(module, record):
    return module.to_items(record, module.classify(record), {})


def make_config(tmp_path: Path, **env: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home), **env})


# --- Claude Code ---------------------------------------------------------------------------


def test_claude_roles_lie_tool_result_logged_as_user_is_tool():
    rec = cc([{"type": "tool_result", "tool_use_id": "t1", "content": "42 passed"}])
    assert claude_code.classify(rec) is T
    assert items(claude_code, rec) == [{"type": "tool_result", "content": "42 passed"}]


def test_claude_thinking_before_tool_use_is_not_judged_by_first_block():
    rec = cc(
        [{"type": "thinking", "thinking": "x"}, {"type": "tool_use", "name": "Bash", "input": {}}],
        "assistant",
    )
    assert claude_code.classify(rec) is T


def test_claude_prose_wins_and_thinking_is_stripped():
    rec = cc(
        [
            {"type": "thinking", "thinking": "private reasoning"},
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "pytest"}},
        ],
        "assistant",
    )
    assert claude_code.classify(rec) is M
    out = items(claude_code, rec)
    assert out == [
        {"type": "message", "role": "assistant", "content": "Running the tests."},
        {"type": "tool_call", "name": "Bash", "arguments": {"command": "pytest"}},
    ]
    assert "private reasoning" not in json.dumps(out)


def test_claude_thinking_only_image_only_and_empty_are_dropped():
    assert claude_code.classify(cc([{"type": "thinking", "thinking": "x"}], "assistant")) is D
    assert claude_code.classify(cc([{"type": "image", "source": {}}])) is D
    assert claude_code.classify(cc([], "assistant")) is D


def test_claude_meta_records_are_dropped_string_or_blocks():
    assert (
        claude_code.classify(cc("<local-command-caveat>x</local-command-caveat>", isMeta=True)) is D
    )
    assert claude_code.classify(cc([{"type": "text", "text": "injected"}], isMeta=True)) is D
    assert claude_code.classify(cc("a real question")) is M


def test_claude_non_conversation_types_are_dropped():
    for kind in (
        "summary",
        "system",
        "attachment",
        "queue-operation",
        "file-history-snapshot",
        "last-prompt",
        "pr-link",
        "ai-title",
        "custom-title",
        "progress",
        "mode",
    ):
        assert (
            claude_code.classify({"type": kind, "message": {"role": "user", "content": "x"}}) is D
        )
    assert claude_code.classify({"type": "summary", "summary": "Empty-cart fix"}) is D


def test_claude_hook_injected_memory_is_not_re_mined():
    # Memory that the UserPromptSubmit hook injected comes back as an attachment or meta record.
    attachment = {
        "type": "attachment",
        "attachment": {"type": "hook_additional_context", "content": ["## Memory (memwiki)"]},
    }
    meta = cc([{"type": "text", "text": "## Memory (memwiki)"}], isMeta=True)
    system = {"type": "system", "subtype": "hook", "content": "## Memory (memwiki)"}
    assert {claude_code.classify(r) for r in (attachment, meta, system)} == {D}


def test_claude_subagent_owner_is_first_directory_under_slug(tmp_path):
    root = tmp_path / "projects" / "-p"
    deep = root / "owner-1" / "subagents" / "workflows" / "wf_9" / "nested" / "agent-z.jsonl"
    deep.parent.mkdir(parents=True)
    deep.write_text(json.dumps(cc("sub task")) + "\n")
    (root / "owner-1" / "subagents" / "journal.jsonl").write_text('{"event":"start"}\n')
    (root / "owner-1" / "tool-results").mkdir()
    (root / "owner-1" / "tool-results" / "x.txt").write_text("out\n")
    refs = get_source("claude-code", make_config(tmp_path), tmp_path / "projects").list_sessions()
    assert [(r.session_id, r.path.name) for r in refs] == [("owner-1", "agent-z.jsonl")]


def test_unparseable_and_non_object_lines_drop_without_raising():
    for raw in (b"{not json", b"[1,2]", b"42", b"\xff\xfe", b'{"a": NaN}', b'"str"'):
        assert parse_record(raw) is None


# --- Codex ---------------------------------------------------------------------------------


def cx_user(*texts):
    content = [{"type": "input_text", "text": t} for t in texts]
    return {
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": content},
    }


def test_codex_injected_context_each_record_or_packed():
    assert (
        codex.classify(cx_user("<environment_context>\n<cwd>/x</cwd>\n</environment_context>")) is D
    )
    assert codex.classify(cx_user("# AGENTS.md instructions for /x\n\nrules")) is D
    packed = cx_user(
        "  <environment_context>x</environment_context>", "<user_instructions>u</user_instructions>"
    )
    assert codex.classify(packed) is D
    assert codex.classify(cx_user("<turn_aborted>\n</turn_aborted>")) is D


def test_codex_one_prose_item_keeps_the_record_without_the_injection():
    rec = cx_user("<environment_context>x</environment_context>", "fix the flaky test")
    assert codex.classify(rec) is M
    assert items(codex, rec) == [
        {"type": "message", "role": "user", "content": "fix the flaky test"}
    ]


def test_codex_mid_text_marker_does_not_count():
    assert codex.classify(cx_user("what is <environment_context> for?")) is M


def test_codex_assistant_text_starting_with_marker_is_kept():
    rec = {
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "<environment_context> is injected"}],
        },
    }
    assert codex.classify(rec) is M


def test_codex_event_msg_echoes_and_metadata_drop():
    for rec in (
        {"type": "event_msg", "payload": {"type": "user_message", "message": "dup"}},
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "dup"}},
        {"type": "session_meta", "payload": {"id": "x"}},
        {"type": "turn_context", "payload": {"cwd": "/"}},
        {"type": "response_item", "payload": {"type": "reasoning", "summary": []}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "x"}],
            },
        },
    ):
        assert codex.classify(rec) is D, rec


def test_codex_session_id_comes_from_session_meta_not_file_name(tmp_path):
    path = tmp_path / "rollout-2026-05-03T10-02-11-aaaaaaaa-0000-4000-8000-000000000000.jsonl"
    path.write_text(json.dumps({"type": "session_meta", "payload": {"id": "real-id"}}) + "\n")
    assert codex.session_id_of(path) == "real-id"


# --- Cursor --------------------------------------------------------------------------------


def test_cursor_prose_with_tool_blocks_is_conversation():
    rec = {
        "role": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": "Updating package.json."},
                {"type": "tool_use", "name": "StrReplace", "input": {"path": "package.json"}},
            ]
        },
    }
    assert cursor.classify(rec) is M
    assert [it["type"] for it in items(cursor, rec)] == ["message", "tool_call"]


def test_cursor_globs_only_agent_transcripts(tmp_path):
    proj = tmp_path / "projects" / "home-x"
    (proj / "terminals").mkdir(parents=True)
    (proj / "terminals" / "1.jsonl").write_text('{"role":"user","message":{"content":"ls"}}\n')
    (proj / "canvases").mkdir()
    (proj / "canvases" / "c.jsonl").write_text('{"role":"user","message":{"content":"x"}}\n')
    refs = get_source("cursor", make_config(tmp_path), tmp_path / "projects").list_sessions()
    assert refs == []


# --- OpenClaw ------------------------------------------------------------------------------


def test_openclaw_tool_call_only_assistant_is_tool_and_entries_drop():
    call = {
        "type": "message",
        "message": {"role": "assistant", "content": [{"type": "toolCall", "name": "read"}]},
    }
    assert openclaw.classify(call) is T
    for kind in (
        "session",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "reset",
        "label",
    ):
        assert openclaw.classify({"type": kind, "message": {"role": "user", "content": "x"}}) is D


def test_openclaw_skips_trajectory_checkpoint_and_import_archive(tmp_path):
    sessions = tmp_path / "state" / "agents" / "a1" / "sessions"
    (sessions / "session-sqlite-import-archive").mkdir(parents=True)
    line = '{"type":"message","message":{"role":"user","content":"hi"}}\n'
    for name in (
        "x.trajectory.jsonl",
        "x.checkpoint.3.jsonl",
        "session-sqlite-import-archive/y.jsonl",
        "x-topic-42.jsonl",
    ):
        (sessions / name).write_text(line)
    refs = get_source("openclaw", make_config(tmp_path), tmp_path / "state").list_sessions()
    assert [r.session_id for r in refs] == ["a1/x-topic-42"]


# --- Hermes --------------------------------------------------------------------------------


def test_hermes_assistant_with_only_tool_calls_is_tool_and_system_drops():
    assert hermes.classify({"role": "assistant", "tool_calls": '[{"id":"c","function":{}}]'}) is T
    assert hermes.classify({"role": "system", "content": "You are Hermes."}) is D
    assert hermes.classify({"role": "session_meta", "content": "{}"}) is D
    assert hermes.classify({"role": "assistant", "content": ""}) is D


# --- Generic -------------------------------------------------------------------------------


def test_generic_unknown_shapes_are_dropped_and_counted(tmp_path):
    (tmp_path / "s.jsonl").write_text(
        '{"event":"x"}\n{"role":"user","content":"hello"}\n{"text":"y"}\n'
    )
    src = get_source("generic", make_config(tmp_path), tmp_path)
    sl = read_slice(src, src.list_sessions()[0], None)
    assert sl.counts == {"message": 1, "tool": 0, "drop": 2, "unrecognized": 2}
    assert generic.dialect({"event": "x"}) is None


def test_generic_skips_tooling_directories(tmp_path):
    for d in (".git", "node_modules", ".cache", ".npm"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "s.jsonl").write_text('{"role":"user","content":"hello"}\n')
    assert get_source("generic", make_config(tmp_path), tmp_path).list_sessions() == []
