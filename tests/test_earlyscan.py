"""The scan a retrieve forks at its start (index/earlyscan.py), taken by forkscan.start.

The thresholds are lowered so that a small real wiki takes the path of a 50,000-file one;
real forks, real pipes.
"""

from __future__ import annotations

import os
import sys

import pytest
from test_forkscan import make, no_children, write
from test_forkscan_early import rebuilt

from memwiki.config import load
from memwiki.index import earlyscan, forkscan
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the forked scan is Linux-only")

QUERY = "zebracorn billing webhook"


def index_of(wiki) -> Index:
    env = {"HOME": str(wiki.root.parent), "MEMWIKI_EMBED": "hash"}
    return Index(wiki, load({"wiki": str(wiki.root)}, environ=env), notify=lambda m: None)


def ranked(wiki, index: Index) -> list[tuple[str, float]]:
    found = retrieve(wiki, QUERY, index=index, notify=lambda m: None)
    return [(r.path, round(r.score, 9)) for r in found.results]


@pytest.fixture
def large(monkeypatch):
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)
    monkeypatch.setattr(earlyscan, "MIN_BASE_BYTES", 1)


def forks(monkeypatch) -> list[int]:
    """Count the forks made from here on."""
    made: list[int] = []
    real = os.fork

    def counting():
        pid = real()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting)
    return made


def test_a_scan_started_early_is_taken_and_finds_the_edit(tmp_path, monkeypatch, large) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update()
    write(wiki.root, "memory/note-3.md", "zebracorn early edit")
    assert earlyscan.start(wiki.root)
    made = forks(monkeypatch)
    answer = ranked(wiki, index_of(wiki))
    assert made == []  # no second scan child: the early one was taken
    assert earlyscan._EARLY == {}
    assert answer[0][0] == "memory/note-3.md"
    assert no_children()
    monkeypatch.undo()
    assert answer == rebuilt(wiki, tmp_path)


def test_a_commit_after_the_early_start_makes_it_stand_down(tmp_path, monkeypatch, large) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update()
    assert earlyscan.start(wiki.root)  # it reads the state as it is now
    write(wiki.root, "memory/note-5.md", "zebracorn committed edit")
    index_of(wiki).update()  # a writer commits another state.pkl
    write(wiki.root, "memory/note-6.md", "zebracorn later edit")
    made = forks(monkeypatch)
    answer = ranked(wiki, index_of(wiki))
    assert len(made) == 1  # the early child was stopped and a scan of this state forked
    assert earlyscan._EARLY == {}
    assert no_children()
    monkeypatch.undo()
    assert answer == rebuilt(wiki, tmp_path)


def test_a_retrieve_that_scans_in_process_stops_the_early_scan(tmp_path, large) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update(need_vectors=False)  # vectors missing: no speculation
    assert earlyscan.start(wiki.root)
    ranked(wiki, index_of(wiki))
    assert earlyscan._EARLY == {}
    assert no_children()


def test_small_wikis_start_nothing(tmp_path) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update()
    assert not earlyscan.start(wiki.root)  # a manifest base far below MIN_BASE_BYTES
    assert not earlyscan.start(tmp_path / "no-wiki")
    assert earlyscan._EARLY == {}
