"""Session logs with bytes that are not UTF-8: the turn is kept, the bad byte becomes U+FFFD.

Real logs hold them: a terminal paste cut mid-character, a binary tool output written
as it came. Every host's reader is driven through the real `memwiki bridge prepare`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "hosts"
BAD = b"paste \xff\xfe here \xc3 please"  # two stray bytes and a cut two-byte character
SEEN = "paste \ufffd\ufffd here \ufffd please"
CWD = "@CWD@"  # replaced by a real repository: the project is named from it


@pytest.fixture(autouse=True)
def bm25_only(monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


def line(record: dict, cwd: Path | None = None) -> bytes:
    """One JSONL line, with the marker text replaced by the raw bad bytes."""
    raw = json.dumps(record).encode().replace(b"@BAD@", BAD)
    return raw.replace(CWD.encode(), str(cwd).encode()) + b"\n"


# host -> (relative path of the session file under --session-dir, its lines)
JSONL_HOSTS = {
    "claude-code": (
        "-home-dev-bytes-project/s1.jsonl",
        [{"type": "user", "sessionId": "s1", "cwd": CWD, "message": {
            "role": "user", "content": "@BAD@"}},
         {"type": "assistant", "sessionId": "s1", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "noted the paste"}]}}],
    ),
    "codex": (
        "2026/05/03/rollout-2026-05-03T10-02-11-0197a3c2-7e10-7b55-9f1d-3c6a8e2b4d11.jsonl",
        [
            {"type": "session_meta", "payload": {"id": "0197a3c2-7e10-7b55-9f1d-3c6a8e2b4d11",
                                                 "cwd": CWD}},
            {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "@BAD@"}]}},
            {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "noted the paste"}]}},
        ],
    ),
    "cursor": (
        "home-dev-web/agent-transcripts/c1/c1.jsonl",
        [
            {"role": "user", "message": {"content": [{"type": "text", "text": "@BAD@"}]}},
            {"role": "assistant", "message": {"content": [
                {"type": "text", "text": "noted the paste"}]}},
        ],
    ),
    "openclaw": (
        "agents/main/sessions/s-9.jsonl",
        [
            {"type": "session", "version": 3, "id": "s-9", "cwd": CWD},
            {"type": "message", "message": {"role": "user", "content": [
                {"type": "text", "text": "@BAD@"}]}},
            {"type": "message", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "noted the paste"}]}},
        ],
    ),
    "generic": (
        "chat.jsonl",
        [{"role": "user", "content": "@BAD@", "cwd": CWD},
         {"role": "assistant", "content": "noted the paste"}],
    ),
}  # fmt: skip


def prepare(run_memwiki, wiki, host: str, session_dir: Path) -> dict:
    done = run_memwiki(
        "--wiki", wiki.root, "bridge", "prepare", "--host", host,
        "--session-dir", session_dir, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def offered(data: dict) -> str:
    return "\n".join(
        Path(t["messages"]).read_bytes().decode("utf-8")  # strict: the transcript is UTF-8
        for t in data["transcripts"]
    )


@pytest.mark.parametrize("host", sorted(JSONL_HOSTS))
def test_a_line_with_a_byte_that_is_not_utf8_keeps_its_turn(tmp_path, wiki, run_memwiki, host):
    """Bug: a JSONL line holding one byte that is not UTF-8 was skipped whole (the turn lost,
    and with Claude Code's first record the session's working directory too); a line that is
    not JSON at all is still skipped."""
    rel, records = JSONL_HOSTS[host]
    project = tmp_path / "bytes-project"
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    path = tmp_path / "logs" / rel
    path.parent.mkdir(parents=True)
    # The line that is not JSON carries a bad byte too: decoding must not make it JSON.
    path.write_bytes(b"".join(line(r, project) for r in records) + b"not json \xff at all\n")
    data = prepare(run_memwiki, wiki, host, tmp_path / "logs")
    (session,) = data["sessions"]
    text = offered(data)
    assert SEEN in text and "noted the paste" in text
    assert session["counts"]["message"] == 2
    assert session["counts"]["drop"] >= 1  # the line that is not JSON
    if host != "cursor":  # Cursor records no working directory
        assert session["project"] == "bytes-project"


def test_codex_keeps_the_session_id_of_a_header_with_a_bad_byte(tmp_path):
    """Bug: a session_meta line with a byte that is not UTF-8 (in Codex's copy of the
    instructions) lost the session its id: a rollout without a UUID in its name fell back to
    the file stem, so the same session got another cursor key."""
    from memwiki.hosts.mining.codex import session_id_of

    path = tmp_path / "rollout-renamed.jsonl"
    meta = {"type": "session_meta", "payload": {"id": "the-real-id", "instructions": "@BAD@"}}
    path.write_bytes(line(meta))
    assert session_id_of(path) == "the-real-id"


def _octet_length(value):
    # The real schema's CHECKs call octet_length, which older SQLite builds lack.
    if value is None:
        return None
    return len(value.encode("utf-8")) if isinstance(value, str) else len(bytes(value))


def test_openclaw_compressed_event_with_a_bad_byte_is_mined_not_stuck(tmp_path, wiki, run_memwiki):
    """Bug: an event stored compressed (event_zstd) whose JSON held one byte that is not UTF-8
    was called undecodable: its turn was never offered and the cursor stayed before it, so
    every later event of that session was held back too, for ever."""
    import zstandard

    [real] = sorted((FIX / "real").glob("openclaw-*"))
    rel = Path(".openclaw/agents/main/agent")
    db = tmp_path / rel / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    conn.executescript((real / rel / "openclaw-agent.sql").read_text())
    sid, seq, packed = conn.execute(
        "SELECT session_id, seq, event_zstd FROM transcript_events WHERE event_zstd IS NOT NULL"
        " AND session_id NOT LIKE 'memwiki-bridge-%'"
    ).fetchone()
    event = zstandard.ZstdDecompressor().decompress(packed)
    assert b"Note for later: " in event
    event = event.replace(b"Note for later: ", BAD + b" Note for later: ", 1)
    conn.execute(
        "UPDATE transcript_events SET event_zstd = ?, event_utf8_bytes = ?"
        " WHERE session_id = ? AND seq = ?",
        (zstandard.ZstdCompressor().compress(event), len(event), sid, seq),
    )
    (last,) = conn.execute(
        "SELECT MAX(seq) FROM transcript_events WHERE session_id = ?", (sid,)
    ).fetchone()
    assert last > seq  # events after it are held back too while it is "undecodable"
    conn.commit()
    conn.close()
    data = prepare(run_memwiki, wiki, "openclaw", tmp_path / ".openclaw")
    assert data["warnings"] == []
    [session] = [s for s in data["sessions"] if s["session_id"] == f"main/{sid}"]
    assert "undecodable" not in session["counts"]
    assert SEEN + " Note for later: the billing service" in offered(data)


def test_hermes_text_with_a_bad_byte_is_mined(tmp_path, wiki, run_memwiki):
    """A Hermes row whose TEXT holds a byte that is not UTF-8 keeps its turn (guard: the
    read-only connection already decodes with replacement characters)."""
    home = tmp_path / "hermes"
    home.mkdir()
    conn = sqlite3.connect(home / "state.db")
    conn.executescript((FIX / "hermes" / "state.sql").read_text())
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('20260505_090000_aa11', 'user', CAST(? AS TEXT), 1777990000.0)",
        (BAD,),
    )
    conn.commit()
    conn.close()
    assert SEEN in offered(prepare(run_memwiki, wiki, "hermes", home))


def test_a_session_file_named_with_a_byte_that_is_not_utf8_is_mined(tmp_path, wiki, run_memwiki):
    """Bug: one session file whose name held a byte that is not UTF-8 made every `bridge
    prepare` of its host fail with an internal error (exit 70): the OS hands the byte over as
    a lone surrogate, which cannot be written. Its id is now the name with \\xNN, the same on
    every read, so the cursor moves past it once committed."""
    logs = tmp_path / "logs"
    logs.mkdir()
    records = [{"role": "user", "content": "rotate the deploy keys"},
               {"role": "assistant", "content": "noted the rotation"}]  # fmt: skip
    with open(bytes(logs) + b"/chat-\xff.jsonl", "wb") as fh:
        fh.write(b"".join(line(r) for r in records))
    data = prepare(run_memwiki, wiki, "generic", logs)
    [session] = data["sessions"]
    assert session["session_id"] == "chat-\\xff"
    assert session["source_path"] == f"{logs}/chat-\\xff.jsonl"
    assert "rotate the deploy keys" in offered(data)
    done = run_memwiki("--wiki", wiki.root, "bridge", "commit", "--host", "generic", "--json")
    assert done.returncode == 0, done.stderr
    assert prepare(run_memwiki, wiki, "generic", logs)["nothing_new"]


CHAT = [
    {"role": "user", "content": "où est la clé du serveur de staging ?"},
    {"role": "assistant", "content": "dans le coffre, rubrique staging"},
    {"role": "user", "content": "merci, et pour la prod ?"},
]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf16_log_with_a_bom_is_mined_whole(tmp_path, wiki, run_memwiki, encoding):
    """Bug: a JSONL export in UTF-16 (Windows PowerShell's `>`) was split on the byte
    b"\\n": the first record was read, every later one was misaligned and dropped as not
    JSON, without a word."""
    text = "\ufeff" + "\r\n".join(json.dumps(r, ensure_ascii=False) for r in CHAT) + "\r\n"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "chat.jsonl").write_bytes(text.encode(encoding))
    data = prepare(run_memwiki, wiki, "generic", tmp_path / "logs")
    (session,) = data["sessions"]
    assert session["counts"]["message"] == 3 and session["counts"]["drop"] == 0
    assert "merci, et pour la prod ?" in offered(data)


def test_bom_crlf_and_a_cut_last_line_mine_what_is_complete(tmp_path, wiki, run_memwiki):
    """A UTF-8 BOM and CRLF line ends are read; a last line cut mid-record (a client killed
    mid-write) is left for the next read, which takes it once it is complete."""
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in CHAT]
    log = tmp_path / "logs" / "chat.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines[:2]) + b"\r\n" + lines[2][:20])
    data = prepare(run_memwiki, wiki, "generic", tmp_path / "logs")
    assert data["sessions"][0]["counts"] == {"message": 2, "tool": 0, "drop": 0, "unrecognized": 0}
    assert "dans le coffre" in offered(data)
    done = run_memwiki("--wiki", wiki.root, "bridge", "commit", "--host", "generic", "--json")
    assert done.returncode == 0, done.stderr
    log.write_bytes(log.read_bytes() + lines[2][20:] + b"\r\n")
    data = prepare(run_memwiki, wiki, "generic", tmp_path / "logs")
    assert data["sessions"][0]["counts"]["message"] == 1
    assert "merci, et pour la prod ?" in offered(data) and "dans le coffre" not in offered(data)
