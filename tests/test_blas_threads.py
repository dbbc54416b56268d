"""The command line gives numpy's BLAS one thread unless the user chose a number (config.one_blas_thread)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import os, sys
from memwiki.cli import main
main(['--wiki', sys.argv[1], 'retrieve', 'webhook secret', '--json'])
import numpy  # imported by the vector search already
print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))
"""


def threads_after_retrieve(root, user_value: str | None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_value is not None:
        env["OPENBLAS_NUM_THREADS"] = user_value
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(root)],
        env={**env, "MEMWIKI_EMBED": "hash"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    value, tasks = done.stdout.strip().splitlines()[-1].split()
    return value, int(tasks)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_retrieve_runs_numpy_with_one_blas_thread_unless_told(wiki):
    (wiki.root / "memory" / "webhook.md").write_text(
        "---\nname: webhook\ndescription: webhook secret rotation\n---\n## Rotate\nEvery quarter.\n"
    )
    value, tasks = threads_after_retrieve(wiki.root, None)
    assert value == "1"
    user, more = threads_after_retrieve(wiki.root, "3")
    assert user == "3"  # the user's choice stands
    assert more == tasks + 2  # and OpenBLAS started its two extra threads for it
