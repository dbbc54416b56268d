"""The Claude Code UserPromptSubmit hook runtime: output shape, budget, and failing open."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from memwiki.config import load
from memwiki.errors import NotFound
from memwiki.hosts.integrate.prompt_hook import (
    MAX_CONTEXT_CHARS,
    clip,
    hook_log_path,
    run_claude_code_hook,
)

PROMPT = "why does checkout 500 on an empty cart? my token is hunter2"
HOOK_INPUT = json.dumps(
    {
        "session_id": "9b1e6c2a-5d3f-4e71-a0c4-2f8d7e6b1a90",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-shop/9b1e.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": PROMPT,
    }
)


def make_config(tmp_path: Path, bridging: bool = False):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    opts = {"wiki": str(tmp_path / "wiki")}
    if bridging:
        opts["bridging_run"] = "1"
    return load(options=opts, environ={"HOME": str(home)})


def memory_block(prompt: str, cwd: str | None = None) -> str:
    return (
        f"## Memory (memwiki)\n- memory/checkout.md lines 3-9: guard empty carts ({len(prompt)})\n"
    )


def raising(prompt: str, cwd: str | None = None) -> str:
    raise RuntimeError(f"index broken while reading {prompt}")


def sleeping(prompt: str, cwd: str | None = None) -> str:
    time.sleep(5)
    return "too late"


def log_lines(cfg) -> list[str]:
    path = hook_log_path(cfg)
    return path.read_text().splitlines() if path.exists() else []


def test_memory_is_returned_as_additional_context(tmp_path):
    cfg = make_config(tmp_path)
    code, out = run_claude_code_hook(HOOK_INPUT, cfg, memory_block, 2.0, hook_log_path(cfg))
    assert code == 0
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": memory_block(PROMPT),
        }
    }
    assert log_lines(cfg) == []


def test_empty_result_gives_no_output(tmp_path):
    cfg = make_config(tmp_path)
    assert run_claude_code_hook(HOOK_INPUT, cfg, lambda *_: "", 2.0, hook_log_path(cfg)) == (0, "")
    assert log_lines(cfg) == []


def test_malformed_input_fails_open_with_one_log_line_each(tmp_path):
    cfg = make_config(tmp_path)
    for bad in ("", "not json", "[1]", '{"prompt": 3}', '{"prompt": "  "}', "{}"):
        assert run_claude_code_hook(bad, cfg, memory_block, 2.0, hook_log_path(cfg)) == (0, "")
    lines = log_lines(cfg)
    assert len(lines) == 6 and all("malformed input" in ln for ln in lines)


def test_exception_fails_open_and_logs_no_content(tmp_path):
    cfg = make_config(tmp_path)
    assert run_claude_code_hook(HOOK_INPUT, cfg, raising, 2.0, hook_log_path(cfg)) == (0, "")
    (line,) = log_lines(cfg)
    assert "RuntimeError" in line and "hunter2" not in line and "checkout" not in line


def test_memwiki_error_message_is_logged(tmp_path):
    cfg = make_config(tmp_path)

    def no_wiki(prompt: str, cwd: str | None = None) -> str:
        raise NotFound("no wiki at /nowhere")

    assert run_claude_code_hook(HOOK_INPUT, cfg, no_wiki, 2.0, hook_log_path(cfg)) == (0, "")
    assert "no wiki at /nowhere" in log_lines(cfg)[0]


def test_timeout_answers_within_the_budget(tmp_path):
    cfg = make_config(tmp_path)
    started = time.monotonic()
    result = run_claude_code_hook(HOOK_INPUT, cfg, sleeping, 0.3, hook_log_path(cfg))
    elapsed = time.monotonic() - started
    assert result == (0, "")
    assert 0.2 < elapsed < 1.5  # the budget less the margin kept for writing and leaving
    assert "timeout" in log_lines(cfg)[0]


def test_timeout_in_a_real_process_exits_promptly(tmp_path):
    # The process must not wait for the abandoned retrieval thread before exiting.
    script = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
from memwiki.config import load
from memwiki.hosts.integrate.prompt_hook import run_claude_code_hook
cfg = load(options={{"wiki": {str(tmp_path / "wiki")!r}}}, environ={{"HOME": {str(tmp_path)!r}}})
def slow(prompt, cwd):
    time.sleep(30)
    return "late"
code, out = run_claude_code_hook(sys.stdin.read(), cfg, slow, 0.5, None)
sys.stdout.write(out)
sys.exit(code)
"""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", script], input=HOOK_INPUT, capture_output=True, text=True, timeout=20
    )
    assert proc.returncode == 0 and proc.stdout == ""
    assert time.monotonic() - started < 10


def test_bridging_run_gets_no_memory(tmp_path):
    cfg = make_config(tmp_path, bridging=True)
    assert run_claude_code_hook(HOOK_INPUT, cfg, memory_block, 2.0, hook_log_path(cfg)) == (0, "")


def test_non_text_result_fails_open(tmp_path):
    cfg = make_config(tmp_path)
    assert run_claude_code_hook(HOOK_INPUT, cfg, lambda *_: None, 2.0, hook_log_path(cfg)) == (
        0,
        "",
    )
    assert "NoneType" in log_lines(cfg)[0]


def test_large_memory_is_cut_at_a_line_boundary(tmp_path):
    cfg = make_config(tmp_path)
    big = "".join(f"- line {i} of remembered detail\n" for i in range(2000))
    code, out = run_claude_code_hook(HOOK_INPUT, cfg, lambda *_: big, 2.0, hook_log_path(cfg))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= MAX_CONTEXT_CHARS
    assert context.endswith("`memwiki retrieve` for the rest]")
    assert clip("short") == "short"


def test_unwritable_log_still_fails_open(tmp_path):
    cfg = make_config(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert run_claude_code_hook("nope", cfg, memory_block, 1.0, blocker / "hook.log") == (0, "")


def _session_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[3])  # field 6: session id


def test_hook_process_runs_in_a_session_of_its_own(tmp_path):
    # Autogroup scheduling shares CPU per session: the hook must not share its caller's
    # with whatever else runs there (docs/hosts.md, Claude Code).
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "MEMWIKI_DIR": str(tmp_path / "no-wiki"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memwiki", "hook", "claude-code"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        mine = _session_of(proc.pid)
        deadline = time.monotonic() + 20
        while mine != proc.pid and time.monotonic() < deadline:
            time.sleep(0.02)  # the hook waits for its stdin meanwhile
            mine = _session_of(proc.pid)
        assert mine == proc.pid != _session_of(os.getpid())
        out, _ = proc.communicate(json.dumps({"prompt": "anything"}).encode(), timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out == b""  # no wiki: the prompt passes unchanged


def test_a_group_leader_keeps_its_session():
    # Run from a shell's job control the hook leads its process group; setsid would fail.
    code = (
        "import os; from memwiki.cli.fast import leave_callers_session as f; "
        "s = os.getsid(0); print(f(), os.getsid(0) == s)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.stdout.split() == ["False", "True"], done.stderr
