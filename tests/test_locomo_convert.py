"""The LoCoMo converter, on the real benchmark files (skipped when they are absent)."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import frontmatter
import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "eval" / "locomo"
CONVERTER = REPO / "examples" / "locomo" / "convert.py"

_spec = importlib.util.spec_from_file_location("locomo_convert", CONVERTER)
assert _spec and _spec.loader
convert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(convert)

needs_data = pytest.mark.skipif(
    not (SOURCE / "30.json").is_file(),
    reason=f"LoCoMo data not found at {SOURCE} (evaluation data, not part of the repository)",
)

LINE = re.compile(r"^\*\*([^*]+)\*\* \(D(\d+):(\d+)\):( .*)?$")


def test_parse_evidence_tolerates_malformed_ids() -> None:
    assert convert.parse_evidence(["D3:5"]) == [(3, 5)]
    assert convert.parse_evidence(["D8:6; D9:17"]) == [(8, 6), (9, 17)]
    assert convert.parse_evidence(["D9:1 D4:4 D4:6"]) == [(9, 1), (4, 4), (4, 6)]
    assert convert.parse_evidence(["D:11:26", "D", " D2 : 7 "]) == [(11, 26), (2, 7)]
    assert convert.parse_evidence([]) == []


def test_converter_uses_only_the_standard_library() -> None:
    tree = ast.parse(CONVERTER.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    assert modules - {"__future__"} <= sys.stdlib_module_names, modules


@needs_data
def test_one_conversation(tmp_path: Path) -> None:
    raw = json.loads((SOURCE / "30.json").read_text(encoding="utf-8"))
    sessions = sorted(
        int(k.split("_")[1]) for k, v in raw.items() if re.fullmatch(r"session_\d+", k) and v
    )
    sessions_written, kept = convert.convert_conversation(SOURCE, "30", tmp_path)
    root = tmp_path / "30"
    files = sorted((root / "memory").glob("*.md"))
    assert sessions_written == len(sessions) == len(files) == 19

    speakers = {raw["speaker_a"], raw["speaker_b"]}
    for n in sessions:
        path = root / "memory" / f"30-session-{n}.md"
        post = frontmatter.load(path)
        assert post["name"] == path.stem
        assert raw[f"session_{n}_date_time"] in post["description"]
        assert all(s in post["description"] for s in speakers)
        lines = post.content.splitlines()
        turns = raw[f"session_{n}"]
        assert len(lines) == len(turns)
        for line, turn in zip(lines, turns, strict=True):
            match = LINE.match(line)
            assert match, line
            assert match.group(1) == turn["speaker"] and match.group(1) in speakers
            assert f"D{match.group(2)}:{match.group(3)}" == turn["dia_id"]
            assert int(match.group(2)) == n
            caption = turn.get("blip_caption")
            if caption:
                assert line.endswith(f" [image: {caption}]")
            else:
                assert "[image:" not in line
        # Annotations are never indexed.
        text = path.read_text(encoding="utf-8")
        for summary in (raw.get(f"session_{n}_summary"), raw.get(f"session_{n}_observation")):
            if isinstance(summary, str) and summary:
                assert summary not in text

    expected = [q for q in raw["qa"] if q.get("category") != 5 and q.get("evidence")]
    queries = [json.loads(ln) for ln in (root / "queries.jsonl").read_text().splitlines()]
    assert kept == len(queries) == len(expected) == 81
    for q, src in zip(queries, expected, strict=True):
        assert q["query"] == src["question"]
        assert q["conversation"] == "30" and q["category"] == src["category"]
        assert q["relevant"] and all((root / rel).is_file() for rel in q["relevant"])
        gold = {int(e.split(":")[0][1:]) for e in src["evidence"]}
        assert {int(rel.rsplit("-", 1)[1][:-3]) for rel in q["relevant"]} == gold


@needs_data
def test_totals_over_all_ten() -> None:
    assert convert.conversation_ids(SOURCE, "all") == [
        "26", "30", "41", "42", "43", "44", "47", "48", "49", "50"
    ]  # fmt: skip
    assert convert.count_questions(SOURCE, "all") == 1536
    dev, test = convert.count_questions(SOURCE, "dev"), convert.count_questions(SOURCE, "test")
    assert dev + test == 1536


@needs_data
def test_cli_split_and_rerun(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert convert.main([str(SOURCE), "--split", "dev", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["26", "30", "41", "42", "43"]
    assert "5 conversations" in capsys.readouterr().out
    # 26 lists more date keys than sessions: only real sessions become files.
    assert len(list((tmp_path / "26" / "memory").glob("*.md"))) == 19

    # A re-run leaves unchanged files alone and removes only its own stale files.
    first = tmp_path / "30" / "memory" / "30-session-1.md"
    mtime = first.stat().st_mtime_ns
    stale = tmp_path / "30" / "memory" / "30-session-99.md"
    stale.write_text("old")
    mine = tmp_path / "30" / "memory" / "notes.md"
    mine.write_text("kept")
    assert convert.main([str(SOURCE), "--split", "dev", "--out", str(tmp_path)]) == 0
    assert first.stat().st_mtime_ns == mtime
    assert not stale.exists() and mine.exists()

    assert convert.main([str(tmp_path / "missing"), "--out", str(tmp_path)]) == 2
