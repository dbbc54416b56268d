"""Host commands through the real CLI: detect, install/uninstall, schedule, docs, and the hook."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import pytest
from conftest import fake_crontab

FIX = Path(__file__).parent / "fixtures" / "hosts"
CLAUDE_MD = "# My rules\n\nAlways run the tests.\r\nWindows line above, no newline at the end"
SETTINGS = """{
  "model": "opus",
  "hooks": {
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "~/bin/ticket-context"}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
    ]
  }
}
"""
CRONTAB = "MAILTO=me@example.org\n# nightly backup\n0 3 * * * /usr/local/bin/backup --all\n"
HOOK_INPUT = {
    "session_id": "9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-shop/9b1e.jsonl",
    "cwd": "/home/dev/shop",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "how do we ship a release of the billing service?",
}


@pytest.fixture
def crontab(tmp_path) -> tuple[dict[str, str], Path]:
    """A stand-in `crontab` command on PATH keeping the table in a file (cron is per user,
    not per HOME, so the real one would edit the developer's own crontab)."""
    bindir, table = fake_crontab(tmp_path)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}, table


def snapshot(paths: list[Path]) -> dict[str, bytes | None]:
    return {str(p): (p.read_bytes() if p.exists() else None) for p in paths}


def test_claude_code_install_uninstall_round_trip_is_byte_identical(
    isolated_env, run_memwiki, crontab
):
    env, table = crontab
    claude = isolated_env / ".claude"
    claude.mkdir()
    (claude / "CLAUDE.md").write_bytes(CLAUDE_MD.encode())
    (claude / "settings.json").write_text(SETTINGS)
    table.write_text(CRONTAB)
    files = [claude / "CLAUDE.md", claude / "settings.json", table]
    before = snapshot(files)

    first = run_memwiki("install", "--host", "claude-code", "--json", env=env)
    assert first.returncode == 0, first.stderr
    actions = {c["kind"]: c["action"] for c in json.loads(first.stdout)["changes"]}
    assert actions == {"instruction": "appended", "settings": "added"}
    assert run_memwiki("schedule", "--host", "claude-code", "--install", env=env).returncode == 0
    installed = snapshot(files)
    text = installed[str(claude / "CLAUDE.md")].decode()
    assert text.startswith(CLAUDE_MD) and "<!-- memwiki:begin -->" in text
    settings = json.loads(installed[str(claude / "settings.json")])
    commands = [h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert commands[0] == "~/bin/ticket-context"
    # The absolute path of the memwiki that ran install: agents' shells may not have its PATH.
    assert commands[1].endswith("/memwiki hook claude-code") and commands[1].startswith("/")
    assert installed[str(table)].decode().startswith(CRONTAB)
    assert b"# memwiki:bridge:claude-code" in installed[str(table)]

    # install twice == install once
    again = run_memwiki("install", "--host", "claude-code", "--json", env=env)
    assert json.loads(again.stdout)["changed"] is False
    redo = run_memwiki("schedule", "--host", "claude-code", "--install", "--json", env=env)
    assert json.loads(redo.stdout)["action"] == "unchanged"
    assert snapshot(files) == installed

    gone = run_memwiki("uninstall", "--host", "claude-code", "--json", env=env)
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["schedule"]["action"] == "removed"
    assert snapshot(files) == before
    assert not list((isolated_env / ".config" / "memwiki" / "bridge").glob("claude-code.*"))


def test_install_creates_and_uninstall_deletes(isolated_env, run_memwiki, crontab):
    env, table = crontab
    (isolated_env / ".codex").mkdir()
    agents = isolated_env / ".codex" / "AGENTS.md"
    dry = run_memwiki("install", "--host", "codex", "--dry-run", env=env)
    assert dry.returncode == 0 and "would be created" in dry.stdout and not agents.exists()
    done = run_memwiki("install", "--host", "codex", env=env)
    assert done.returncode == 0 and f"instruction created   {agents}" in done.stdout
    assert run_memwiki("schedule", "--host", "codex", "--install", env=env).returncode == 0
    assert "# memwiki:bridge:codex" in table.read_text()
    gone = run_memwiki("uninstall", "--host", "codex", env=env)
    assert gone.returncode == 0, gone.stderr
    assert not agents.exists() and not table.exists()
    assert "crontab     removed" in gone.stdout


def test_uninstall_without_a_crontab_command_removes_the_rest(isolated_env, run_memwiki, tmp_path):
    (isolated_env / ".codex").mkdir()
    no_cron = {"PATH": str(tmp_path / "empty-bin")}
    assert run_memwiki("install", "--host", "codex", env=no_cron).returncode == 0
    failed = run_memwiki("schedule", "--host", "codex", "--install", env=no_cron)
    assert failed.returncode == 3 and "crontab command is not installed" in failed.stderr
    assert not (isolated_env / ".config" / "memwiki" / "bridge" / "codex.sh").exists()
    gone = run_memwiki("uninstall", "--host", "codex", "--json", env=no_cron)
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["schedule"]["action"] == "absent"
    assert not (isolated_env / ".codex" / "AGENTS.md").exists()


def test_generic_install_with_path_and_no_schedule(cli, tmp_path):
    target = tmp_path / "proj" / "AGENTS.md"
    target.parent.mkdir()
    target.write_text("# Project\n")
    code, out, err = cli("install", "--host", "generic", "--path", target)
    assert code == 0, err
    code, out, err = cli("uninstall", "--host", "generic", "--path", target, "--json")
    assert code == 0 and json.loads(out)["schedule"] is None
    assert target.read_text() == "# Project\n"
    code, out, err = cli("install", "--host", "generic")
    assert code == 2 and "pass --path" in err and err.count("\n") == 1
    code, out, err = cli("schedule", "--host", "generic")
    assert code == 2 and "no headless mode" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("install", "--host", "emacs"),
        ("uninstall", "--host", "emacs"),
        ("schedule", "--host", "emacs"),
        ("docs", "install", "--host", "emacs"),
        ("docs", "task", "--host", "emacs"),
        ("bridge", "prepare", "--host", "emacs"),
    ],
)
def test_unknown_host_is_one_line(cli, argv):
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert err == (
        "memwiki: error: unknown host 'emacs' (known: claude-code, codex, cursor, openclaw, "
        "hermes, generic)\n"
    )


