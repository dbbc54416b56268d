"""The crontab entry and the bridging wrapper: idempotent, byte-identical, really runnable."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.errors import InvalidInput
from memwiki.hosts.integrate.schedule import (
    HEADLESS,
    bridge_files,
    crontab_with_entry,
    crontab_without_entry,
    install_schedule,
    marker,
    read_crontab,
    render_wrapper,
    schedule_entry,
    uninstall_schedule,
)
from memwiki.hosts.integrate.texts import task_prompt

EXISTING = "MAILTO=me@example.org\n# nightly backup\n0 3 * * * /usr/local/bin/backup --all\n"


def make_config(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "wiki").mkdir(exist_ok=True)
    return load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home)})


def test_entry_is_marked_and_runs_the_wrapper(tmp_path):
    cfg = make_config(tmp_path)
    entry = schedule_entry("claude-code", cfg)
    assert entry.endswith(marker("claude-code"))
    assert entry.startswith("7 * * * * /bin/sh ")
    assert str(bridge_files("claude-code", cfg).wrapper) in entry
    with pytest.raises(InvalidInput):
        schedule_entry("generic", cfg)


@pytest.mark.parametrize("original", ["", EXISTING, EXISTING + "\n\n"])
def test_crontab_install_is_idempotent_and_removal_byte_identical(tmp_path, original):
    cfg = make_config(tmp_path)
    entry = schedule_entry("codex", cfg)
    once = crontab_with_entry(original, "codex", entry)
    assert crontab_with_entry(once, "codex", entry) == once
    assert once.count(marker("codex")) == 1 and once.startswith(original)
    both = crontab_with_entry(once, "hermes", schedule_entry("hermes", cfg))
    assert crontab_without_entry(crontab_without_entry(both, "hermes"), "codex") == original
    assert crontab_without_entry(once, "codex") == original


def test_changed_entry_is_replaced_in_place(tmp_path):
    cfg = make_config(tmp_path)
    old = f"{EXISTING}5 * * * * /bin/sh /old/path.sh {marker('codex')}\n0 1 * * * other\n"
    new = crontab_with_entry(old, "codex", schedule_entry("codex", cfg))
    lines = new.splitlines()
    assert lines[3] == schedule_entry("codex", cfg) and lines[4] == "0 1 * * * other"


def test_crontab_without_trailing_newline_gets_one(tmp_path):
    cfg = make_config(tmp_path)
    text = crontab_with_entry("0 3 * * * backup", "codex", schedule_entry("codex", cfg))
    assert text.startswith("0 3 * * * backup\n") and text.endswith("\n")


def test_percent_in_paths_is_escaped_for_cron(tmp_path):
    cfg = load(options={"wiki": str(tmp_path / "w")}, environ={"HOME": str(tmp_path / "100%")})
    assert "100\\%" in schedule_entry("hermes", cfg)


def run_wrapper(tmp_path: Path, cfg, headless: str) -> subprocess.CompletedProcess:
    files = bridge_files("hermes", cfg)
    files.wrapper.parent.mkdir(parents=True, exist_ok=True)
    files.prompt.write_text(task_prompt("hermes"))
    files.wrapper.write_text(render_wrapper("hermes", cfg, headless=headless))
    return subprocess.run(
        ["/bin/sh", str(files.wrapper)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )


def test_wrapper_sets_bridging_run_and_passes_the_prompt(tmp_path):
    cfg = make_config(tmp_path)
    out = tmp_path / "seen.txt"
    headless = f'printf "%s|%s|%s" "$MEMWIKI_BRIDGING_RUN" "$(pwd)" "$PROMPT" > {out}'
    proc = run_wrapper(tmp_path, cfg, headless)
    assert proc.returncode == 0, proc.stderr
    flag, cwd, prompt = out.read_text().split("|", 2)
    assert flag == "1" and cwd == str(tmp_path / "wiki")
    assert prompt.strip() == task_prompt("hermes").strip()
    assert "memwiki bridge prepare --host hermes" in prompt
    assert "memwiki bridge commit --host hermes" in prompt


def test_wrapper_skips_while_another_run_holds_the_lock(tmp_path):
    if shutil.which("flock") is None:
        pytest.skip("flock(1) is not installed; the wrapper falls back to a mkdir lock")
    cfg = make_config(tmp_path)
    out = tmp_path / "ran.txt"
    lock = bridge_files("hermes", cfg).lock
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = run_wrapper(tmp_path, cfg, f"touch {out}")
    assert proc.returncode == 0 and not out.exists()
    run_wrapper(tmp_path, cfg, f"touch {out}")
    assert out.exists()


def test_every_scheduled_host_has_a_headless_command():
    assert set(HEADLESS) == {"claude-code", "codex", "cursor", "openclaw", "hermes"}
    assert all('"$PROMPT"' in cmd for cmd in HEADLESS.values())


def test_real_crontab_round_trip(tmp_path):
    # This edits the real user's crontab (cron has no per-HOME crontab), so it only runs
    # when asked for, e.g. in a throwaway CI container, and restores the exact text after.
    if shutil.which("crontab") is None:
        pytest.skip("no crontab command on this machine")
    if os.environ.get("MEMWIKI_TEST_REAL_CRONTAB") != "1":
        pytest.skip("edits the real user crontab; set MEMWIKI_TEST_REAL_CRONTAB=1 to run it")
    cfg = make_config(tmp_path)
    before = read_crontab()
    try:
        first = install_schedule("codex", cfg)
        assert first.action in ("installed", "updated")
        assert install_schedule("codex", cfg).action == "unchanged"
        assert uninstall_schedule("codex", cfg).action == "removed"
        assert read_crontab() == before
    finally:
        from memwiki.hosts.integrate.schedule import write_crontab

        if read_crontab() != before:
            write_crontab(before)


@pytest.mark.parametrize(
    ("host", "variables"),
    [
        ("claude-code", {"CLAUDE_CONFIG_DIR": "claude cfg"}),
        ("codex", {"CODEX_HOME": "codex-home"}),
        ("hermes", {"HERMES_HOME": "hermes-home"}),
        ("openclaw", {"OPENCLAW_STATE_DIR": "oc-state", "OPENCLAW_CONFIG_PATH": "oc.json"}),
    ],
)
def test_the_scheduled_run_keeps_the_agents_own_home(tmp_path, host, variables):
    """Bug: cron starts without CLAUDE_CONFIG_DIR, CODEX_HOME, …, so the scheduled agent and
    its `bridge prepare` used the default home: a person whose agent lives elsewhere got
    their sessions never mined (and the agent without its settings)."""
    paths = {k: str(tmp_path / v) for k, v in variables.items()}
    (tmp_path / "wiki").mkdir()
    (tmp_path / "home").mkdir()
    environ = {"HOME": str(tmp_path / "home"), **paths}
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ=environ)
    out = tmp_path / "seen.txt"
    names = sorted(paths)
    shown = "|".join(f"${{{n}:-unset}}" for n in names)
    files = bridge_files(host, cfg)
    files.wrapper.parent.mkdir(parents=True, exist_ok=True)
    files.prompt.write_text("task\n")
    files.wrapper.write_text(render_wrapper(host, cfg, headless=f'printf "%s" "{shown}" > {out}'))
    cron = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}  # cron's environment
    proc = subprocess.run(
        ["/bin/sh", str(files.wrapper)], capture_output=True, text=True, timeout=30, env=cron
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().split("|") == [paths[n] for n in names]


def test_a_home_variable_that_is_not_absolute_is_exported_as_the_folder_read(tmp_path, monkeypatch):
    """Bug: CLAUDE_CONFIG_DIR=~/cc (or a relative path) went into the wrapper as written;
    the wrapper runs in the run's workspace, where the agent (which expands no ~) and
    `bridge prepare` would read <workspace>/~/cc. It is exported as the folder memwiki read
    where schedule --install ran."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wiki").mkdir()
    (tmp_path / "home").mkdir()
    environ = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": "~/cc"}
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ=environ)
    out = tmp_path / "seen.txt"
    files = bridge_files("claude-code", cfg)
    files.wrapper.parent.mkdir(parents=True, exist_ok=True)
    files.prompt.write_text("task\n")
    headless = f'printf "%s" "$CLAUDE_CONFIG_DIR" > {out}'
    files.wrapper.write_text(render_wrapper("claude-code", cfg, headless=headless))
    cron = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        ["/bin/sh", str(files.wrapper)], capture_output=True, text=True, timeout=30, env=cron
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == str(tmp_path / "~" / "cc")


