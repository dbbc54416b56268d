"""The memorize package loads its parts on first use; its public names stay what they were."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIX = Path(__file__).parent / "fixtures" / "hosts" / "claude-code"


def test_a_bridge_prepare_that_finds_nothing_new_loads_no_run_machinery(tmp_path, isolated_env):
    # The hourly `bridge prepare` usually finds nothing new, yet it imported the whole
    # memorize package (merges, validation, the scrubber, pygit2): 60 ms of a 280 ms run;
    # and every host's reader, for the one host it reads (15 ms more).
    shutil.copytree(FIX, isolated_env / ".claude")
    wiki = tmp_path / "wiki"
    env = {**os.environ, "MEMWIKI_EMBED": "none"}
    script = (
        "import sys\n"
        "from memwiki.cli import main\n"
        f"argv = ['-w', {str(wiki)!r}]\n"
        "assert main([*argv, 'init']) == 0\n"
        "assert main([*argv, 'bridge', 'prepare', '--host', 'claude-code']) == 0\n"
        "assert main([*argv, 'bridge', 'commit', '--host', 'claude-code']) == 0\n"
        "loaded = set(sys.modules)\n"
        "for name in list(sys.modules):\n"
        "    if name.startswith(('memwiki', 'pygit2')):\n"
        "        del sys.modules[name]\n"
        "from memwiki.cli import main\n"
        "assert main([*argv, 'bridge', 'prepare', '--host', 'claude-code']) == 0\n"
        "heavy = ('memwiki.memorize.commit_run', 'memwiki.memorize.prepare_run',\n"
        "         'memwiki.memorize.scrub', 'memwiki.memorize.validate', 'memwiki.git.merge')\n"
        "assert all(name in loaded for name in heavy), 'the first prepare did use them'\n"
        "print('LOADED', sorted(name for name in heavy if name in sys.modules))\n"
        "hosts = [m for m in sys.modules if m.startswith('memwiki.hosts.mining.')]\n"
        "print('HOSTS', sorted(m.rsplit('.', 1)[1] for m in hosts))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "claude-code: nothing new to memorize" in done.stdout
    assert done.stdout.splitlines()[-2] == "LOADED []"
    # Only the host read is imported (not the others, nor sqlite3 through them).
    assert done.stdout.splitlines()[-1] == (
        "HOSTS ['base', 'bridge', 'claude_code', 'collect', 'cursors', 'records', 'workdirs']"
    )


def test_the_public_names_are_the_functions_whatever_was_imported_first():
    # With the modules named prepare.py and commit.py, importing either submodule replaced
    # the function of the same name on the package: memorize.commit(...) was a module.
    script = (
        "import memwiki.memorize.commit_run, memwiki.memorize.prepare_run\n"
        "from memwiki import memorize\n"
        "from memwiki.memorize import *\n"
        "import inspect\n"
        "names = memorize.__all__\n"
        "assert all(not inspect.ismodule(getattr(memorize, n)) for n in names), names\n"
        "assert memorize.commit.__module__ == 'memwiki.memorize.commit_run'\n"
        "assert prepare.__module__ == 'memwiki.memorize.prepare_run'\n"
        "try:\n"
        "    memorize.nothing_of_that_name\n"
        "except AttributeError as exc:\n"
        "    print('missing:', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "has no attribute 'nothing_of_that_name'" in done.stdout
