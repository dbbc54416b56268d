"""Every host reader on mutated real logs: a result or a one-line error, never a traceback.

The fixtures under tests/fixtures/hosts/ are real-shaped logs of each host. Each example
copies one host's tree, mutates it the way a crashed writer, a new client version or a
hostile file would (lines cut, bytes flipped, fields of the wrong type, garbage rows,
a damaged database) and runs the whole read path: list the sessions, read and classify
every stream, convert to schema-1.0 items and validate them as memorize would.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki.config import load
from memwiki.errors import MemwikiError
from memwiki.hosts.mining.base import get_source
from memwiki.hosts.mining.bridge import to_session
from memwiki.hosts.mining.collect import collect_new_sessions, read_slice

FIX = Path(__file__).parent / "fixtures" / "hosts"
# Small in the default suite; MEMWIKI_FUZZ_EXAMPLES=500 for a deep run.
EXAMPLES = int(os.environ.get("MEMWIKI_FUZZ_EXAMPLES", "25"))

# A JSON value of any shape, including the awkward ones (huge ints, deep nesting).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def _lay_out(host: str, root: Path) -> tuple[Path, list[Path]]:
    """Copy a host's fixtures under root: (session_dir, files whose bytes may be mutated)."""
    shutil.copytree(FIX / host, root / host)
    base = root / host
    if host == "openclaw":
        db = base / "agents/main/agent/openclaw-agent.sqlite"
        _build(FIX / "openclaw" / "openclaw-agent.sql", db)
    if host == "hermes":
        _build(FIX / "hermes" / "state.sql", base / "state.db")
    location = base / "projects" if host in ("claude-code", "cursor") else base
    return location, sorted(p for p in base.rglob("*") if p.suffix == ".jsonl")


def _build(sql: Path, db: Path) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(sql.read_text())
    conn.commit()
    conn.close()


def _mutate_record(data: st.DataObject, record: Any) -> Any:
    """Replace or delete one value somewhere inside a parsed record."""
    if not isinstance(record, dict | list) or not record or data.draw(st.integers(0, 4)) == 0:
        return data.draw(json_values)
    keys = list(record) if isinstance(record, dict) else list(range(len(record)))
    key = data.draw(st.sampled_from(keys))
    action = data.draw(st.sampled_from(["replace", "recurse", "delete"]))
    if action == "delete":
        del record[key]
    elif action == "recurse":
        record[key] = _mutate_record(data, record[key])
    else:
        record[key] = data.draw(json_values)
    return record


def _mutate_lines(data: st.DataObject, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    for _ in range(data.draw(st.integers(1, 3))):
        if not lines:
            lines = [b""]
        i = data.draw(st.integers(0, len(lines) - 1))
        kind = data.draw(
            st.sampled_from(
                ["record", "record", "record", "cut", "bytes", "drop", "dup", "garbage", "bom"]
            )
        )
        if kind == "record":
            try:
                record = json.loads(lines[i])
            except ValueError:
                continue
            lines[i] = json.dumps(_mutate_record(data, record)).encode()
        elif kind == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]))))]
        elif kind == "bytes":
            pos = data.draw(st.integers(0, len(lines[i])))
            lines[i] = (
                lines[i][:pos] + data.draw(st.binary(min_size=1, max_size=8)) + lines[i][pos:]
            )
        elif kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "garbage":
            lines.insert(i, data.draw(st.binary(max_size=40)).replace(b"\n", b""))
        else:
            lines[i] = b"\xef\xbb\xbf" + lines[i]
    return b"\n".join(lines)


def _mutate_db(data: st.DataObject, db: Path, table: str, columns: list[str]) -> None:
    conn = sqlite3.connect(db)
    try:
        rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
        for _ in range(data.draw(st.integers(1, 3))):
            if not rowids:
                break
            rowid = data.draw(st.sampled_from(rowids))
            column = data.draw(st.sampled_from(columns))
            (current,) = conn.execute(
                f"SELECT {column} FROM {table} WHERE rowid = ?", (rowid,)
            ).fetchone()
            if isinstance(current, str) and current.startswith("{") and data.draw(st.booleans()):
                value: Any = json.dumps(_mutate_record(data, json.loads(current)))
            else:
                value = data.draw(
                    st.none()
                    | st.integers(-(2**63), 2**63 - 1)
                    | st.text(max_size=40)
                    | st.binary(max_size=20)
                    | json_values.map(json.dumps)
                )
            try:
                conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (value, rowid))
            except sqlite3.IntegrityError:
                continue  # a NOT NULL or key constraint: the host could not have written it
        conn.commit()
    finally:
        conn.close()


