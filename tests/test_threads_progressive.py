"""A retrieve with a deadline in a program using the library (a server, a notebook): the
progressive answer's estimate of the CPU it gets (index/progressive.py, Clock)."""

from __future__ import annotations

import json
import subprocess
import sys

from memwiki import Wiki, load_config

PROGRAM = """
import json, sys, time
from pathlib import Path
from memwiki import Wiki, load_config

time.sleep(float(sys.argv[2]))  # a server waiting for its first question
server = Wiki.open(Path(sys.argv[1]), load_config({"embed": "hash"}))
modes = []
for _ in range(3):
    result = server.retrieve("billing deploy", notify=lambda m: None,
                             deadline=time.monotonic() + 2.0)
    modes.append([result.mode, result.index.get("note", "")])
print(json.dumps(modes))
"""


def test_a_program_idle_since_it_started_still_gets_vectors_within_a_deadline(tmp_path):
    """Bug: the progressive answer judged the CPU it would get by the CPU this process had
    used since it started, per second of its life: in a program using the library, idle
    between its start and its first questions, that read as a starved machine, and every
    retrieve with a deadline answered "BM25 only: vectors would not be ready within the
    deadline", with an embedder that takes microseconds (found after 20 s idle with a
    2 s deadline; until the process was a minute old). A command's process still counts
    from its start (tests/test_progressive.py)."""
    wiki, _ = Wiki.init(tmp_path / "wiki", config=load_config({"embed": "hash"}))
    wiki.commit_results(
        [
            {"track": "memory", "name": f"n{i}", "description": "billing",
             "content": f"# Billing\nbilling deploy argo {i}\n"}
            for i in range(4)
        ]
    )  # fmt: skip
    assert wiki.retrieve("billing", notify=lambda m: None).mode == "hybrid"  # vectors built
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path / "wiki"), "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["hybrid", ""]] * 3
