"""The link cache behind `lint`: a note is read again exactly when its stat changed.

Lint at 10,000 files was 3.6 s because every note was read for its links; the cache in
`.memwiki/links.pkl` keeps each note's aliases and raw links keyed by size and mtime.
The output with a warm cache must be the output without one.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

from test_links import note

from memwiki import links
from memwiki.lint import lint_wiki
from memwiki.wiki import Wiki


def lines(wiki: Wiki) -> list[str]:
    return [str(p) for p in lint_wiki(wiki)]


def age(path: Path, seconds: float = 10) -> None:
    """Move a file's mtime out of the racy window, as if it were written a while ago."""
    then = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(then, then))


def test_lint_with_a_warm_cache_equals_lint_without(tmp_path):
    wiki, _ = Wiki.init(tmp_path / "w")
    for n in range(12):
        target = f"[[n{n + 1}]]" if n % 3 else "[[missing]]"
        age(note(wiki.root, f"memory/n{n}.md", f"# N{n}\nsee {target} and [[n0#Top]]\n"))
    age(note(wiki.root, "skill/alias.md", "# A\n[[nick]]\n", extra="aliases: [nick]\n"))
    cold = lines(wiki)
    cache = wiki.sidecar / links.LINK_CACHE
    assert cache.exists()
    warm = lines(wiki)
    assert warm == cold and any("broken link [[missing]]" in p for p in cold)
    cache.unlink()
    assert lines(wiki) == cold


def test_a_changed_note_is_read_again_and_the_rest_are_not(tmp_path, monkeypatch):
    # age() moves the mtimes only: the ctimes stay in the racy window, where a note is
    # read again (tests/test_clock_restored_mtime.py). Zero stands for a while later.
    monkeypatch.setattr(links, "RACY_NS", 0)
    wiki, _ = Wiki.init(tmp_path / "w")
    age(wiki.root / "README.md")
    for n in range(5):
        age(note(wiki.root, f"memory/n{n}.md", f"# N{n}\nsee [[n{(n + 1) % 5}]]\n"))
    assert lines(wiki) == []
    edited = note(wiki.root, "memory/n2.md", "# N2\nnow [[gone]]\n")
    read: list[str] = []
    real = links.scan
    monkeypatch.setattr(links, "scan", lambda text, *a: read.append(text) or real(text, *a))
    assert lines(wiki) == ["memory/n2.md:6: broken link [[gone]]"]
    assert len(read) == 1 and "[[gone]]" in read[0]  # only the edited note was read
    read.clear()
    edited.unlink()
    assert lines(wiki) == ["memory/n1.md:6: broken link [[n2]]"]
    assert read == []  # a deletion needs no read: the other notes' links are cached


def test_a_damaged_or_foreign_cache_is_ignored(tmp_path):
    wiki, _ = Wiki.init(tmp_path / "w")
    age(note(wiki.root, "memory/a.md", "# A\n[[b]]\n"))
    expected = lines(wiki)
    cache = wiki.sidecar / links.LINK_CACHE
    for junk in (b"\x00garbage", pickle.dumps((99, 0, {})), pickle.dumps("x")):
        cache.write_bytes(junk)
        assert lines(wiki) == expected
    # an entry claiming other links for the same stat, written long after: still trusted
    # only when the stat matches; a touched file is read again
    cache.write_bytes(pickle.dumps((links.LINK_CACHE_VERSION, time.time_ns(), {})))
    assert lines(wiki) == expected


def test_a_note_read_for_its_links_is_split_at_its_frontmatter_once(tmp_path, monkeypatch):
    """The cache split each note it read three times (plugin check, aliases, links): 6,004
    splits for a 2,000-note wiki read cold. Once is enough, with the same links."""
    wiki, _ = Wiki.init(tmp_path / "w")
    for n in range(6):
        extra = "aliases: [nick]\nrelated: '[[n1]]'\n" if n == 0 else ""
        age(note(wiki.root, f"memory/n{n}.md", f"# N{n}\n[[n{n + 1}]] [[nick]]\n", extra=extra))
    expected = {
        rel: [lk.to_dict() for lk in found] for rel, found in links.LinkIndex(wiki).links.items()
    }
    (wiki.sidecar / links.LINK_CACHE).unlink()
    split: list[str] = []
    real = links.markdown.split_frontmatter
    monkeypatch.setattr(
        links.markdown, "split_frontmatter", lambda text: split.append(text) or real(text)
    )
    index = links.LinkIndex(wiki)
    assert len(split) == len(index.notes) == 7  # the six notes and the README
    assert {rel: [lk.to_dict() for lk in found] for rel, found in index.links.items()} == expected
    assert index.resolve("memory/n3.md", "nick") == ("memory/n0.md", True)
