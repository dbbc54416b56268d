"""bridge prepare at a heavy user's scale: unchanged logs are not read, a grown log only
from where its cursor stopped (tests/bench/bridge_scale.py measures the same at 2,000 sessions)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.hosts.mining.base import get_source, read_jsonl_tail
from memwiki.hosts.mining.bridge import bridge_prepare, state_dir
from memwiki.hosts.mining.collect import collect_new_sessions
from memwiki.hosts.mining.cursors import (
    CURSOR_FILE,
    advance_cursor,
    dump_state,
    empty_state,
    load_cursor,
    save_cursor,
)

PROC_IO = Path("/proc/self/io")
pytestmark = pytest.mark.skipif(not PROC_IO.is_file(), reason="needs Linux /proc/self/io")


@pytest.fixture(autouse=True)
def bm25_only(monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


def bytes_read() -> int:
    """Bytes this process has read through read(2) so far, page cache or not (rchar)."""
    for line in PROC_IO.read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def filler(n: int) -> str:
    return " ".join(f"word{i % 97}" for i in range(n))


def claude_session(path: Path, sid: str, turns: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for t in range(turns):
        lines.append({"type": "user", "sessionId": sid, "cwd": "/home/ana/src/p",
                      "message": {"role": "user", "content": f"question {t} {filler(20)}"}})  # fmt: skip
        lines.append({"type": "assistant", "sessionId": sid, "cwd": "/home/ana/src/p",
                      "message": {"role": "assistant", "content": [
                          {"type": "text", "text": f"answer {t}"},
                          {"type": "tool_use", "id": f"t{t}", "name": "Bash",
                           "input": {"command": "ls"}}]}})  # fmt: skip
        lines.append({"type": "user", "sessionId": sid, "cwd": "/home/ana/src/p",
                      "message": {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": f"t{t}",
                           "content": filler(1500)}]}})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def codex_rollout(path: Path, sid: str, turns: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[dict] = [{"type": "session_meta", "payload": {"id": sid, "cwd": "/home/ana/p",
                          "base_instructions": {"text": filler(400)}}}]  # fmt: skip
    for t in range(turns):
        lines.append({"type": "response_item", "payload": {"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": f"q{t} {filler(10)}"}]}})  # fmt: skip
        lines.append({"type": "response_item", "payload": {"type": "function_call_output",
                      "call_id": f"c{t}", "output": filler(1500)}})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def make_home(home: Path, host: str, count: int) -> list[Path]:
    """count sessions of the host under home, oldest first, each of tens of KB."""
    paths = []
    for i in range(count):
        sid = f"00000000-0000-4000-8000-{i:012d}"
        if host == "claude-code":
            path = home / ".claude" / "projects" / f"-home-ana-p{i % 3}" / f"{sid}.jsonl"
            claude_session(path, sid, 4)
        else:
            path = home / ".codex" / "sessions" / "2026" / "12" / f"{i % 28 + 1:02d}"
            path = path / f"rollout-2026-12-01T00-00-{i:02d}-{sid}.jsonl"
            codex_rollout(path, sid, 4)
        os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))
        paths.append(path)
    return paths


def mine_everything(wiki, host: str, config) -> None:
    """The cursor a prepare and commit of every session leaves (what promote_pending stores)."""
    state = empty_state()
    slices = collect_new_sessions(host, config, state, max_sessions=10_000)
    save_cursor(state_dir(wiki, host) / CURSOR_FILE, advance_cursor(state, slices))


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_a_no_change_prepare_reads_no_log(wiki, isolated_env, host):
    paths = make_home(isolated_env, host, 40)
    smallest = min(p.stat().st_size for p in paths)
    config = load({"wiki": str(wiki.root)})
    mine_everything(wiki, host, config)
    assert bridge_prepare(wiki, host, config).nothing_new  # imports done, files listed once
    before = bytes_read()
    assert bridge_prepare(wiki, host, config).nothing_new
    read = bytes_read() - before
    # It reads its cursor (a few KB) and stats the logs. Codex used to open every rollout
    # for its session id: 40 reads of at least 8 KB.
    assert read < smallest, (read, smallest)


def test_a_grown_log_is_read_from_its_cursor_not_from_its_first_line(wiki, isolated_env):
    [path] = make_home(isolated_env, "claude-code", 1)
    claude_session(path, "big", 150)  # about 2 MB
    config = load({"wiki": str(wiki.root)})
    mine_everything(wiki, "claude-code", config)
    new = {"type": "user", "sessionId": "big", "cwd": "/home/ana/src/p",
           "message": {"role": "user", "content": "how do we rotate the keys?"}}  # fmt: skip
    with path.open("a") as f:
        f.write(json.dumps(new) + "\n")
    before = bytes_read()
    result = bridge_prepare(wiki, "claude-code", config)
    read = bytes_read() - before
    assert [s["counts"]["message"] for s in result.sessions] == [1]
    transcript = Path(result.to_dict()["transcripts"][0]["messages"]).read_text()
    assert "how do we rotate the keys?" in transcript and "question 149" not in transcript
    # The run's files and git's objects are read too, but not the log's 2 MB.
    assert read < path.stat().st_size // 4, (read, path.stat().st_size)


def lines_of(path: Path) -> list[bytes]:
    return [ln for ln in path.read_bytes().split(b"\n")[:-1]]


def test_the_offset_read_equals_the_counted_read(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xc3\xa9"}\n{"c": 3}')  # the last line still written
    lines, count, offset = read_jsonl_tail(path, 0)
    assert (lines, count, offset) == ([b'{"a": 1}', b'{"b": "\xc3\xa9"}'], 2, 21)
    with path.open("ab") as f:
        f.write(b'}\n{"d": 4}\n')
    by_offset = read_jsonl_tail(path, 2, offset)
    counted = read_jsonl_tail(path, 2)  # a cursor written before offsets were recorded
    assert by_offset == counted == ([b'{"c": 3}}', b'{"d": 4}'], 4, path.stat().st_size)


def test_an_offset_that_no_longer_ends_a_line_is_not_trusted(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    _, count, offset = read_jsonl_tail(path, 0)
    # Rewritten: one longer line where the cursor's two were; the offset is mid-line.
    path.write_bytes(b'{"a": 1, "x": 22222}\n{"c": 3}\n{"d": 4}\n')
    assert read_jsonl_tail(path, count, offset) == ([b'{"d": 4}'], 3, path.stat().st_size)
    # Cut shorter than the cursor: read again from the start, as without an offset.
    path.write_bytes(b'{"e": 5}\n')
    assert read_jsonl_tail(path, 3, offset) == ([b'{"e": 5}'], 1, 9)


def test_a_utf16_log_records_no_offset(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes('{"a": 1}\n{"b": 2}\n'.encode("utf-16"))
    assert read_jsonl_tail(path, 1, 12) == ([b'{"b": 2}'], 2, None)


def test_the_cursor_records_the_offset_and_an_old_cursor_still_reads(wiki, isolated_env):
    [path] = make_home(isolated_env, "claude-code", 1)
    config = load({"wiki": str(wiki.root)})
    source = get_source("claude-code", config)
    [ref] = source.list_sessions()
    entry = source.read(ref, None).cursor
    assert entry["off"] == path.stat().st_size and entry["pos"] == len(lines_of(path))
    with path.open("a") as f:
        f.write(json.dumps({"type": "user", "message": {"role": "user", "content": "x"}}) + "\n")
    [ref] = source.list_sessions()
    old = {k: v for k, v in entry.items() if k != "off"}
    assert source.read(ref, old).records == source.read(ref, entry).records
    assert len(source.read(ref, entry).records) == 1


def test_a_changed_rollout_is_opened_again_for_its_id(wiki, isolated_env):
    [path] = make_home(isolated_env, "codex", 1)
    config = load({"wiki": str(wiki.root)})
    mine_everything(wiki, "codex", config)
    codex_rollout(path, "11111111-2222-4333-8444-555555555555", 2)  # another session, same file
    state = load_cursor(state_dir(wiki, "codex") / CURSOR_FILE)
    slices = collect_new_sessions("codex", config, state)
    assert [s.session_id for s in slices] == ["11111111-2222-4333-8444-555555555555"]


def test_the_cursor_file_is_readable_json_one_stream_a_line(tmp_path):
    state = empty_state()
    state["claimed"] = ["s1"]
    state["streams"] = {
        f"k{i}\udcff": {"pos": i, "sig": "1:2", "path": "/p/\u00e9"} for i in range(3)
    }
    path = tmp_path / "cursor.json"
    save_cursor(path, state)
    assert load_cursor(path) == state
    text = path.read_text()
    assert text == dump_state(state) and len(text.splitlines()) == 11
    assert json.loads(dump_state({})) == {}
