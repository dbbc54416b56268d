"""The memwiki that install and schedule named is gone (its virtualenv deleted, a pipx or
uv tool uninstalled): `hosts detect` says so and names the command that rewrites it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.resources import files
from pathlib import Path

import pytest
from conftest import fake_crontab

import memwiki

MINIMAL_PATH = "/usr/bin:/bin"


def checkout_templates() -> Path:
    """The templates of the memwiki under test: the checkout's, else the installed ones."""
    checkout = Path(memwiki.__file__).resolve().parents[1] / "templates"
    return checkout if checkout.is_dir() else Path(str(files("memwiki.templates")))


def venv_install(venv: Path, base: Path | None = None) -> Path:
    """memwiki in a virtualenv of its own, laid out as pip lays it out (the package and its
    templates in site-packages, bin/memwiki); the dependencies come from this test's
    environment. Returns the venv's python."""
    subprocess.run(
        [str(base or sys.executable), "-m", "venv", "--without-pip", str(venv)],
        check=True,
        timeout=60,
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout.strip()  # fmt: skip
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(memwiki.__file__).parent, Path(site) / "memwiki", ignore=ignore)
    templates = Path(site) / "memwiki" / "templates"
    shutil.copytree(checkout_templates(), templates, ignore=ignore, dirs_exist_ok=True)
    (Path(site) / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    script = venv / "bin" / "memwiki"
    script.write_text(f"#!{python}\nimport sys\nfrom memwiki.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return python


class Setup:
    """A private HOME with a stand-in crontab, and a memwiki installed in its own venv."""

    def __init__(self, tmp_path: Path, base: Path | None = None) -> None:
        self.home = tmp_path / "home"
        (self.home / ".claude").mkdir(parents=True)
        self.bindir, self.table = fake_crontab(tmp_path)
        self.venv = self.home / ".venvs" / "memwiki"
        self.old = venv_install(self.venv, base)
        self.env = {
            **os.environ,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "PATH": f"{self.bindir}:{MINIMAL_PATH}",
            "MEMWIKI_DIR": str(tmp_path / "wiki"),
        }
        if self.env.get("PYTHONPATH"):  # this checkout, whatever the child's directory
            parts = self.env["PYTHONPATH"].split(os.pathsep)
            self.env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in parts)
        self.memwiki(self.old, "init", str(tmp_path / "wiki"))

    def memwiki(self, python: Path, *argv: str) -> subprocess.CompletedProcess:
        """`python -m memwiki ARGV`: the venv's memwiki, or this test's (sys.executable)."""
        env = dict(self.env)
        if python != Path(sys.executable):
            env.pop("PYTHONPATH", None)  # the venv's own copy, not this checkout
        done = subprocess.run(
            [str(python), "-m", "memwiki", *argv], env=env, capture_output=True, text=True,
            timeout=60, cwd=self.home,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done


def test_detect_names_the_fix_for_a_hook_and_schedule_whose_memwiki_is_gone(tmp_path):
    """Bug: detect noted the gone path but its next command stayed None (nothing mined yet),
    so `hosts detect --json`, what an agent setting memwiki up reads, offered nothing while
    every prompt ran `/bin/sh: …/memwiki: not found`; its note also sent the person to
    `install` for the schedule's wrapper, which only `schedule --install` rewrites."""
    setup = Setup(tmp_path)
    home, venv, memwiki = setup.home, setup.venv, setup.memwiki
    memwiki(setup.old, "install", "--host", "claude-code")
    memwiki(setup.old, "schedule", "--host", "claude-code", "--install")
    wrapper = home / ".config" / "memwiki" / "bridge" / "claude-code.sh"
    assert str(venv / "bin" / "memwiki") in wrapper.read_text(encoding="utf-8")
    shutil.rmtree(venv)

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

    # doctor, what a person runs when something is wrong, fails on the same files.
    doctor = subprocess.run(
        [sys.executable, "-m", "memwiki", "doctor", "--json"], env=setup.env, cwd=home,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert doctor.returncode == 1, doctor.stderr
    failed = [c for c in json.loads(doctor.stdout)["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == ["hosts"] * 4, failed
    assert "memwiki install --host claude-code" in failed[0]["detail"]

    memwiki(Path(sys.executable), "install", "--host", "claude-code")
    status = detect()
    assert status["next_command"] == "memwiki schedule --host claude-code --install", status

    memwiki(Path(sys.executable), "schedule", "--host", "claude-code", "--install")
    status = detect()
    assert not any("no longer exists" in n for n in status["notes"]), status["notes"]
    assert status["next_command"] != "memwiki schedule --host claude-code --install"


def test_the_schedule_of_a_memwiki_that_is_gone_starts_no_agent(tmp_path):
    """Bug: with the memwiki schedule --install named gone, cron still started the agent
    every hour (a paid headless session) with a task prompt whose every memwiki command
    failed; the log held only the agent's own output. The wrapper now checks first and
    writes one line naming the fix."""
    setup = Setup(tmp_path)
    home = setup.home
    called = tmp_path / "claude-called"
    claude = setup.bindir / "claude"
    claude.write_text(f'#!/bin/sh\necho "$@" >> {called}\n')
    claude.chmod(0o755)
    setup.memwiki(setup.old, "schedule", "--host", "claude-code", "--install")
    line = setup.table.read_text(encoding="utf-8").splitlines()[-1]
    command = line.split(" ", 5)[5]  # what cron runs: the five time fields taken off
    cron_env = {"HOME": str(home), "PATH": MINIMAL_PATH, "SHELL": "/bin/sh"}

    def cron_run() -> str:
        subprocess.run(["/bin/sh", "-c", command], env=cron_env, timeout=60)
        log = home / ".config" / "memwiki" / "bridge" / "claude-code.log"
        return log.read_text(encoding="utf-8") if log.exists() else ""

    cron_run()
    assert called.exists()  # the installed memwiki is there: the agent starts
    called.unlink()
    shutil.rmtree(setup.venv)
    log = cron_run()
    assert not called.exists(), "an agent was started for a memwiki that is gone"
    [last] = log.splitlines()[-1:]
    assert "does not run" in last and "memwiki schedule --host claude-code --install" in last


def test_detect_names_a_hook_whose_virtualenv_lost_its_python(tmp_path):
    """Bug: a Homebrew or pyenv upgrade removes the Python a virtualenv was made with; the
    venv's bin/memwiki is still there, but its `#!` names that Python, so the hook is
    `not found` on every prompt while detect, checking only that bin/memwiki exists,
    said nothing."""
    pythons = tmp_path / "python"
    pythons.mkdir()
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    real = Path(sys.base_prefix) / "bin" / name
    if not real.is_file():
        pytest.skip(f"no base python at {real}")
    (pythons / name).symlink_to(real)
    setup = Setup(tmp_path, base=pythons / name)
    setup.memwiki(setup.old, "install", "--host", "claude-code")
    shutil.rmtree(pythons)
    assert (setup.venv / "bin" / "memwiki").is_file()
    command = json.loads((setup.home / ".claude" / "settings.json").read_text())["hooks"][
        "UserPromptSubmit"
    ][0]["hooks"][0]["command"]
    hook = subprocess.run(
        ["/bin/sh", "-c", command], input="{}", capture_output=True, text=True, timeout=60,
        env={"HOME": str(setup.home), "PATH": MINIMAL_PATH},
    )  # fmt: skip
    assert hook.returncode in (126, 127), hook
    out = setup.memwiki(Path(sys.executable), "hosts", "detect", "--json").stdout
    [status] = [h for h in json.loads(out)["hosts"] if h["host"] == "claude-code"]
    assert status["next_command"] == "memwiki install --host claude-code", status
    broken = [n for n in status["notes"] if "whose Python" in n]
    assert len(broken) == 2 and str(setup.venv / "bin" / "python") in broken[0], broken