DB_TABLES = {
    "hermes": (
        "state.db",
        [
            ("messages", ["role", "content", "tool_calls", "tool_name", "tool_call_id", "timestamp",
                          "session_id", "active", "compacted", "finish_reason"]),
            ("sessions", ["parent_session_id", "started_at", "ended_at", "source"]),
        ],
    ),
    "openclaw": (
        "agents/main/agent/openclaw-agent.sqlite",
        [
            ("transcript_events", ["event_json", "seq", "created_at", "session_id"]),
            ("session_windows", ["session_key", "transcript_updated_at"]),
            ("transcript_rewrite_watermarks", ["generation"]),
        ],
    ),
}  # fmt: skip


def _read_everything(host: str, location: Path, home: Path) -> None:
    """The whole read path, as `memwiki hosts collect` and the bridge run it."""
    cfg = load(options={"wiki": str(home / "wiki")}, environ={"HOME": str(home)})
    slices = collect_new_sessions(host, cfg, {}, location, max_sessions=50)
    for sl in slices:
        json.dumps(sl.to_dict(), allow_nan=False)
        if sl.memorizable:
            to_session(host, sl)
    # And from each stream's new cursor: an incremental read must hold up as well.
    source = get_source(host, cfg, location)
    cursors = {sl.key: sl.cursor for sl in slices}
    for ref in source.list_sessions():
        read_slice(source, ref, cursors.get(ref.key))


def _one_line_or_result(host: str, location: Path, home: Path) -> None:
    try:
        _read_everything(host, location, home)
    except MemwikiError as exc:
        message = str(exc)
        assert message.strip() and "\n" not in message, repr(message)


HOSTS = ["claude-code", "codex", "cursor", "openclaw", "generic", "hermes"]


@pytest.mark.parametrize("host", HOSTS)
def test_unmutated_fixtures_read_cleanly(host, tmp_path):
    location, _ = _lay_out(host, tmp_path)
    _read_everything(host, location, tmp_path / "home")


@pytest.mark.parametrize("host", [h for h in HOSTS if h != "hermes"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_jsonl_readers_survive_mutated_logs(host, data):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        location, files = _lay_out(host, root)
        target = data.draw(st.sampled_from(files))
        target.write_bytes(_mutate_lines(data, target.read_bytes()))
        _one_line_or_result(host, location, root / "home")


@pytest.mark.parametrize("host", ["hermes", "openclaw"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sqlite_readers_survive_mutated_rows(host, data):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        location, _ = _lay_out(host, root)
        rel, tables = DB_TABLES[host]
        table, columns = data.draw(st.sampled_from(tables))
        _mutate_db(data, root / host / rel, table, columns)
        _one_line_or_result(host, location, root / "home")


@pytest.mark.parametrize("host", ["hermes", "openclaw"])
@settings(
    max_examples=max(5, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data())
def test_sqlite_readers_survive_damaged_database_files(host, data):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        location, _ = _lay_out(host, root)
        db = root / host / DB_TABLES[host][0]
        raw = bytearray(db.read_bytes())
        if data.draw(st.booleans()):
            del raw[data.draw(st.integers(0, len(raw))) :]
        else:
            for _ in range(data.draw(st.integers(1, 16))):
                raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        db.write_bytes(bytes(raw))
        _one_line_or_result(host, location, root / "home")


@settings(max_examples=EXAMPLES * 8, deadline=None)
@given(
    value=json_values,
    cut=st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3),
)
def test_parsed_records_are_always_text(value: Any, cut: str) -> None:
    # Whatever escapes a log line holds (lone surrogates included), every string of the
    # parsed record, keys too, can be written as UTF-8; records without any are unchanged.
    from memwiki.hosts.mining.records import parse_record

    record = {"a" + cut: value, "b": ["x" + cut, {"c": cut + "y"}]}
    parsed = parse_record(json.dumps(record))
    assert parsed is not None
    json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    if not cut and not _has_lone(value):
        assert parsed == record


def _has_lone(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
