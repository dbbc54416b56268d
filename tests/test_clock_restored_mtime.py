"""A note changed with its size and mtime put back (`cp -p` of an older copy, `touch -r`,
a sync tool restoring times): only its ctime says it changed. The index's scan looks at
ctimes (index/walk.py); `list` and lint's link cache trusted size and mtime alone, and
showed the old description or the old links until something else rewrote the caches.

The racy window (2 s) is set to zero here so that no test has to wait it out; the files'
mtimes are put in the past so that only the ctime can tell.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memwiki.wiki import Wiki

PAST = 1_700_000_000


def note(root: Path, name: str, description: str, body: str) -> Path:
    path = root / "memory" / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


def rewrite_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    info = path.stat()
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (info.st_size, info.st_mtime_ns)


@pytest.fixture
def wiki(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "hash")
    monkeypatch.setattr("memwiki.index.listing.RACY_NS", 0)
    monkeypatch.setattr("memwiki.links.RACY_NS", 0)
    w, _ = Wiki.init(tmp_path / "wiki")
    for name, text in (("alpha", "Links to [[bravo]]."), ("bravo", "B."), ("carol", "C.")):
        path = note(w.root, name, f"About {name}", text)
        os.utime(path, (PAST, PAST))
    return w.root


def test_list_sees_a_change_whose_mtime_was_put_back(wiki, cli):
    code, _, err = cli("--wiki", wiki, "retrieve", "alpha", "--mode", "bm25")  # the index
    assert code == 0, err
    code, out, _ = cli("--wiki", wiki, "list", "--json")
    assert {i["name"]: i["description"] for i in json.loads(out)["items"]}["alpha"] == (
        "About alpha"
    )
    rewrite_keeping_size_and_mtime(wiki / "memory/alpha.md", "About alpha", "Abbot alpha")
    code, out, _ = cli("--wiki", wiki, "list", "--json")
    assert {i["name"]: i["description"] for i in json.loads(out)["items"]}["alpha"] == (
        "Abbot alpha"
    )


def test_lint_sees_a_link_changed_with_its_mtime_put_back(wiki, cli):
    code, out, _ = cli("--wiki", wiki, "lint", "--json")  # fills the link cache
    assert "bravo" not in out
    rewrite_keeping_size_and_mtime(wiki / "memory/alpha.md", "[[bravo]]", "[[bravx]]")
    code, out, _ = cli("--wiki", wiki, "lint", "--json")
    assert "bravx" in out  # a link to a note that does not exist
