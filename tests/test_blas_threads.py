"""The command line gives numpy's BLAS one thread unless the user chose a number (config.one_blas_thread)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Asks the OpenBLAS numpy loaded how many threads it runs (numpy's wheels bundle
# scipy-openblas; another BLAS prints "unknown" and the test is skipped).
PROBE = """
import ctypes, os, sys
from memwiki.cli import main
main(['--wiki', sys.argv[1], 'retrieve', 'webhook secret', '--json'])
import numpy  # imported by the vector search already
threads = "unknown"
with open("/proc/self/maps") as maps:
    libs = {line.split()[-1] for line in maps if "openblas" in line and line.rstrip().endswith(".so")}
for lib in libs:
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                 "openblas_get_num_threads"):
        fn = getattr(ctypes.CDLL(lib), name, None)
        if fn is not None:
            threads = fn()
            break
print(os.environ.get('OPENBLAS_NUM_THREADS'), threads)
"""


def blas_after_retrieve(root, user_value: str | None) -> tuple[str, str]:
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
    value, threads = done.stdout.strip().splitlines()[-1].split()
    return value, threads


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="finds OpenBLAS in /proc")
def test_retrieve_runs_numpy_with_one_blas_thread_unless_told(wiki):
    (wiki.root / "memory" / "webhook.md").write_text(
        "---\nname: webhook\ndescription: webhook secret rotation\n---\n## Rotate\nEvery quarter.\n"
    )
    value, threads = blas_after_retrieve(wiki.root, None)
    if threads == "unknown":
        pytest.skip("numpy's BLAS is not OpenBLAS")
    assert (value, threads) == ("1", "1")
    # the user's choice stands (OpenBLAS runs at most one thread per core)
    cores = str(min(2, len(os.sched_getaffinity(0))))
    assert blas_after_retrieve(wiki.root, cores) == (cores, cores)
