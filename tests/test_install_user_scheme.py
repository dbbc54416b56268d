"""memwiki installed with `pip install --user`: its script is in ~/.local/bin, not beside
the python that runs it, and what install writes into agents' files must still find it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from importlib.resources import files
from pathlib import Path

import pytest

import memwiki

MINIMAL_PATH = "/usr/bin:/bin"


def base_python() -> Path:
    """The python this test's virtualenv was made from (user site-packages are off in a venv)."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return Path(sys.base_prefix) / "bin" / name


@pytest.fixture
def user_install(tmp_path) -> tuple[Path, Path]:
    """A HOME whose ~/.local holds memwiki as `pip install --user` lays it out: the package
    in the user site-packages, the console script in ~/.local/bin. Returns (home, script)."""
    python = base_python()
    if not python.is_file():
        pytest.skip(f"no base python at {python}")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": MINIMAL_PATH}
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getusersitepackages())"],
        env=env, capture_output=True, text=True, timeout=30, check=True,
    ).stdout.strip()  # fmt: skip
    site_dir = Path(site)
    assert site_dir.is_relative_to(home), site_dir
    package = site_dir / "memwiki"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(memwiki.__file__).parent, package, ignore=ignore)
    templates = Path(str(files("memwiki.templates")))
    shutil.copytree(templates, package / "templates", ignore=ignore, dirs_exist_ok=True)
    # The dependencies come from this test's environment, after the user site-packages.
    (site_dir / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    bindir = home / ".local" / "bin"
    bindir.mkdir(parents=True)
    script = bindir / "memwiki"
    script.write_text(f"#!{python}\nimport sys\nfrom memwiki.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return home, script


def test_the_hook_of_a_user_install_runs_with_a_minimal_path(user_install, tmp_path):
    """Bug: with memwiki from `pip install --user`, install wrote the bare `memwiki hook
    claude-code` (it looked for the script only beside the python), and Claude Code running
    it with /usr/bin:/bin got `memwiki: not found`, exit 127, on every prompt."""
    home, script = user_install
    env = {"HOME": str(home), "PATH": f"{script.parent}:{MINIMAL_PATH}"}
    env["MEMWIKI_DIR"] = str(tmp_path / "wiki")
    (home / ".claude").mkdir()
    for argv in (["init", str(tmp_path / "wiki")], ["install", "--host", "claude-code"]):
        done = subprocess.run(
            ["memwiki", *argv], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.split()[0] == str(script)
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "anything", "cwd": str(home)}
    hook_env = {"HOME": str(home), "PATH": MINIMAL_PATH, "MEMWIKI_DIR": env["MEMWIKI_DIR"]}
    done = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(prompt), env=hook_env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_detect_names_a_bare_hook_an_older_user_install_wrote(home_memwiki):
    """The settings.json an older memwiki installed with `pip install --user` left: its bare
    `memwiki hook claude-code` is `not found` on a minimal PATH. detect says so and makes
    install the next command, which writes the absolute path."""
    home = home_memwiki.home
    (home / ".claude").mkdir()
    hook = {"type": "command", "command": "memwiki hook claude-code", "timeout": 10}
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}))

    def status() -> dict:
        out = home_memwiki("hosts", "detect", "--json").stdout
        return next(h for h in json.loads(out)["hosts"] if h["host"] == "claude-code")

    before = status()
    assert before["next_command"] == "memwiki install --host claude-code", before
    assert any("bare `memwiki`" in n for n in before["notes"]), before["notes"]
    assert home_memwiki("install", "--host", "claude-code").returncode == 0
    [group] = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert group["hooks"][0]["command"].split()[0].endswith("/memwiki")
    assert not any("bare `memwiki`" in n for n in status()["notes"])