def test_schedule_prints_the_entry_and_rejects_both_flags(cli, isolated_env):
    code, out, err = cli("schedule", "--host", "hermes")
    assert code == 0 and out.startswith("47 * * * * /bin/sh ")
    assert out.rstrip().endswith("# memwiki:bridge:hermes")
    code, out, _ = cli("schedule", "--host", "hermes", "--json")
    assert json.loads(out)["action"] == "shown"
    code, out, err = cli("schedule", "--host", "hermes", "--install", "--uninstall")
    assert code == 2 and "exclude each other" in err


def test_docs_print_the_guide_and_the_task_prompt(cli):
    code, out, _ = cli("docs", "install", "--host", "codex")
    assert code == 0 and "memwiki install --host codex" in out
    code, out, _ = cli("docs", "task", "--host", "codex")
    assert code == 0 and "memwiki bridge prepare --host codex --json" in out
    assert "memwiki bridge commit --host codex --json" in out


def test_hosts_detect(cli, isolated_env, tmp_path):
    shutil.copytree(FIX / "claude-code", isolated_env / ".claude")
    code, out, err = cli("hosts", "detect", "--json")
    assert code == 0, err
    by_host = {h["host"]: h for h in json.loads(out)["hosts"]}
    cc = by_host["claude-code"]
    assert cc["found"] and cc["memorize"] and cc["sessions"] >= 2
    assert cc["next_command"] == "memwiki install --host claude-code"
    assert not by_host["codex"]["found"]
    code, out, _ = cli("hosts", "detect", FIX / "generic")
    assert code == 0
    assert "claude-code  memorize: yes" in out and "codex        not found" in out
    assert f"next: memwiki bridge prepare --host generic --session-dir {FIX / 'generic'}" in out


# ------------------------------------------------------------------ the hook


def hook(run_memwiki, wiki_dir: Path, stdin, **env: str):
    data = stdin if isinstance(stdin, bytes | str) else json.dumps(stdin)
    started = time.monotonic()
    done = run_memwiki(
        "hook", "claude-code", input=data, env={"MEMWIKI_DIR": str(wiki_dir), **env}, timeout=30
    )
    return done, time.monotonic() - started


def hook_log(wiki_dir: Path) -> list[str]:
    path = wiki_dir / ".memwiki" / "logs" / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


