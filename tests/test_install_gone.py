"""The memwiki that install and schedule named is gone (its virtualenv deleted, a pipx or
uv tool uninstalled): `hosts detect` says so and names the command that rewrites it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import fake_crontab

MINIMAL_PATH = "/usr/bin:/bin"


def test_detect_names_the_fix_for_a_hook_and_schedule_whose_memwiki_is_gone(tmp_path):
    """Bug: detect noted the gone path but its next command stayed None (nothing mined yet),
    so `hosts detect --json`, what an agent setting memwiki up reads, offered nothing while
    every prompt ran `/bin/sh: …/memwiki: not found`; its note also sent the person to
    `install` for the schedule's wrapper, which only `schedule --install` rewrites."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    bindir, table = fake_crontab(tmp_path)
    # A virtualenv of its own, here a link to this one, deleted later.
    venv = home / ".venvs" / "memwiki"
    venv.parent.mkdir()
    venv.symlink_to(Path(sys.executable).parent.parent)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": f"{bindir}:{MINIMAL_PATH}",
        "MEMWIKI_DIR": str(tmp_path / "wiki"),
    }
    if env.get("PYTHONPATH"):  # this checkout, whatever the child's directory
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep)
        )

    def memwiki(python: Path, *argv: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(python), "-m", "memwiki", *argv], env=env, capture_output=True, text=True,
            timeout=60, cwd=home,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    old = venv / "bin" / Path(sys.executable).name
    memwiki(old, "init", str(tmp_path / "wiki"))
    memwiki(old, "install", "--host", "claude-code")
    memwiki(old, "schedule", "--host", "claude-code", "--install")
    assert str(venv / "bin" / "memwiki") in table.read_text(encoding="utf-8") + (
        home / ".config" / "memwiki" / "bridge" / "claude-code.sh"
    ).read_text(encoding="utf-8")
    venv.unlink()

    settings = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    hook = subprocess.run(
        ["/bin/sh", "-c", command], input="{}", env={"HOME": str(home), "PATH": MINIMAL_PATH},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert hook.returncode == 127  # what Claude Code shows on every prompt until fixed

    def detect() -> dict:
        out = memwiki(Path(sys.executable), "hosts", "detect", "--json").stdout
        [status] = [h for h in json.loads(out)["hosts"] if h["host"] == "claude-code"]
        return status

    status = detect()
    assert status["next_command"] == "memwiki install --host claude-code", status
    gone = [n for n in status["notes"] if "no longer exists" in n]
    assert len(gone) == 4, gone  # CLAUDE.md, settings.json, the wrapper, the task prompt
    assert sum("`memwiki schedule --host claude-code --install`" in n for n in gone) == 2

    memwiki(Path(sys.executable), "install", "--host", "claude-code")
    status = detect()
    assert status["next_command"] == "memwiki schedule --host claude-code --install", status

    memwiki(Path(sys.executable), "schedule", "--host", "claude-code", "--install")
    status = detect()
    assert not any("no longer exists" in n for n in status["notes"]), status["notes"]
    assert status["next_command"] != "memwiki schedule --host claude-code --install"
