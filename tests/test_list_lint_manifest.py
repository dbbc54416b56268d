"""`list` and `lint` read only what changed since the index: the manifest stands in for the rest."""

from __future__ import annotations

import os
import time

import pytest

from memwiki import recallfile as rfmod
from memwiki.lint import lint_wiki
from memwiki.recallfile import RecallFile, render


def put(wiki, rel: str, text: str, age_s: float = 60.0) -> None:
    """Write a file with an mtime in the past: outside the manifest's racy window."""
    path = wiki.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    then = time.time() - age_s
    os.utime(path, (then, then))


def note(name: str, description: str, **more) -> str:
    return render(RecallFile("memory", name, description, body="body\n", **more))


@pytest.fixture
def indexed(wiki, cli, monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")
    # The files' ctimes are now, just before the index: inside its racy window, where
    # list parses them again (tests/test_clock_restored_mtime.py). A window of zero stands
    # for an index built a few seconds after the files were written.
    monkeypatch.setattr("memwiki.index.listing.RACY_NS", 0)
    put(wiki, "memory/alpha.md", note("alpha", "About alpha", tags=["x"]))
    put(wiki, "memory/beta.md", note("beta", "About beta"))
    put(wiki, "memory/broken.md", "no frontmatter\n")
    put(wiki, "skill/gamma.md", render(RecallFile("skill", "gamma", "About gamma", body="b\n")))
    code, _, err = cli("--wiki", wiki.root, "reindex")
    assert code == 0, err
    return wiki


def _no_parsing(monkeypatch, allowed: set[str]) -> list[str]:
    parsed: list[str] = []
    real = rfmod.try_read

    def spy(path, track, rel):
        parsed.append(rel)
        assert rel in allowed, f"{rel} was parsed although the index knows it"
        return real(path, track, rel)

    monkeypatch.setattr(rfmod, "try_read", spy)
    return parsed


def test_list_takes_unchanged_files_from_the_manifest(indexed, monkeypatch):
    before = indexed.list_recall_files(limit=100)
    parsed = _no_parsing(monkeypatch, {"memory/broken.md"})
    fresh = type(indexed)(indexed.root)  # a new process, as `memwiki list` is
    page = fresh.list_recall_files(limit=100)
    assert page.items == before.items
    assert [e.name for e in page.items] == ["alpha", "beta", "gamma"]
    assert page.items[0].tags == ["x"] and page.items[0].description == "About alpha"
    assert [p.path for p in page.skipped] == ["memory/broken.md"]  # problems are re-read
    assert parsed == ["memory/broken.md"]


def test_a_file_changed_after_the_index_is_parsed_again(indexed, monkeypatch):
    put(indexed, "memory/beta.md", note("beta", "Rewritten beta"), age_s=30)
    put(indexed, "memory/delta.md", note("delta", "New delta"), age_s=30)
    parsed = _no_parsing(monkeypatch, {"memory/broken.md", "memory/beta.md", "memory/delta.md"})
    page = type(indexed)(indexed.root).list_recall_files(limit=100)
    assert {e.name: e.description for e in page.items} == {
        "alpha": "About alpha",
        "beta": "Rewritten beta",
        "delta": "New delta",
        "gamma": "About gamma",
    }
    assert sorted(parsed) == ["memory/beta.md", "memory/broken.md", "memory/delta.md"]


def test_without_an_index_list_parses_everything(wiki):
    put(wiki, "memory/alpha.md", note("alpha", "About alpha"))
    assert [e.name for e in wiki.list_recall_files().items] == ["alpha"]


def test_a_damaged_manifest_only_costs_speed(indexed):
    (indexed.sidecar / "index" / "state.pkl").write_bytes(b"garbage")
    page = type(indexed)(indexed.root).list_recall_files(limit=100)
    assert [e.name for e in page.items] == ["alpha", "beta", "gamma"]


def test_lint_skips_files_the_index_parsed_but_reports_every_problem(indexed, cli, monkeypatch):
    put(
        indexed,
        "memory/plan-conflict.md",
        "---\nname: plan-conflict\ndescription: d\nconflict_of: memory/alpha.md\n---\nx\n",
    )
    assert cli("--wiki", indexed.root, "reindex")[0] == 0  # the conflict copy is indexed too
    before = lint_wiki(indexed)
    parsed = _no_parsing(monkeypatch, {"memory/broken.md", "memory/plan-conflict.md"})
    after = lint_wiki(indexed)
    assert after == before
    assert {p.path for p in after} == {"memory/broken.md", "memory/plan-conflict.md"}
    assert sorted(parsed) == ["memory/broken.md", "memory/plan-conflict.md"]
