"""Bridge runs know their session's project from the working directory the host recorded."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from memwiki.hosts.mining import workdirs
from memwiki.hosts.mining.bridge import bridge_commit, bridge_prepare
from memwiki.memorize import runstate

FIX = Path(__file__).parent / "fixtures" / "hosts"


@pytest.fixture(autouse=True)
def bm25_only(monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


def repo(path: Path, origin: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, timeout=30)
    subprocess.run(["git", "remote", "add", "origin", origin], cwd=path, check=True, timeout=30)
    return path


def install(home: Path, host: str, old: str, new: Path) -> Path:
    """The host's fixture logs under HOME, with the recorded directory moved to a real one."""
    target = home / {"claude-code": ".claude", "codex": ".codex"}[host]
    shutil.copytree(FIX / host, target, dirs_exist_ok=True)
    for path in target.rglob("*.jsonl"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(old, str(new)), encoding="utf-8")
    return target


def test_record_cwd_per_host_shape():
    assert workdirs.record_cwd({"type": "user", "cwd": "/home/dev/shop"}) == "/home/dev/shop"
    meta = {"type": "session_meta", "payload": {"cwd": "/srv/api"}}
    assert workdirs.record_cwd(meta) == "/srv/api"
    turn = {"type": "turn_context", "payload": {"cwd": "/srv/api2"}}
    assert workdirs.record_cwd(turn) == "/srv/api2"
    assert workdirs.record_cwd({"type": "session", "cwd": "/home/li/notes"}) == "/home/li/notes"
    for bad in ({}, {"cwd": 3}, {"cwd": ""}, {"cwd": "a\x00b"}, {"type": "x", "payload": "y"}):
        assert workdirs.record_cwd(bad) is None


def test_head_cwd_reads_only_the_head(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'garbage\n{"type":"session_meta","payload":{"cwd":"/a"}}\n')
    assert workdirs.head_cwd(path) == "/a"
    path.write_bytes(b"\xff\xfe not json\n")
    assert workdirs.head_cwd(path) is None
    assert workdirs.head_cwd(tmp_path / "missing.jsonl") is None


def test_codex_bridge_run_carries_the_project(wiki, isolated_env, tmp_path):
    from memwiki.config import load

    api = repo(tmp_path / "checkouts" / "api", "https://github.com/acme/api-gateway.git")
    logs = install(isolated_env, "codex", "/srv/api", api)
    cfg = load({"wiki": str(wiki.root)})
    prepared = bridge_prepare(wiki, "codex", cfg)
    state = runstate.load_state(runstate.run_dir(wiki.sidecar, prepared.run_id))
    projects = {s["source_id"].split(":")[1]: s.get("project") for s in state.sessions}
    assert projects["0197a3c2-7e10-7b55-9f1d-3c6a8e2b4d10"] == "api-gateway"
    summary = {s["session_id"]: s["project"] for s in prepared.sessions}
    assert summary["0197a3c2-7e10-7b55-9f1d-3c6a8e2b4d10"] == "api-gateway"
    jobs = prepared.to_dict()["jobs"]
    assert jobs[-1].endswith("-resource-projects.md")
    assert "project: api-gateway" in Path(jobs[0]).read_text()
    bridge_commit(wiki, "codex", cfg)
    # New records after the cursor name no directory: the file's head still does.
    rollout = next(logs.rglob("rollout-2026-05-03*.jsonl"))
    line = {"timestamp": "2026-05-03T11:00:00Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "and the staging URL?"}]}}  # fmt: skip
    with rollout.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    again = bridge_prepare(wiki, "codex", cfg)
    assert [s["project"] for s in again.sessions] == ["api-gateway"]


def test_claude_code_sessions_outside_a_repository_stay_global(wiki, isolated_env, tmp_path):
    from memwiki.config import load

    shop = repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    install(isolated_env, "claude-code", "/home/dev/shop", shop)
    cfg = load({"wiki": str(wiki.root)})
    prepared = bridge_prepare(wiki, "claude-code", cfg)
    by_id = {s["session_id"]: s["project"] for s in prepared.sessions}
    assert by_id["9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90"] == "shop"
    # /home/dev/api does not exist here: no repository, global memory.
    assert by_id["1c0ffee0-aaaa-4bbb-8ccc-000000000002"] is None


def test_a_session_in_the_wiki_itself_stays_global(wiki, isolated_env, tmp_path):
    # A session run in the wiki folder (editing memory with an agent) was recorded as work
    # in a project named after the wiki folder, and its notes were tagged with it.
    from memwiki.config import load

    install(isolated_env, "claude-code", "/home/dev/shop", wiki.root / "memory")
    cfg = load({"wiki": str(wiki.root)})
    prepared = bridge_prepare(wiki, "claude-code", cfg)
    by_id = {s["session_id"]: s["project"] for s in prepared.sessions}
    assert by_id["9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90"] is None
    state = runstate.load_state(runstate.run_dir(wiki.sidecar, prepared.run_id))
    assert all(s.get("project") is None for s in state.sessions)


def test_a_relative_recorded_directory_names_no_project(wiki, isolated_env, tmp_path, monkeypatch):
    # Found feeding bridge a log whose cwd was a Windows path (a log synced from another
    # machine): it was resolved against bridge's own directory, and the session was filed
    # under the project bridge happened to run in.
    from memwiki.config import load

    here = repo(tmp_path / "where-bridge-runs", "git@github.com:acme/bystander.git")
    monkeypatch.chdir(here)
    shop = Path("C:\\\\Users\\\\dev\\\\shop")  # JSON-escaped in the log: C:\\Users\\dev\\shop
    logs = install(isolated_env, "claude-code", "/home/dev/shop", shop)
    assert "C:\\Users\\dev\\shop" in {workdirs.head_cwd(p) for p in logs.rglob("*.jsonl")}
    cfg = load({"wiki": str(wiki.root)})
    prepared = bridge_prepare(wiki, "claude-code", cfg)
    assert prepared.sessions
    assert all(s["project"] is None for s in prepared.sessions)
