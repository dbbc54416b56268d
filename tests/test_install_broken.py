"""An installation missing one of its modules (a dependency uninstalled by hand, a partial
upgrade): the prompt hook fails open, and its log line says what is missing."""

from __future__ import annotations

import json
import os
import subprocess

from test_install_gone import venv_install


def test_the_hook_of_an_install_missing_a_module_names_it(tmp_path):
    """Bug: with whoosh gone from memwiki's environment, the hook answered nothing (as it
    should) and logged `retrieve failed: ModuleNotFoundError`, without saying which."""
    home = tmp_path / "home"
    home.mkdir()
    python = venv_install(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", MEMWIKI_DIR=str(tmp_path / "wiki"))
    subprocess.run(
        [str(python), "-m", "memwiki", "init"], env=env, check=True, capture_output=True,
        timeout=60, cwd=home,  # not this checkout's folder: `-m` imports from the cwd first
    )  # fmt: skip
    # whoosh, as an uninstalled package leaves it: ahead of the real one on sys.path.
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site / "whoosh").mkdir()
    (site / "whoosh" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'whoosh'\", name='whoosh')\n"
    )
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "secret words of the prompt"}
    done = subprocess.run(
        ["/bin/sh", "-c", f"{tmp_path / 'venv' / 'bin' / 'memwiki'} hook claude-code"],
        input=json.dumps(prompt), env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    log = (tmp_path / "wiki" / ".memwiki" / "logs" / "hook.log").read_text()
    [line] = log.splitlines()
    assert "ModuleNotFoundError (whoosh)" in line and "reinstall memwiki" in line, line
    assert "secret" not in log
