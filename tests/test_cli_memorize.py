"""`memwiki memorize prepare|commit|discard|status` through the real CLI, on real git wikis."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "memorize"
SESSIONS = [EXAMPLES / "session-flaky-test.json", EXAMPLES / "session-release.json"]
SKILL = """---
name: release-billing-service
description: How to cut and ship a release of the billing service
tags: [release, billing]
---
# Release the billing service

## Steps
1. `uv run pytest -q` must pass on `main`.
2. Tag the release and push the tag.
"""
GOOD = {"items": [{"type": "message", "role": "user", "content": "hello"}]}


@pytest.fixture(autouse=True)
def bm25_only(monkeypatch):
    # These tests are about runs and git, not vectors: keep them fast.
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


@pytest.fixture
def seeded(wiki, git):
    """The wiki fixture with one skill committed by hand."""
    (wiki.root / "skill" / "release-billing-service.md").write_text(SKILL, encoding="utf-8")
    git(wiki.root, "add", "-A")
    git(wiki.root, "commit", "-qm", "seed the release skill")
    return wiki


def run_dirs(wiki) -> list[str]:
    root = wiki.sidecar / "runs"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def run_branches(git, wiki) -> str:
    return git(wiki.root, "branch", "--list", "memwiki/run/*").strip()


def prepare(cli, wiki, *files) -> dict:
    code, out, err = cli("--wiki", wiki.root, "memorize", "prepare", *files, "--json")
    assert code == 0, err
    return json.loads(out)


def test_end_to_end_prepare_executor_commit_log_retrieve(seeded, git, run_memwiki):
    wiki = seeded
    before = git(wiki.root, "rev-parse", "HEAD").strip()
    prep = run_memwiki("--wiki", wiki.root, "memorize", "prepare", *SESSIONS, "--json")
    assert prep.returncode == 0, prep.stderr
    data = json.loads(prep.stdout)
    assert set(data) >= {"run_id", "workspace", "transcripts", "jobs", "executor_prompt"}
    assert data["redactions"] == {"url-password": 1}
    assert len(data["jobs"]) == 4 and Path(data["workspace"]).is_dir()
    run_id = data["run_id"]
    assert data["next_command"] == f"memwiki --wiki {wiki.root} memorize commit {run_id} --json"
    executor = [sys.executable, str(EXAMPLES / "executor.py"), data["executor_prompt"]]
    subprocess.run(executor, check=True, capture_output=True, timeout=60)

    done = run_memwiki("--wiki", wiki.root, "memorize", "commit", run_id, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["created"] == ["memory/billing-service-tests.md"]
    assert result["updated"] == ["skill/release-billing-service.md"]
    assert result["conflicts"] == [] and result["warnings"] == []
    # git log: the run's commit and its merge, both carrying the trailers
    assert git(wiki.root, "rev-list", "--parents", "-1", "HEAD").split()[1:] == [
        before,
        result["run_commit"],
    ]
    sources = ", ".join(t["source_id"] for t in data["transcripts"])
    for rev in ("HEAD", "HEAD^2"):
        trailers = git(wiki.root, "log", "-1", "--format=%(trailers:only,unfold)", rev)
        assert f"Memwiki-Run: {run_id}" in trailers
        assert f"Memwiki-Sessions: {sources}" in trailers
    assert git(wiki.root, "log", "-1", "--format=%s").strip() == f"memorize: merge run {run_id}"
    assert (wiki.root / "memory" / "billing-service-tests.md").is_file()
    assert run_dirs(wiki) == [run_id] and not run_branches(git, wiki)
    # the commit reindexed: retrieve finds the new memory
    found = run_memwiki("--wiki", wiki.root, "retrieve", "invoice tests rounding mode", "--files")
    assert found.returncode == 0, found.stderr
    assert "memory/billing-service-tests.md" in found.stdout.split()


def test_human_output_names_run_workspace_jobs_and_next_command(seeded, cli, monkeypatch):
    monkeypatch.setenv("MEMWIKI_DIR", str(seeded.root))
    code, out, err = cli("memorize", "prepare", *SESSIONS)
    assert code == 0, err
    run_id = out.split()[1]
    assert out.startswith(f"run {run_id} prepared: 2 session(s), 4 job(s)\n")
    assert f"workspace:       {seeded.sidecar / 'runs' / run_id / 'workspace'}" in out
    assert "1. " in out and "4. " in out and "redacted secrets: url-password x1" in out
    # without --wiki the next command relies on the same configuration, so it names none
    assert out.rstrip().endswith(f"next: memwiki memorize commit {run_id} --json")


def test_stdin_payload(seeded, cli):
    code, out, err = cli(
        "--wiki", seeded.root, "memorize", "prepare", "-", "--json", stdin=json.dumps(GOOD)
    )
    assert code == 0, err
    assert json.loads(out)["transcripts"][0]["session"] == "<stdin>"


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


CASES = {
    "unknown field": (
        json.dumps({"items": [{"type": "message", "role": "user", "content": "x", "mood": 1}]}),
        "items[0].mood: unknown field",
    ),
    "wrong type": (
        json.dumps({"items": [{"type": "message", "role": "user", "content": 7}]}),
        "items[0].content: must be a string, got number",
    ),
    "empty items": (json.dumps({"items": []}), "items: must not be empty"),
    "no message": (
        json.dumps({"items": [{"type": "tool_call", "name": "bash"}]}),
        "items: at least one message item is required",
    ),
    "invalid json": ('{"items": [', "invalid JSON at line 1"),
    "not utf-8": (b'{"items": "\xff\xfe"}', "not valid UTF-8"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_payload_rule_refuses_with_one_line_and_leaves_nothing(
    seeded, cli, git, tmp_path, case
):
    content, expected = CASES[case]
    bad = _write(tmp_path, "bad.json", content)
    good = _write(tmp_path, "good.json", json.dumps(GOOD))
    code, out, err = cli("--wiki", seeded.root, "memorize", "prepare", good, bad, "--json")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"memwiki: error: {bad}: ")
    # --json: the same error as one JSON document on stdout.
    assert json.loads(out) == {
        "error": {"message": err[len("memwiki: error: ") : -1], "exit_code": 2}
    }
    assert expected in err
    assert run_dirs(seeded) == [] and not run_branches(git, seeded)


def test_eleven_files_and_stdin_plus_files_are_refused(seeded, cli, git, tmp_path):
    good = _write(tmp_path, "good.json", json.dumps(GOOD))
    code, _, err = cli("--wiki", seeded.root, "memorize", "prepare", *[good] * 11)
    assert code == 2 and err.count("\n") == 1 and "takes 1 to 10 payload files, got 11" in err
    code, _, err = cli(
        "--wiki", seeded.root, "memorize", "prepare", good, "-", stdin=json.dumps(GOOD)
    )
    assert code == 2 and err.count("\n") == 1 and "cannot be combined" in err
    code, _, err = cli("--wiki", seeded.root, "memorize", "prepare", tmp_path / "missing.json")
    assert code == 2 and "no such payload file" in err
    assert run_dirs(seeded) == [] and not run_branches(git, seeded)


def test_status_and_discard(seeded, cli, git):
    code, out, _ = cli("--wiki", seeded.root, "memorize", "status")
    assert code == 0 and out == "no memorize runs\n"
    run_id = prepare(cli, seeded, SESSIONS[0])["run_id"]
    code, out, _ = cli("--wiki", seeded.root, "memorize", "status", "--json")
    [st] = json.loads(out)
    assert (st["run_id"], st["state"], st["jobs"]) == (run_id, "prepared", 2)
    code, out, _ = cli("--wiki", seeded.root, "memorize", "status", run_id)
    assert out.startswith(f"{run_id}  prepared   2 job(s)")
    code, out, err = cli("--wiki", seeded.root, "memorize", "discard", run_id, "--json")
    assert code == 0, err
    assert json.loads(out) == {"run_id": run_id, "discarded": True, "state": "prepared"}
    assert run_dirs(seeded) == [] and not run_branches(git, seeded)
    code, out, err = cli("--wiki", seeded.root, "memorize", "discard", run_id)
    assert code == 3 and out == "" and err.count("\n") == 1
    code, _, err = cli("--wiki", seeded.root, "memorize", "status", "../etc")
    assert code == 2 and "refused run id" in err


def test_invalid_executor_output_lists_every_problem_then_retry_succeeds(seeded, cli):
    data = prepare(cli, seeded, SESSIONS[0])
    run_id, ws = data["run_id"], Path(data["workspace"])
    (ws / "memory" / "bad-front.md").write_text("---\nname: [unclosed\n---\n# x\n")
    (ws / "memory" / "wrong-stem.md").write_text("---\nname: other\ndescription: d\n---\n# x\n")
    (ws / "notes.md").write_text("outside the tracks\n")
    code, out, err = cli("--wiki", seeded.root, "memorize", "commit", run_id)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f"memwiki: error: run {run_id}: ")
    assert "nothing committed" in lines[0]
    problems = [ln.strip() for ln in lines[1:]]
    assert len(problems) >= 3
    assert any(p.startswith("memory/bad-front.md:") for p in problems)
    assert any(p.startswith("memory/wrong-stem.md:") for p in problems)
    assert any(p.startswith("notes.md:1: outside the tracks") for p in problems)
    code, out, err = cli("--wiki", seeded.root, "memorize", "commit", run_id, "--json")
    assert code == 2
    doc = json.loads(out)
    assert doc["ok"] is False and doc["run_id"] == run_id
    # The error document every --json command prints on failure, plus the problems.
    assert doc["error"]["exit_code"] == 2
    assert doc["error"]["message"] == err.splitlines()[0].removeprefix("memwiki: error: ")
    assert {p["path"] for p in doc["problems"]} == {
        "memory/bad-front.md",
        "memory/wrong-stem.md",
        "notes.md",
    }
    assert len(doc["problems"]) == len(problems)
    # the run is kept: fix the files and commit again
    (ws / "memory" / "bad-front.md").write_text("---\nname: bad-front\ndescription: d\n---\n# x\n")
    (ws / "memory" / "wrong-stem.md").unlink()
    (ws / "notes.md").unlink()
    code, out, err = cli("--wiki", seeded.root, "memorize", "commit", run_id)
    assert code == 0, err
    assert out.startswith(f"run {run_id} committed: merge ")
    assert "  created  memory/bad-front.md" in out
    assert (seeded.root / "memory" / "bad-front.md").is_file()
    code, out, _ = cli("--wiki", seeded.root, "memorize", "commit", run_id, "--json")
    assert code == 0 and json.loads(out)["already_committed"] is True


def test_commit_of_an_untouched_run_and_of_an_unknown_run(seeded, cli):
    run_id = prepare(cli, seeded, SESSIONS[0])["run_id"]
    code, out, _ = cli("--wiki", seeded.root, "memorize", "commit", run_id)
    assert code == 0 and "nothing to commit" in out
    code, out, err = cli("--wiki", seeded.root, "memorize", "commit", "20990101-000000-abcdef")
    assert code == 3 and out == "" and "no memorize run" in err


def test_two_runs_patching_one_file_seconds_apart_merge_cleanly(seeded, cli):
    # Each commit stamps `created:` (the file had none) and `updated:` with its own time;
    # stamps alone must never turn two compatible edits into a conflict copy.
    first = prepare(cli, seeded, SESSIONS[0])
    second = prepare(cli, seeded, SESSIONS[1])
    rel = "skill/release-billing-service.md"
    for data, old, new in (
        (first, "## Steps", "## Steps to ship"),
        (second, "push the tag.", "push it."),
    ):
        path = Path(data["workspace"]) / rel
        path.write_text(path.read_text().replace(old, new))
    assert cli("--wiki", seeded.root, "memorize", "commit", first["run_id"])[0] == 0
    time.sleep(1.1)
    code, out, err = cli("--wiki", seeded.root, "memorize", "commit", second["run_id"], "--json")
    assert code == 0, err
    assert json.loads(out)["conflicts"] == []
    text = (seeded.root / rel).read_text()
    assert "## Steps to ship" in text and "push it." in text and text.count("created:") == 1


def test_a_session_memorized_before_is_refused_unless_again(wiki, cli, git):
    # The same payload prepared twice (a retried script, a cron job) was mined twice:
    # duplicate notes and repeated facts. Now an open run, a committed run's record or a
    # merge in the history refuses it with exit 4, and --again overrides.
    session = str(SESSIONS[1])
    first = prepare(cli, wiki, session)
    code, _, err = cli("--wiki", wiki.root, "memorize", "prepare", session)
    assert code == 4 and run_dirs(wiki) == [first["run_id"]]
    assert err.count("\n") == 1
    assert f"was already memorized (in the open run {first['run_id']})" in err
    workspace = Path(first["workspace"])
    (workspace / "memory" / "release.md").write_text(
        "---\nname: release\ndescription: how releases go\n---\nTag, then push.\n",
        encoding="utf-8",
    )
    assert cli("--wiki", wiki.root, "memorize", "commit", first["run_id"])[0] == 0
    # the record under .memwiki/ is a cache: the commit trailer alone is enough
    shutil.rmtree(wiki.sidecar / "runs")
    code, _, err = cli("--wiki", wiki.root, "memorize", "prepare", session)
    merge = git(wiki.root, "rev-parse", "--short=7", "HEAD").strip()
    assert code == 4 and f"(in commit {merge[:7]})" in err
    again = prepare(cli, wiki, session, "--again")
    assert Path(again["workspace"]).is_dir()
    # another payload of the same batch is not refused because of it
    assert prepare(cli, wiki, str(SESSIONS[0]))["run_id"] != again["run_id"]
