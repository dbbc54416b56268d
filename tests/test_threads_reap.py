"""Retrieves from several threads at once after an index writer this process forked
(result.write_later()) has finished: each call reaps finished children first."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from memwiki import RecallFile, Wiki, load_config


def _zombies() -> int:
    """This process's children that have ended and wait to be reaped."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        count += int(fields[1]) == os.getpid() and fields[0] == "Z"
    return count


def test_threads_reaping_one_finished_writer_at_once_never_fail(tmp_path) -> None:
    """Bug: every retrieve reaps the writers the process forked (deferred.reap); two
    threads that both found the same finished writer both removed it from the list, and
    the second retrieve failed with `ValueError: list.remove(x): x not in list`. Before
    the fix this test failed in 5 runs of 5 (and 14 to 21 rounds of 50 in a script)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    wiki, _ = Wiki.init(tmp_path / "wiki", config=load_config({"embed": "hash"}))
    quiet = lambda message: None  # noqa: E731
    wiki.save(RecallFile("memory", "kafka", "The kafka cluster", body="# Kafka\nbrokers\n"))
    assert wiki.retrieve("kafka", mode="bm25", notify=quiet).paths()  # the index built
    errors: list[str] = []
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns often: the race shows in few rounds
    try:
        for round_ in range(25):
            # single-threaded here, so the edit is written by a forked child
            wiki.put(RecallFile("memory", "kafka", "The kafka cluster", body=f"# K\n{round_}\n"))
            result = wiki.retrieve("kafka brokers", mode="bm25", notify=quiet, defer=True)
            assert result.write_later is not None and result.write_later() == "forked"
            for _ in range(1000):  # the writer commits the edit and ends; nobody reaps it yet
                if _zombies():
                    break
                time.sleep(0.005)
            assert _zombies() == 1
            start = threading.Barrier(8, timeout=30)

            def retrieve(start: threading.Barrier = start) -> None:
                try:
                    start.wait()
                    assert wiki.retrieve("kafka", mode="bm25", notify=quiet).paths()
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")

            threads = [threading.Thread(target=retrieve, daemon=True) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            assert not any(thread.is_alive() for thread in threads)
            assert _zombies() == 0  # reaped all the same
    finally:
        sys.setswitchinterval(switch)
    assert errors == []
