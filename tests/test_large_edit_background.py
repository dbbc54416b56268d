"""A change too large to index before answering is left to the background reindex.

Bug it prevents: after one line was appended to a 20 MB log pasted into a note, the next
`memwiki retrieve` took 31.5 s and printed nothing (chunking and analysing the whole file
in front of the answer); the prompt hook gave up with no memory at all.
"""

from __future__ import annotations

import json
import time

from memwiki.index import progressive

ENV = {"MEMWIKI_EMBED": "hash"}


def _note(name: str, lines: int) -> str:
    body = "\n".join(
        f"step {i} compiled module {i * 7919 % 100003} zebracorn ok" for i in range(lines)
    )
    return f"---\nname: {name}\ndescription: a pasted build log\n---\n# Log\n{body}\n"


def _retrieve(run_memwiki, root, query: str) -> dict:
    got = run_memwiki("--wiki", root, "retrieve", query, "--json", env=ENV)
    assert got.returncode == 0, got.stderr
    return {**json.loads(got.stdout), "stderr": got.stderr}


def test_a_large_edit_answers_at_once_from_the_index_and_is_found_later(wiki, run_memwiki):
    (wiki.root / "memory" / "cats.md").write_text(_note("cats", 3), encoding="utf-8")
    assert [r["path"] for r in _retrieve(run_memwiki, wiki.root, "zebracorn")["results"]] == [
        "memory/cats.md"
    ]
    big = _note("biglog", 30_000)
    assert len(big) > progressive.INLINE_BYTES
    (wiki.root / "memory" / "biglog.md").write_text(big, encoding="utf-8")
    first = _retrieve(run_memwiki, wiki.root, "zebracorn")
    assert first["index"]["stale"] is True and first["index"]["background_reindex"] is True
    assert "1 changed file is being indexed in the background" in first["stderr"]
    assert [r["path"] for r in first["results"]] == ["memory/cats.md"]  # the index as it was
    until = time.monotonic() + 90
    while time.monotonic() < until:
        later = _retrieve(run_memwiki, wiki.root, "zebracorn")
        if not later["index"]["stale"]:
            break
        time.sleep(0.5)
    assert not later["index"]["stale"], "the background reindex did not catch up in 90 s"
    assert "memory/biglog.md" in [r["path"] for r in later["results"]]


def test_an_ordinary_edit_is_still_indexed_before_the_answer(wiki, run_memwiki):
    (wiki.root / "memory" / "cats.md").write_text(_note("cats", 3), encoding="utf-8")
    _retrieve(run_memwiki, wiki.root, "zebracorn")
    (wiki.root / "memory" / "dogs.md").write_text(_note("dogs", 200), encoding="utf-8")
    got = _retrieve(run_memwiki, wiki.root, "zebracorn")
    assert got["index"]["stale"] is False and got["index"]["background_reindex"] is False
    assert "memory/dogs.md" in [r["path"] for r in got["results"]]
