"""`memwiki bridge prepare/commit`: host logs to memorize runs, cursors, self-sessions, secrets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memwiki.hosts.mining.bridge import bridge_commit, bridge_prepare, state_dir
from memwiki.hosts.mining.cursors import CURSOR_FILE, PENDING_FILE

FIX = Path(__file__).parent / "fixtures" / "hosts"
CC_SID = "9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90"
API_SID = "1c0ffee0-aaaa-4bbb-8ccc-000000000002"
CODEX_SID = "0197a3c2-7e10-7b55-9f1d-3c6a8e2b4d10"

MEMWIKI_EXE = str(Path(sys.executable).parent / "memwiki")


@pytest.fixture(autouse=True)
def bm25_only(monkeypatch):
    # The bridge is about cursors and runs; vectors would only slow these tests down.
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


def install_logs(home: Path, host: str) -> Path:
    """The host's fixture logs copied to where the host keeps them under HOME."""
    target = home / {"claude-code": ".claude", "codex": ".codex"}[host]
    shutil.copytree(FIX / host, target, dirs_exist_ok=True)
    return target


def user_line(text: str, sid: str = CC_SID) -> str:
    return json.dumps(
        {"type": "user", "sessionId": sid, "message": {"role": "user", "content": text}}
    )


def append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def job_field(job: str, label: str) -> str:
    m = re.search(r"^- " + re.escape(label) + r"[^`]*`([^`]+)`", job, re.M)
    assert m, f"job has no {label!r} line"
    return m.group(1)


def execute(executor_prompt: str) -> list[Path]:
    """A scripted executor: each memory job's user and assistant lines become one memory file."""
    prompt = Path(executor_prompt).read_text(encoding="utf-8")
    written = []
    for job_path in re.findall(r"^\d+\. `([^`]+)`", prompt, re.M):
        job = Path(job_path).read_text(encoding="utf-8")
        if " memory from session " not in job.splitlines()[0]:
            continue  # skill jobs: nothing reusable in these short sessions
        transcript = Path(job_field(job, "Transcript to read")).read_text(encoding="utf-8")
        said = re.findall(
            r"^### \[\d+\] (?:user|assistant)\n\n(.+?)\n(?=\n### |\Z)", transcript, re.M | re.S
        )
        number = re.search(r"memory from session (\d+)", job).group(1)
        name = f"learned-{Path(job_path).parent.parent.name[-6:]}-{number}"
        path = Path(job_field(job, "Track folder")) / f"{name}.md"
        facts = "\n".join(f"- {' '.join(s.split())}" for s in said)
        path.write_text(
            f"---\nname: {name}\ndescription: What session {number} established\n"
            f"sources: [{job_field(job, 'Session id')}]\n---\n# Learned\n\n{facts}\n",
            encoding="utf-8",
        )
        written.append(path)
    return written