def seed(wiki, n: int = 3) -> None:
    for i in range(n):
        (wiki.root / "memory" / f"fact-{i}.md").write_text(
            f"---\nname: fact-{i}\ndescription: Fact {i}\n---\n# Fact {i}\n\nnothing special {i}\n"
        )
    (wiki.root / "skill" / "release-billing-service.md").write_text(
        "---\nname: release-billing-service\ndescription: How to ship a release of the billing "
        "service\n---\n# Release\n\n1. Tag `v<version>`.\n2. Push the tag; the pipeline ships it.\n"
    )


@pytest.fixture
def bm25_env(monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")


def test_hook_answers_within_budget_on_a_small_wiki(wiki, run_memwiki, bm25_env):
    seed(wiki)
    assert run_memwiki("--wiki", wiki.root, "reindex").returncode == 0
    done, elapsed = hook(run_memwiki, wiki.root, HOOK_INPUT)
    assert done.returncode == 0 and done.stderr == ""
    out = json.loads(done.stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<!-- memwiki: ") and "## skill/release-billing-service.md" in context
    assert elapsed < 10  # Claude Code's timeout for the hook (claude_settings.HOOK_TIMEOUT_S)
    assert hook_log(wiki.root) == []


def test_hook_answers_an_edit_then_writes_it(wiki, run_memwiki, bm25_env):
    # The edit is laid over the index for the answer and committed after it, by a child
    # that holds the writer lock (index/deferred.py).
    from memwiki.fsutil import file_sha256
    from memwiki.index import manifest as mf
    from memwiki.lock import FileLock

    seed(wiki)
    assert run_memwiki("--wiki", wiki.root, "reindex").returncode == 0
    edited = wiki.root / "skill" / "release-billing-service.md"
    edited.write_text(edited.read_text() + "\n## Hotfix\n\nRelease a billing hotfix from main.\n")
    done, _ = hook(run_memwiki, wiki.root, HOOK_INPUT)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Release a billing hotfix from main." in context
    FileLock(wiki.root / ".memwiki" / "index.lock", timeout=30).acquire().release()
    state = mf.load(wiki.root / ".memwiki" / "index" / "state.pkl")
    assert state.files["skill/release-billing-service.md"].sha256 == file_sha256(edited)
    assert hook_log(wiki.root) == []


def test_hook_with_a_long_prompt_injects_memory_not_the_prompt(wiki, run_memwiki, bm25_env):
    """The block's header echoed the whole prompt: a 9.5 KB pasted log filled the context
    budget and no memory was injected."""
    seed(wiki)
    assert run_memwiki("--wiki", wiki.root, "reindex").returncode == 0
    prompt = "how do I ship a release of the billing service? "
    prompt += "Here is a long log line with details. " * 250
    done, _ = hook(run_memwiki, wiki.root, {"prompt": prompt})
    assert done.returncode == 0 and done.stderr == ""
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## skill/release-billing-service.md" in context and "cut to fit" not in context
    assert len(context.splitlines()[0]) < 200 and len(context) < 2000
    assert hook_log(wiki.root) == []


def test_hook_searches_a_huge_prompt_within_its_budget(wiki, run_memwiki, bm25_env):
    """BM25's time grows with the query's distinct words: a 1 MB pasted log took the whole
    budget and the prompt got no memory. The hook searches its first and last 2,000
    characters, so a question after the paste is still found."""
    seed(wiki)
    assert run_memwiki("--wiki", wiki.root, "reindex").returncode == 0
    rng = random.Random(5)
    log = " ".join(f"id{rng.getrandbits(40):x}" for _ in range(70_000))
    done, _ = hook(run_memwiki, wiki.root, {"prompt": log + " how do I ship the billing service?"})
    assert done.returncode == 0 and done.stderr == ""
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## skill/release-billing-service.md" in context
    assert hook_log(wiki.root) == []


def test_hook_with_a_lone_surrogate_answers_and_logs_one_line(wiki, run_memwiki, bm25_env):
    """JSON allows "\\ud800", which UTF-8 cannot encode: the hook exited 70 with an
    internal error and logged nothing, breaking its always-exit-0 contract."""
    seed(wiki)
    assert run_memwiki("--wiki", wiki.root, "reindex").returncode == 0
    stdin = b'{"prompt": "\\ud800 how do I ship a release of the billing service?"}'
    done, _ = hook(run_memwiki, wiki.root, stdin)
    assert (done.returncode, done.stderr) == (0, "")
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## skill/release-billing-service.md" in context
    [line] = hook_log(wiki.root)
    assert "hook claude-code: malformed input: unpaired surrogate" in line


def test_hook_without_a_wiki_is_silent_and_creates_nothing(run_memwiki, tmp_path, bm25_env):
    nowhere = tmp_path / "no-wiki"
    done, _ = hook(run_memwiki, nowhere, HOOK_INPUT)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not nowhere.exists()


def test_hook_on_an_empty_wiki_is_silent(wiki, run_memwiki, bm25_env):
    done, _ = hook(run_memwiki, wiki.root, HOOK_INPUT)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json", b"[1, 2]", b'{"prompt": 5}', b'{"prompt": "  "}', b"\xff\xfe{"],
)
def test_hook_with_malformed_input_is_silent_and_logs_one_line(wiki, run_memwiki, stdin, bm25_env):
    seed(wiki)
    done, _ = hook(run_memwiki, wiki.root, stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    [line] = hook_log(wiki.root)
    assert "hook claude-code: malformed input" in line


def test_hook_with_a_broken_index_fails_open_or_repairs(wiki, run_memwiki, bm25_env):
    seed(wiki)
    assert run_memwiki("--wiki", wiki.root, "reindex").returncode == 0
    index = wiki.sidecar / "index"
    for path in index.rglob("*"):
        if path.is_file():
            path.write_bytes(random.Random(7).randbytes(64))
    done, _ = hook(run_memwiki, wiki.root, HOOK_INPUT)
    assert done.returncode == 0
    if done.stdout:  # repaired on the fly: then the answer is whole and valid
        assert (
            "release-billing-service"
            in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        )
    else:
        assert len(hook_log(wiki.root)) == 1


def test_hook_timeout_answers_nothing_and_exits_at_once(wiki, run_memwiki):
    # An unindexed wiki within 20 ms: on an idle machine the BM25 build of these 31 files
    # now answers within 200 ms (the budget this test had), so the budget is one no
    # process start-up fits in.
    seed(wiki, 30)
    done, elapsed = hook(run_memwiki, wiki.root, HOOK_INPUT, MEMWIKI_HOOK_BUDGET_MS="20")
    assert (done.returncode, done.stdout) == (0, "")
    assert elapsed < 8
    [line] = hook_log(wiki.root)
    assert "timeout after 20 ms budget" in line
    # the timed-out hook left a detached `memwiki reindex` behind: the next prompt has an index
    from memwiki.lock import FileLock

    state, lock = wiki.sidecar / "index" / "state.pkl", FileLock(wiki.sidecar / "index.lock")
    deadline = time.monotonic() + 120
    while (not state.exists() or lock.is_held_elsewhere()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert state.exists() and not lock.is_held_elsewhere()


def test_hook_with_an_unreadable_config_still_exits_zero(wiki, run_memwiki, isolated_env):
    cfg = isolated_env / ".config" / "memwiki" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("this is = = not toml")
    done, _ = hook(run_memwiki, wiki.root, HOOK_INPUT)
    assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.slow
def test_hook_within_budget_on_a_2000_file_wiki(wiki, run_memwiki):
    rng = random.Random(2)
    words = (
        "deploy billing cart checkout invoice release staging cluster worker queue cache "
        "schema migration rollback token backup restore monitor alert pager ledger refund"
    ).split()
    for i in range(2000):
        body = " ".join(rng.choice(words) for _ in range(60))
        (wiki.root / "memory" / f"note-{i:04d}.md").write_text(
            f"---\nname: note-{i:04d}\ndescription: Note {i} on {rng.choice(words)}\n---\n"
            f"# Note {i}\n\n{body}\n"
        )
    seed(wiki)
    built = run_memwiki("--wiki", wiki.root, "reindex", timeout=900)
    assert built.returncode == 0, built.stderr
    budget_ms = 1500  # the default hook_budget_ms, with the default (ONNX) embedder
    for _ in range(3):
        done, elapsed = hook(
            run_memwiki, wiki.root, HOOK_INPUT, MEMWIKI_HOOK_BUDGET_MS=str(budget_ms)
        )
        assert done.returncode == 0 and done.stdout, hook_log(wiki.root)
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "## skill/release-billing-service.md" in context
        assert elapsed < 10
    assert hook_log(wiki.root) == []
