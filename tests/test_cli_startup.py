"""What a cold `memwiki` process imports: every command pays for it before it does anything."""

from __future__ import annotations

import json
import subprocess
import sys

# Run in one fresh interpreter: each main() is a command as an agent runs it, and what
# sys.modules holds afterwards is what those commands imported.
LOADED = """
import json, sys
from memwiki.cli import main
codes = [main(argv) for argv in json.loads(sys.argv[1])]
print(json.dumps({"codes": codes, "modules": sorted(sys.modules)}))
"""


def loaded_after(*commands: list[str]) -> set[str]:
    """The modules a fresh process holds after running these commands (each must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, json.dumps(commands)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["codes"] == [0] * len(commands), done.stderr
    return set(report["modules"])


def test_commands_that_never_retrieve_import_no_index_code(wiki):
    """Bug: memwiki/cli/__init__.py imported index/progressive.py (and threading) for the
    Ctrl-C note and the process start time, so every command loaded index code."""
    w = ["-w", str(wiki.root)]
    modules = loaded_after(["config", "show", *w], ["hosts", "detect"], ["list", "--help"])
    assert not {m for m in modules if m.startswith("memwiki.index")}