def prepare_json(run_memwiki, wiki, host: str, *extra: str, env=None) -> dict:
    done = run_memwiki(
        "--wiki", wiki.root, "bridge", "prepare", "--host", host, "--json", *extra, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def messages_offered(data: dict) -> list[str]:
    out = []
    for t in data["transcripts"]:
        text = Path(t["messages"]).read_text(encoding="utf-8")
        out += [
            " ".join(m.split())
            for m in re.findall(r"^### \[\d+\] \w+\n\n(.+?)\n(?=\n### |\Z)", text, re.M | re.S)
        ]
    return out


def hook(run_memwiki, wiki, prompt: str) -> subprocess.CompletedProcess:
    payload = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    return run_memwiki(
        "hook", "claude-code", input=json.dumps(payload),
        env={"MEMWIKI_DIR": str(wiki.root), "MEMWIKI_HOOK_BUDGET_MS": "20000"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("host", "prompt", "expected"),
    [
        ("claude-code", "how do we rotate the API keys?", "make rotate-keys"),
        ("codex", "which node version does CI use?", "node 22"),
    ],
)
def test_end_to_end_logs_to_hook_context(
    wiki, isolated_env, run_memwiki, git, host, prompt, expected
):
    install_logs(isolated_env, host)
    data = prepare_json(run_memwiki, wiki, host)
    assert not data["nothing_new"] and data["jobs"] and data["sessions"]
    # memwiki by its absolute path: the scheduled agent's login shell may not have its venv.
    assert data["next_command"] == (
        f"{MEMWIKI_EXE} --wiki {wiki.root} bridge commit --host {host} --json"
    )
    assert all(t["source_id"].startswith(f"{host}:") for t in data["transcripts"])
    assert (state_dir(wiki, host) / PENDING_FILE).is_file()
    written = execute(data["executor_prompt"])
    assert written
    done = run_memwiki("--wiki", wiki.root, "bridge", "commit", "--host", host, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["cursor_advanced"] and result["run_id"] == data["run_id"]
    assert sorted(result["created"]) == sorted(f"memory/{p.name}" for p in written)
    assert not (state_dir(wiki, host) / PENDING_FILE).exists()
    trailers = git(wiki.root, "log", "-1", "--format=%(trailers:only,unfold)")
    assert f"Memwiki-Sessions: {host}:" in trailers
    answer = hook(run_memwiki, wiki, prompt)
    assert answer.returncode == 0 and answer.stderr == ""
    out = json.loads(answer.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert expected in context and "## memory/learned-" in context


def test_incremental_only_new_content_then_nothing(wiki, isolated_env, run_memwiki):
    projects = install_logs(isolated_env, "claude-code") / "projects"
    first = prepare_json(run_memwiki, wiki, "claude-code")
    assert len(first["sessions"]) == 2  # subagent streams are tool activity, not sessions
    execute(first["executor_prompt"])
    assert (
        run_memwiki("--wiki", wiki.root, "bridge", "commit", "--host", "claude-code").returncode
        == 0
    )

    append(
        projects / "-home-dev-shop" / f"{CC_SID}.jsonl", user_line("and for a cart of one item?")
    )
    new = projects / "-home-dev-new" / "77777777-0000-4000-8000-000000000000.jsonl"
    new.parent.mkdir()
    new.write_text(user_line("set up the nightly release job", new.stem) + "\n")
    second = prepare_json(run_memwiki, wiki, "claude-code")
    assert sorted(s["key"] for s in second["sessions"]) == sorted([CC_SID, new.stem])
    assert sorted(messages_offered(second)) == [
        "and for a cart of one item?",
        "set up the nightly release job",
    ]
    execute(second["executor_prompt"])
    done = run_memwiki("--wiki", wiki.root, "bridge", "commit", "--host", "claude-code")
    assert done.returncode == 0, done.stderr
    assert "cursor moved past 2 session slice(s)" in done.stdout

    runs_before = sorted((wiki.sidecar / "runs").iterdir())
    third = run_memwiki("--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code")
    assert third.returncode == 0 and third.stdout == "claude-code: nothing new to memorize\n"
    assert json.loads(prepare_json_text(run_memwiki, wiki))["nothing_new"] is True
    assert sorted((wiki.sidecar / "runs").iterdir()) == runs_before
    assert not (state_dir(wiki, "claude-code") / PENDING_FILE).exists()


def prepare_json_text(run_memwiki, wiki) -> str:
    done = run_memwiki("--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code", "--json")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_failed_commit_keeps_run_and_cursor_and_re_offers_the_same_content(wiki, isolated_env, cli):
    install_logs(isolated_env, "claude-code")
    base = ("--wiki", wiki.root, "bridge")
    code, out, err = cli(*base, "prepare", "--host", "claude-code", "--json")
    first = json.loads(out)
    cursor = state_dir(wiki, "claude-code") / CURSOR_FILE
    bad = Path(first["workspace"]) / "memory" / "broken.md"
    bad.write_text("no frontmatter at all\n")
    code, out, err = cli(*base, "commit", "--host", "claude-code")
    assert code == 2 and err.startswith(f"memwiki: error: run {first['run_id']}: 1 problem")
    assert "memory/broken.md:1:" in err.splitlines()[1]
    assert (state_dir(wiki, "claude-code") / PENDING_FILE).is_file() and not cursor.exists()
    # the next prepare offers the same run, with the same sessions
    code, out, err = cli(*base, "prepare", "--host", "claude-code", "--json")
    again = json.loads(out)
    assert again["resumed"] is True and again["run_id"] == first["run_id"]
    assert again["sessions"] == first["sessions"] and again["jobs"] == first["jobs"]
    code, out, err = cli(*base, "prepare", "--host", "claude-code")
    assert out.startswith("claude-code: the pending run is not committed yet; offering it again\n")
    # a fixed workspace commits, and only then the cursor moves
    bad.unlink()
    execute(first["executor_prompt"])
    code, out, err = cli(*base, "commit", "--host", "claude-code", "--json")
    assert code == 0, err
    assert json.loads(out)["cursor_advanced"] is True and cursor.is_file()
    code, out, err = cli(*base, "prepare", "--host", "claude-code", "--json")
    assert json.loads(out)["nothing_new"] is True


def test_discarded_pending_run_offers_its_sessions_again(wiki, isolated_env, cli):
    install_logs(isolated_env, "claude-code")
    base = ("--wiki", wiki.root)
    first = json.loads(cli(*base, "bridge", "prepare", "--host", "claude-code", "--json")[1])
    code, _, err = cli(*base, "memorize", "discard", first["run_id"])
    assert code == 0, err
    code, out, err = cli(*base, "bridge", "commit", "--host", "claude-code")
    assert code == 3 and "was discarded" in err and err.count("\n") == 1
    again = json.loads(cli(*base, "bridge", "prepare", "--host", "claude-code", "--json")[1])
    assert again["run_id"] != first["run_id"] and not again["resumed"]
    assert again["sessions"] == first["sessions"]
    code, out, err = cli(*base, "bridge", "commit", "--host", "claude-code", "--json")
    assert code == 0 and json.loads(out)["commit"] is None  # the executor changed nothing


def test_commit_by_hand_is_recognised_and_the_cursor_moves(wiki, isolated_env, cli):
    install_logs(isolated_env, "claude-code")
    base = ("--wiki", wiki.root)
    first = json.loads(cli(*base, "bridge", "prepare", "--host", "claude-code", "--json")[1])
    execute(first["executor_prompt"])
    code, _, err = cli(*base, "memorize", "commit", first["run_id"])
    assert code == 0, err
    code, out, _ = cli(*base, "bridge", "prepare", "--host", "claude-code", "--json")
    assert json.loads(out)["nothing_new"] is True
    assert (state_dir(wiki, "claude-code") / CURSOR_FILE).is_file()


def test_nothing_found_creates_nothing_and_bad_arguments_are_one_line(wiki, cli, tmp_path):
    base = ("--wiki", wiki.root, "bridge")
    (tmp_path / "none").mkdir()  # an empty folder: nothing new (a missing one is exit 3)
    code, out, err = cli(*base, "prepare", "--host", "codex", "--session-dir", tmp_path / "none")
    assert code == 0 and out == "codex: nothing new to memorize\n" and err == ""
    assert not (wiki.sidecar / "runs").exists()
    code, out, err = cli(*base, "prepare", "--host", "vim")
    assert code == 2 and err.count("\n") == 1 and "unknown host 'vim'" in err
    code, out, err = cli(*base, "prepare", "--host", "codex", "--max-sessions", "11")
    assert code == 2 and "--max-sessions must be 1 to 10" in err
    code, out, err = cli(*base, "commit", "--host", "codex")
    assert code == 3 and "no pending bridge run for codex" in err


def test_session_dir_and_max_sessions(wiki, cli, tmp_path):
    logs = tmp_path / "elsewhere"
    shutil.copytree(FIX / "claude-code" / "projects", logs)
    base = ("--wiki", wiki.root, "bridge")
    code, out, err = cli(*base, "prepare", "--host", "claude-code", "--session-dir", logs,
                         "--max-sessions", "1", "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert len(data["sessions"]) == 1 and len(data["jobs"]) == 2
    assert data["sessions"][0]["source_path"].startswith(str(logs))


def newest(path: Path) -> None:
    future = time.time() + 60
    os.utime(path, (future, future))


def test_self_session_skipped_only_in_a_bridging_run(wiki, isolated_env, run_memwiki):
    projects = install_logs(isolated_env, "claude-code") / "projects"
    own = projects / "-home-dev-memwiki" / "5e1f0000-0000-4000-8000-000000000000.jsonl"
    own.parent.mkdir()
    own.write_text(user_line("run memwiki bridge prepare --host claude-code", own.stem) + "\n")
    newest(own)  # the scheduled run's own session is the newest one: it must not end the scan
    # Without MEMWIKI_BRIDGING_RUN the session variable alone claims nothing.
    hand = prepare_json(run_memwiki, wiki, "claude-code", env={"CLAUDE_CODE_SESSION_ID": own.stem})
    assert own.stem in {s["session_id"] for s in hand["sessions"]} and hand["claimed"] == []
    assert run_memwiki("--wiki", wiki.root, "memorize", "discard", hand["run_id"]).returncode == 0

    env = {"MEMWIKI_BRIDGING_RUN": "1", "CLAUDE_CODE_SESSION_ID": own.stem}
    done = run_memwiki(
        "--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code", "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["claimed"] == [own.stem]
    assert f"claude-code session {own.stem} is this bridging run's own" in done.stderr
    ids = {s["session_id"] for s in data["sessions"]}
    assert own.stem not in ids and {CC_SID, API_SID} <= ids  # older sessions still mined
    for t in data["transcripts"]:
        assert "run memwiki bridge prepare" not in Path(t["messages"]).read_text()
    claimed = json.loads((state_dir(wiki, "claude-code") / CURSOR_FILE).read_text())["claimed"]
    assert claimed == [own.stem]


def test_bridging_run_without_session_variable_warns(wiki, isolated_env, run_memwiki):
    install_logs(isolated_env, "claude-code")
    done = run_memwiki("--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code",
                       env={"MEMWIKI_BRIDGING_RUN": "1"})  # fmt: skip
    assert done.returncode == 0
    assert "CLAUDE_CODE_SESSION_ID is empty" in done.stderr


OPENAI = "sk-proj-" + "Xq7vR2mN9kL4pT8wZ3yB6cD1fG5hJ0aS2eU4iO6"
AWS = "AKIA" + "Z7QW3ERT5YUI9OPL"
GITHUB = "ghp_" + "R8s2Kd9Lm4Np7Qx1Vz5Bc3Fg6Hj0Tw2Ya8Ue"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJkYW5hQGFjbWUuZXhhbXBsZSIsImV4cCI6MTk5OTk5OTk5OX0."
    "Qm9ndXNTaWduYXR1cmVGb3JUZXN0aW5nT25seTEyMzQ"
)
KEY_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
SECRETS = [OPENAI, AWS, GITHUB, JWT, KEY_BODY]


def test_secrets_in_host_logs_never_reach_jobs_or_the_wiki(wiki, isolated_env, cli, git):
    project = isolated_env / ".claude" / "projects" / "-home-dev-secrets"
    project.mkdir(parents=True)
    sid = "5ec12e75-0000-4000-8000-000000000000"
    tool = {
        "type": "assistant",
        "sessionId": sid,
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {"command": f"curl -H 'Authorization: Bearer {GITHUB}' https://api"},
                }
            ],
        },
    }
    result = {"type": "user", "sessionId": sid, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": f"key file:\n{PRIVATE_KEY}"}]}}  # fmt: skip
    (project / f"{sid}.jsonl").write_text(
        "\n".join([
            user_line(f"deploy with OPENAI_API_KEY={OPENAI} and aws key {AWS}", sid),
            json.dumps(tool),
            json.dumps(result),
            user_line(f"the session token is {JWT}", sid),
        ]) + "\n"
    )  # fmt: skip
    code, out, err = cli(
        "--wiki", wiki.root, "bridge", "prepare", "--host", "claude-code", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert {"openai-api-key", "aws-access-key", "jwt", "private-key"} <= set(data["redactions"])
    # the worst executor: it copies each transcript whole into memory
    for n, t in enumerate(data["transcripts"], start=1):
        for kind in ("messages", "full"):
            text = Path(t[kind]).read_text(encoding="utf-8").replace("---", "- - -")
            path = Path(data["workspace"]) / "memory" / f"copy-{n}-{kind}.md"
            path.write_text(f"---\nname: copy-{n}-{kind}\ndescription: copy\n---\n{text}")
    everything = [p for p in wiki.root.rglob("*") if p.is_file()]
    assert any("jobs" in p.parts for p in everything)
    for p in everything:
        data_bytes = p.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data_bytes, (p, secret[:8])
    code, out, err = cli("--wiki", wiki.root, "bridge", "commit", "--host", "claude-code")
    assert code == 0, err
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=wiki.root, capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert b"[REDACTED:" in objects
    for secret in SECRETS:
        assert secret.encode() not in objects
        for p in wiki.root.rglob("*"):
            if p.is_file():
                assert secret.encode() not in p.read_bytes(), (p, secret[:8])


def test_library_calls_match_the_cli(wiki, isolated_env):
    from memwiki.config import load

    install_logs(isolated_env, "codex")
    cfg = load({"wiki": str(wiki.root)})
    prepared = bridge_prepare(wiki, "codex", cfg)
    assert prepared.run_id and {s["session_id"] for s in prepared.sessions} >= {CODEX_SID}
    assert prepared.to_dict()["next_command"] == f"{MEMWIKI_EXE} bridge commit --host codex --json"
    execute(prepared.to_dict()["executor_prompt"])
    calls = []
    committed = bridge_commit(wiki, "codex", cfg, reindex=lambda: calls.append(1))
    assert committed.cursor_advanced and calls == [1]
    assert committed.to_dict()["host"] == "codex" and committed.commit.created
    assert bridge_prepare(wiki, "codex", cfg).nothing_new


def test_lone_surrogates_in_host_logs_become_replacement_characters(
    wiki, isolated_env, run_memwiki
):
    # Real clients write them: a JavaScript string cut in the middle of an emoji is
    # serialised by JSON.stringify as a lone "\ud83d". The session must still be offered,
    # and every later prepare must not fail on the same line again.
    projects = install_logs(isolated_env, "claude-code") / "projects"
    cut = json.dumps(
        {"type": "user", "sessionId": CC_SID, "message": {"role": "user", "content": "x"}}
    ).replace('"x"', '"deploy finished \\ud83d then the cart\\udce9 test"')
    append(projects / "-home-dev-shop" / f"{CC_SID}.jsonl", cut)
    first = prepare_json(run_memwiki, wiki, "claude-code")
    offered = messages_offered(first)
    assert "deploy finished \ufffd then the cart\ufffd test" in offered
    for t in first["transcripts"]:
        Path(t["messages"]).read_bytes().decode("utf-8")  # strict: no surrogate leaked out
