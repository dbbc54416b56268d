"""A session log line that is not JSON is skipped for good: `bridge prepare` says so, once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "hosts" / "claude-code" / "projects"
SID = "1c0ffee0-aaaa-4bbb-8ccc-000000000002"


@pytest.fixture(autouse=True)
def bm25_only(monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


def user(text: str) -> str:
    return json.dumps(
        {"type": "user", "sessionId": SID, "message": {"role": "user", "content": text}}
    )


@pytest.fixture
def log(isolated_env) -> Path:
    """A real Claude Code session log (the fixture's clean one) under ~/.claude/projects."""
    target = isolated_env / ".claude" / "projects" / "-home-dev-api"
    shutil.copytree(FIX / "-home-dev-api", target)
    return target / f"{SID}.jsonl"


def prepare(cli, wiki) -> tuple[dict, list[str]]:
    code, out, err = cli(
        "--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code", "--json"
    )
    assert code == 0, err
    return json.loads(out), err.splitlines()


def test_a_line_cut_short_is_counted_and_named_in_one_warning_then_not_again(wiki, cli, log):
    # The line a crash cut short was dropped with the unrecognized records: nothing on
    # stderr, nothing in the text output; its content was lost without a word.
    good = len(log.read_text(encoding="utf-8").splitlines())
    with log.open("a", encoding="utf-8") as fh:
        fh.write(user("before the crash") + "\n")
        fh.write(user("cut short by a crash")[:40] + "\n")
        fh.write(user("after the crash") + "\n")
    data, err = prepare(cli, wiki)
    expected = (
        f"memwiki: warning: claude-code: skipped 1 line(s) that are not JSON objects in 1 session(s) "
        f"(first: {log}, line {good + 2})"
    )
    assert err == [expected]
    assert data["warnings"] == [expected.removeprefix("memwiki: ")]
    (session,) = data["sessions"]
    assert session["counts"]["not_json"] == 1 and session["counts"]["message"] == good + 2
    transcript = Path(data["transcripts"][0]["messages"]).read_text(encoding="utf-8")
    assert "before the crash" in transcript and "after the crash" in transcript
    code, _, err = cli("--wiki", wiki.root, "bridge", "commit", "--host", "claude-code")
    assert code == 0, err
    # Appended after the committed cursor (read from its byte offset): the line number is
    # still the file's, and the line passed over before is not reported again.
    with log.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n" + user("later") + "\n")
    data, err = prepare(cli, wiki)
    assert err == [
        f"memwiki: warning: claude-code: skipped 1 line(s) that are not JSON objects in 1 session(s) "
        f"(first: {log}, line {good + 4})"
    ]


def test_a_session_with_only_bad_new_lines_still_warns_and_a_clean_one_does_not(wiki, cli, log):
    data, err = prepare(cli, wiki)
    assert err == [] and data["warnings"] == []
    assert "not_json" not in data["sessions"][0]["counts"]
    code, _, err = cli("--wiki", wiki.root, "bridge", "commit", "--host", "claude-code")
    assert code == 0, err
    with log.open("a", encoding="utf-8") as fh:
        fh.write('{"type": "user", "message": \n[1, 2]\n')
    code, out, err = cli("--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code")
    assert code == 0 and out == "claude-code: nothing new to memorize\n"
    assert err.splitlines() == [
        "memwiki: warning: claude-code: skipped 2 line(s) that are not JSON objects in 1 session(s) "
        f"(first: {log}, line {len(log.read_text().splitlines()) - 1})"
    ]
