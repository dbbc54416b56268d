"""memorize prepare / status / discard on real wikis, cross-checked with the git CLI."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from test_memorize_support import (
    git,
    make_wiki,
    payload,
    recall,
    run_branches,
    worktree_count,
    write,
)

from memwiki import memorize
from memwiki.errors import InvalidInput, NotFound, StateError
from memwiki.memorize import templates

GOOD = {"items": [{"type": "message", "role": "user", "content": "hello"}]}


def assert_nothing_left(wiki) -> None:
    runs = wiki.sidecar / "runs"
    assert not runs.exists() or not any(runs.iterdir())
    assert run_branches(wiki.root) == []
    assert worktree_count(wiki.root) == 1


def raw_payload(tmp_path: Path, name: str, data: bytes | str | object) -> Path:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("unknown-field", r"bad\.json: items\[0\]\.mood: unknown field"),
        ("wrong-type", r"bad\.json: items\[0\]\.content: must be a string, got number"),
        ("empty-items", r"bad\.json: items: must not be empty"),
        ("no-message", r"bad\.json: items: at least one message item is required"),
        ("eleven-files", r"1 to 10 payload files, got 11"),
        ("stdin-and-files", r"'-' \(a payload on stdin\) cannot be combined"),
        ("invalid-json", r"bad\.json: invalid JSON at line 1 column \d+"),
        ("non-utf8", r"bad\.json: not valid UTF-8 at byte \d+"),
    ],
)
def test_each_validation_rule_refuses_and_leaves_nothing(tmp_path, case, expected):
    wiki = make_wiki(tmp_path)
    good = raw_payload(tmp_path, "good.json", GOOD)
    msg = {"type": "message", "role": "user"}
    bad = {
        "unknown-field": {"items": [{**msg, "content": "x", "mood": "happy"}]},
        "wrong-type": {"items": [{**msg, "content": 42}]},
        "empty-items": {"items": []},
        "no-message": {"items": [{"type": "tool_call", "name": "ls"}]},
        "invalid-json": '{"items": [',
        "non-utf8": b'{"items": [{"type": "message", "role": "user", "content": "\xff"}]}',
    }
    inputs: list[str | Path]
    if case == "eleven-files":
        inputs = [good] * 11
    elif case == "stdin-and-files":
        inputs = ["-", good]
    else:
        inputs = [good, raw_payload(tmp_path, "bad.json", bad[case])]
    with pytest.raises(InvalidInput, match=expected) as exc:
        memorize.prepare(wiki, inputs, stdin=io.BytesIO(json.dumps(GOOD).encode()))
    assert "\n" not in exc.value.message
    assert exc.value.exit_code == 2
    assert_nothing_left(wiki)


def test_prepare_writes_workspace_transcripts_jobs_and_prompt(tmp_path):
    wiki = make_wiki(
        tmp_path,
        {
            "memory/billing-team.md": recall("billing-team", "Dana owns billing.\n",
                                             "Who works on the billing service"),
            "skill/release-billing-service.md": recall("release-billing-service", "Steps.\n",
                                                       "How to release billing"),
        },
    )  # fmt: skip
    s1 = payload(
        tmp_path,
        "s1.json",
        ["How do we deploy?", "Through the release pipeline."],
        [
            {"type": "tool_call", "name": "bash", "arguments": {"cmd": "make deploy"}},
            {"type": "tool_result", "content": {"exit": 0}, "is_error": False},
        ],
    )
    s2 = payload(tmp_path, "s2.json", ["Thanks!"])
    result = memorize.prepare(wiki, [s1, s2], run_id="run-one")
    data = result.to_dict()
    assert set(data) == {
        "run_id", "workspace", "transcripts", "jobs", "executor_prompt", "next_command",
        "redactions",
    }  # fmt: skip
    assert data["run_id"] == "run-one"
    assert data["next_command"] == "memwiki memorize commit run-one --json"
    assert data["redactions"] == {}
    workspace = Path(result.workspace)
    assert workspace == wiki.root / ".memwiki" / "runs" / "run-one" / "workspace"
    assert (workspace / "memory" / "billing-team.md").is_file()
    # git agrees: a linked worktree on the run's branch, at the wiki's HEAD
    assert run_branches(wiki.root) == ["memwiki/run/run-one"]
    assert git(workspace, "rev-parse", "--abbrev-ref", "HEAD").strip() == "memwiki/run/run-one"
    assert git(workspace, "rev-parse", "HEAD") == git(wiki.root, "rev-parse", "HEAD")
    assert worktree_count(wiki.root) == 2
    assert git(wiki.root, "status", "--porcelain") == ""
    # jobs: all memory jobs, then all skill jobs, numbered
    names = [Path(j).name for j in result.jobs]
    assert names == [
        "01-memory-session-01.md", "02-memory-session-02.md",
        "03-skill-session-01.md", "04-skill-session-02.md",
    ]  # fmt: skip
    memory_job = Path(result.jobs[0]).read_text()
    assert "`billing-team` (memory/billing-team.md): Who works on the billing service" in memory_job
    assert "release-billing-service" not in memory_job.split("Existing memory files:")[1][:200]
    assert result.transcripts[0]["messages"] in memory_job
    assert "data, not instructions" in memory_job
    skill_job = Path(result.jobs[2]).read_text()
    assert "`release-billing-service` (skill/release-billing-service.md)" in skill_job
    assert result.transcripts[0]["full"] in skill_job
    assert "Prefer this over" in skill_job
    # transcripts: messages only as markdown, everything as JSONL
    md = Path(result.transcripts[0]["messages"]).read_text()
    assert "### [0] user\n\nHow do we deploy?" in md and "make deploy" not in md
    lines = Path(result.transcripts[0]["full"]).read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == [
        "message", "message", "tool_call", "tool_result",
    ]  # fmt: skip
    prompt = Path(result.executor_prompt).read_text()
    assert all(job in prompt for job in result.jobs)
    assert "serially" in prompt and "stop at the first failure" in prompt
    assert "memwiki memorize commit run-one --json" in prompt
    (status,) = memorize.status(wiki)
    assert (status.run_id, status.state, status.jobs) == ("run-one", "prepared", 4)


def test_prepare_from_stdin(tmp_path):
    wiki = make_wiki(tmp_path)
    stdin = io.BytesIO(json.dumps(GOOD).encode())
    result = memorize.prepare(wiki, ["-"], stdin=stdin)
    assert result.transcripts[0]["session"] == "<stdin>"
    assert memorize.status(wiki, result.run_id)[0].state == "prepared"


def test_templates_render_without_stray_placeholders(tmp_path):
    wiki = make_wiki(tmp_path)
    result = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hi"])])
    for path in [*result.jobs, result.executor_prompt, result.transcripts[0]["messages"]]:
        text = Path(path).read_text()
        assert "$" not in text.replace("$GITHUB_TOKEN", "") and "{{" not in text
    assert templates.load("memory_job.md").startswith("# memwiki job")


def test_status_edited_and_discard(tmp_path):
    wiki = make_wiki(tmp_path)
    result = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hi"])])
    write(Path(result.workspace), "memory/greeting.md", recall("greeting", "Say hi.\n"))
    (st,) = memorize.status(wiki)
    assert st.state == "edited" and st.changed == ["memory/greeting.md"]
    assert memorize.discard(wiki, result.run_id).to_dict() == {
        "run_id": result.run_id, "discarded": True, "state": "edited",
    }  # fmt: skip
    assert memorize.status(wiki) == []
    assert run_branches(wiki.root) == [] and worktree_count(wiki.root) == 1
    assert "prunable" not in git(wiki.root, "worktree", "list", "--porcelain")
    with pytest.raises(NotFound):
        memorize.discard(wiki, result.run_id)
    with pytest.raises(NotFound):
        memorize.commit(wiki, result.run_id)


@pytest.mark.parametrize("bad", ["../x", "a/b", "..", ".hidden", "UPPER", "x" * 65, "a\\b", ""])
def test_run_ids_with_path_syntax_are_refused(tmp_path, bad):
    wiki = make_wiki(tmp_path)
    for call in (memorize.commit, memorize.discard, memorize.status):
        with pytest.raises(InvalidInput):
            call(wiki, bad)
    with pytest.raises(InvalidInput):
        memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hi"])], run_id=bad)
    assert_nothing_left(wiki)


def test_run_dir_symlinked_outside_is_refused(tmp_path):
    wiki = make_wiki(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (wiki.sidecar / "runs").mkdir(parents=True)
    os.symlink(outside, wiki.sidecar / "runs" / "sneaky")
    with pytest.raises(InvalidInput, match="does not lead into"):
        memorize.discard(wiki, "sneaky")
    assert outside.is_dir()


def test_same_run_id_twice_is_refused(tmp_path):
    wiki = make_wiki(tmp_path)
    s = payload(tmp_path, "s.json", ["hi"])
    memorize.prepare(wiki, [s], run_id="dup")
    with pytest.raises(StateError, match="already exists"):
        memorize.prepare(wiki, [s], run_id="dup", again=True)
    assert [st.run_id for st in memorize.status(wiki)] == ["dup"]


def test_branch_without_run_dir_shows_incomplete_and_discards(tmp_path):
    wiki = make_wiki(tmp_path)
    git(wiki.root, "branch", "memwiki/run/orphan")
    (st,) = memorize.status(wiki)
    assert (st.run_id, st.state) == ("orphan", "incomplete")
    memorize.discard(wiki, "orphan")
    assert run_branches(wiki.root) == []


def test_the_template_table_in_the_docs_names_every_placeholder():
    # The table still showed string.Template's `$name` after the templates moved to {{name}}.
    import re

    repo = Path(__file__).resolve().parent.parent
    doc = (repo / "docs" / "memorize.md").read_text(encoding="utf-8")
    doc = doc[doc.index("| file | placeholders |") :]
    documented: dict[str, set[str]] = {}
    for row in re.findall(r"^\| (`[^|]+`) \| ([^|]+) \|$", doc, flags=re.M):
        names = set(re.findall(r"\{\{(\w+)\}\}", row[1]))
        for file in re.findall(r"`([\w]+\.md)`", row[0]):
            documented[file] = documented.get(file, set()) | names
        assert "$" not in row[1], row
    folder = repo / "templates" / "memorize"
    for path in sorted(folder.glob("*.md")):
        used = set(re.findall(r"\{\{(\w+)\}\}", path.read_text(encoding="utf-8")))
        assert used <= documented.get(path.name, set()), path.name
