"""Staging a file that an editor (or `git checkout`) rewrites in place at that moment.

libgit2 stats the file, then reads that many bytes; a rewrite in between failed the add
with "failed to read file into stream" (8% of adds beside a process rewriting a file), and
`memwiki commit`, `sync` and `add` with it (exit 5). Found by the stress test of a person's
`git commit` racing memwiki's own (pre-commit stashes and restores the work tree).
"""

from __future__ import annotations

import subprocess
import sys

import pygit2

from memwiki.git import repo as gitstore

REWRITER = r"""
import sys, time
path, until = sys.argv[1], time.monotonic() + 30
i = 0
while time.monotonic() < until:
    with open(path, "wb") as fh:  # in place: truncated, then written, as vim or git do
        fh.write(b"x" * (10 if i % 2 else 3_000_000))
    i += 1
"""


def test_a_file_rewritten_while_it_is_staged_is_staged_as_it_is_then(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "w"), initial_head="main")
    note = tmp_path / "w" / "x.md"
    note.write_bytes(b"first")
    writer = subprocess.Popen([sys.executable, "-c", REWRITER, str(note)])
    try:
        for _ in range(300):  # about 25 failed adds before the retry
            gitstore.stage_paths(repo, ["x.md"])
    finally:
        writer.kill()
        writer.wait(timeout=30)
    # Staged as libgit2 read it (an in-place write can be caught half done, as git's own add
    # would be: the next commit takes the finished file).
    assert "x.md" in gitstore.read_index(repo)