def test_the_scheduled_runs_log_is_rotated_past_its_limit(tmp_path):
    # Before: cron appended every hourly run's whole output (a codex transcript: tens of
    # KB) to <host>.log for ever.
    from memwiki.hosts.integrate.schedule import BRIDGE_LOG_LIMIT

    cfg = make_config(tmp_path)
    files = bridge_files("hermes", cfg)
    files.wrapper.parent.mkdir(parents=True, exist_ok=True)
    files.prompt.write_text(task_prompt("hermes"))
    files.log.write_text("an old run\n" * (BRIDGE_LOG_LIMIT // 11 + 10))

    def cron_runs(output: str) -> None:  # as the crontab line runs it
        files.wrapper.write_text(render_wrapper("hermes", cfg, headless=f"echo {output}"))
        line = f"/bin/sh {files.wrapper} >> {files.log} 2>&1"
        env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
        subprocess.run(["/bin/sh", "-c", line], env=env, timeout=30, check=True)

    cron_runs("first")
    old = files.log.with_name(files.log.name + ".1")
    assert old.read_text().endswith("an old run\nfirst\n")  # nothing lost, this run's too
    assert not files.log.exists()
    cron_runs("second")
    cron_runs("third")
    assert files.log.read_text() == "second\nthird\n"  # under the limit: appended to
    assert old.read_text().endswith("first\n")
