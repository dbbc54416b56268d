"""A year of use in seconds: the sidecar's logs stay bounded and keep their newest lines.

The limit is memwiki.logfile.LIMIT_BYTES (256 KiB); the tests lower it so that a few
thousand lines stand for a year of failing prompts and background builds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from memwiki import logfile
from memwiki.config import load
from memwiki.hosts.integrate.prompt_hook import hook_log_path, run_claude_code_hook
from memwiki.index import background

LIMIT = 4096


def test_the_hooks_failure_log_is_bounded_and_keeps_the_newest_lines(tmp_path, monkeypatch):
    # Before: hook.log grew by ~70 bytes per failing prompt for ever (3,000 failures: 210 KB
    # and on; nothing rotated it).
    monkeypatch.setattr(logfile, "LIMIT_BYTES", LIMIT)
    (tmp_path / "home").mkdir()
    cfg = load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(tmp_path / "home")})
    log = hook_log_path(cfg)
    for i in range(600):  # ~40 KB of lines: ten times the limit
        assert run_claude_code_hook(f"bad {i}", cfg, lambda *_: "", 2.0, log) == (0, "")
    old = log.with_name("hook.log.1")
    assert log.stat().st_size <= LIMIT + 200
    assert old.stat().st_size <= LIMIT + 200
    assert sorted(p.name for p in log.parent.iterdir()) == [
        ".rotate.lock",
        "hook.log",
        "hook.log.1",
    ]
    lines = old.read_text().splitlines() + log.read_text().splitlines()
    assert all("malformed input: not JSON" in ln for ln in lines)
    assert len(lines) >= LIMIT // 80  # at least a limit's worth of the newest lines is kept


WRITER = """
import sys
from pathlib import Path
from memwiki import logfile
path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(count):
    logfile.append_line(path, f"{name} {i:05d} " + "x" * 40, limit=4096)
"""


def test_two_processes_appending_and_rotating_lose_no_newest_line(tmp_path):
    log = tmp_path / "logs" / "reindex.log"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(log), name, "1500"], env=env)
        for name in ("a", "b")
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    kept = (log.with_name("reindex.log.1").read_text() + log.read_text()).splitlines()
    # Every line whole (one write each, O_APPEND); the last line written is kept.
    assert all(len(ln) == len("a 00000 ") + 40 for ln in kept)
    assert kept[-1].split()[1] == "01499"
    # What is kept of each writer is its newest lines, in order, none missing between:
    # rotation never moved a fresh log over the rotated one.
    for name in ("a", "b"):
        mine = [int(ln.split()[1]) for ln in kept if ln.startswith(name + " ")]
        if mine:
            assert mine == list(range(mine[0], 1500))
    assert len(kept) * 49 >= 4096  # at least one limit's worth
    assert log.stat().st_size + log.with_name("reindex.log.1").stat().st_size <= 2 * 4096 + 200


def test_a_background_reindex_starts_its_log_anew_when_it_is_full(tmp_path, monkeypatch):
    # Before: reindex.log was opened for appending by every background build, hundreds a
    # year, and never cut.
    from memwiki.wiki import Wiki

    monkeypatch.setattr(logfile, "LIMIT_BYTES", LIMIT)
    monkeypatch.setenv("MEMWIKI_EMBED", "none")
    wiki, _ = Wiki.init(tmp_path / "wiki")
    log = background.log_path(wiki.sidecar)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("an old build's line\n" * 400)  # 8 KB: past the limit
    assert background.start(wiki.root, wiki.sidecar)
    deadline = time.monotonic() + 60
    while background._STARTED and time.monotonic() < deadline:
        background.reap()
        time.sleep(0.05)
    assert not background._STARTED, "the background reindex did not finish within 60 s"
    assert log.with_name("reindex.log.1").read_text().count("an old build's line") == 400
    assert "background reindex" in log.read_text() and "old build" not in log.read_text()
