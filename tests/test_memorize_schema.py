"""Strict validation of canonical session payloads (schema 1.0)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memwiki.errors import InvalidInput
from memwiki.memorize.schema import MAX_PAYLOADS, load_sessions, parse_session

GOOD = {
    "schema_version": "1.0",
    "items": [
        {"type": "message", "role": "user", "content": "How do I run the tests?"},
        {"type": "tool_call", "name": "bash", "arguments": {"cmd": "make test"}},
        {"type": "tool_result", "name": "bash", "content": "3 passed", "is_error": False},
        {"type": "message", "role": "assistant", "content": "Run `make test`."},
    ],
}


def write(tmp_path: Path, doc: object, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def error_for(tmp_path: Path, doc: object) -> str:
    path = write(tmp_path, doc)
    with pytest.raises(InvalidInput) as exc:
        load_sessions([path])
    message = exc.value.message
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


def with_item(item: dict, index: int = 0) -> dict:
    items = [dict(it) for it in GOOD["items"]]
    items[index] = item
    return {"items": items}


def test_good_payload_normalises_items(tmp_path):
    sessions = load_sessions([write(tmp_path, GOOD)])
    assert len(sessions) == 1
    s = sessions[0]
    assert s.source_id.startswith("payload:") and len(s.source_id) == len("payload:") + 12
    assert [it["type"] for it in s.items] == ["message", "tool_call", "tool_result", "message"]
    assert len(s.messages) == 2


def test_schema_version_optional_and_arguments_default(tmp_path):
    doc = {
        "items": [
            {"type": "message", "role": "user", "content": "hi"},
            {"type": "tool_call", "name": "ls"},
            {"type": "tool_result", "content": {"files": ["a", "b"]}},
        ]
    }
    s = load_sessions([write(tmp_path, doc)])[0]
    assert s.items[1]["arguments"] == {}
    assert s.items[2]["content"] == {"files": ["a", "b"]}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({**GOOD, "session_id": "x"}, ": session_id: unknown field"),
        ({**GOOD, "schema_version": "2.0"}, ': schema_version: only "1.0"'),
        ({**GOOD, "schema_version": 1.0}, ': schema_version: only "1.0"'),
        ({"schema_version": "1.0"}, ": items: required field is missing"),
        ({"items": {}}, ": items: must be an array, got object"),
        ({"items": []}, ": items: must not be empty"),
        ([GOOD], ": payload must be a JSON object, got array"),
        (
            {"items": [{"type": "tool_call", "name": "ls"}]},
            ": items: at least one message item is required",
        ),
        (
            with_item({"type": "message", "role": "user", "content": "x", "ts": 1}, 2),
            ": items[2].ts: unknown field",
        ),
        (
            with_item({"type": "message", "role": "system", "content": "x"}, 0),
            ': items[0].role: must be "user" or "assistant"',
        ),
        (with_item({"type": "message", "content": "x"}, 0), ": items[0].role: required field"),
        (
            with_item({"type": "message", "role": "user", "content": ""}, 0),
            ": items[0].content: must not be empty",
        ),
        (
            with_item({"type": "message", "role": "user", "content": "  \n"}, 3),
            ": items[3].content: must not be empty",
        ),
        (
            with_item({"type": "message", "role": "user", "content": ["x"]}, 0),
            ": items[0].content: must be a string, got array",
        ),
        (with_item({"type": "tool_call", "name": ""}, 1), ": items[1].name: must not be empty"),
        (
            with_item({"type": "tool_call", "name": 3}, 1),
            ": items[1].name: must be a string, got number",
        ),
        (with_item({"type": "tool_call", "arguments": {}}, 1), ": items[1].name: required field"),
        (
            with_item({"type": "tool_result", "name": "bash"}, 2),
            ": items[2].content: required field is missing",
        ),
        (
            with_item({"type": "tool_result", "content": "x", "is_error": 1}, 2),
            ": items[2].is_error: must be a boolean, got number",
        ),
        (
            with_item({"type": "tool_result", "content": "x", "name": None}, 2),
            ": items[2].name: must be a string, got null",
        ),
        (with_item({"type": "note", "content": "x"}, 1), ": items[1].type: must be one of"),
        (with_item({"role": "user", "content": "x"}, 1), ": items[1].type: required field"),
        (with_item("just text", 1), ": items[1]: must be an object, got string"),
    ],
)
def test_each_rule_names_file_index_and_field(tmp_path, doc, expected):
    assert expected in error_for(tmp_path, doc)


def test_nested_unknown_fields_inside_arguments_are_data(tmp_path):
    doc = with_item({"type": "tool_call", "name": "x", "arguments": {"anything": {"goes": 1}}}, 1)
    assert load_sessions([write(tmp_path, doc)])[0].items[1]["arguments"]["anything"]["goes"] == 1


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"items": [\n  {"type": "message",}\n]}', encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad\.json: invalid JSON at line 2 column"):
        load_sessions([path])


@pytest.mark.parametrize("text", ['{"items": NaN}', '{"items": [], "items": []}'])
def test_json_extensions_and_duplicate_keys_are_refused(tmp_path, text):
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"odd\.json: invalid JSON"):
        load_sessions([path])


def test_non_utf8_names_the_byte(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(
        '{"items": [{"type": "message", "role": "user", "content": "caf\xe9"}]}'.encode("latin-1")
    )
    with pytest.raises(InvalidInput, match=r"latin1\.json: not valid UTF-8 at byte 62"):
        load_sessions([path])


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert load_sessions([path])[0].items


def test_file_count_limits(tmp_path):
    paths = [write(tmp_path, GOOD, f"s{i}.json") for i in range(MAX_PAYLOADS + 1)]
    with pytest.raises(InvalidInput, match="1 to 10 payload files, got 11"):
        load_sessions(paths)
    assert len(load_sessions(paths[:MAX_PAYLOADS])) == MAX_PAYLOADS
    with pytest.raises(InvalidInput, match="got none"):
        load_sessions([])


def test_stdin_alone_and_not_with_files(tmp_path):
    stdin = io.BytesIO(json.dumps(GOOD).encode())
    (session,) = load_sessions(["-"], stdin=stdin)
    assert session.label == "<stdin>"
    with pytest.raises(InvalidInput, match="cannot be combined"):
        load_sessions(["-", write(tmp_path, GOOD)], stdin=io.BytesIO(b"{}"))
    with pytest.raises(InvalidInput, match="cannot be combined"):
        load_sessions(["-", "-"], stdin=io.BytesIO(b"{}"))


def test_missing_file(tmp_path):
    with pytest.raises(InvalidInput, match="no such payload file"):
        load_sessions([tmp_path / "nope.json"])


def test_every_payload_is_checked_before_returning(tmp_path):
    good = write(tmp_path, GOOD, "a.json")
    bad = write(tmp_path, {"items": []}, "b.json")
    with pytest.raises(InvalidInput, match=r"b\.json: items: must not be empty"):
        load_sessions([good, bad])


def test_source_id_is_stable_per_content():
    data = json.dumps(GOOD).encode()
    assert parse_session(data, "x").source_id == parse_session(data, "y").source_id
