"""Bad and unusual files: a BOM, symlinks out of the wiki, very large files, conflict copies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from memwiki.git.conflicts import conflict_copy_text
from memwiki.index.search import retrieve
from memwiki.lint import lint_wiki
from memwiki.recallfile import MAX_FILE_BYTES, RecallFile, parse, read

BOM = "\ufeff"
FILE = "---\nname: bom\ndescription: written by a Windows editor\ntags: [a]\n---\n# Notes\nbody\n"


def test_a_bom_is_accepted_and_kept_on_rewrite(wiki):
    path = wiki.root / "memory" / "bom.md"
    path.write_bytes((BOM + FILE).encode("utf-8"))
    rf = read(path, "memory")
    assert (rf.name, rf.description, rf.body_line) == ("bom", "written by a Windows editor", 6)
    assert lint_wiki(wiki) == []
    wiki.put(RecallFile("memory", "bom", "Windows editor, edited", body=rf.body, tags=["a"]))
    data = path.read_bytes()
    assert data.startswith(BOM.encode("utf-8") + b"---\nname: bom\n")
    assert b"tags: [a]\n" in data and data.endswith(b"---\n# Notes\nbody\n")
    assert parse(data, "memory", "bom").description.endswith("edited")


def test_symlinks_out_of_the_wiki_are_reported_by_lint_and_never_read(wiki, tmp_path, cli):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    secret = "---\nname: leak\ndescription: outside zebracorn\n---\nzebracorn\n"
    (outside / "leak.md").write_text(secret)
    (outside / "deep" / "leak2.md").write_text(secret.replace("leak", "leak2"))
    os.symlink(outside / "leak.md", wiki.root / "memory" / "leak.md")
    os.symlink(outside / "deep", wiki.root / "memory" / "deep")
    os.symlink(outside, wiki.root / "linked-track")
    inside = wiki.root / "memory" / "real.md"
    inside.write_text("---\nname: real\ndescription: inside\n---\nbody\n")
    os.symlink(inside, wiki.root / "skill" / "real.md")  # inside the wiki: fine

    problems = {p.path: p.message for p in lint_wiki(wiki)}
    for rel in ("memory/leak.md", "memory/deep", "linked-track"):
        assert rel in problems and "outside the wiki" in problems[rel], problems
        assert "not read" in problems[rel]
    assert str(outside) in problems["memory/leak.md"]
    assert "skill/real.md" not in problems

    code, out, _ = cli("--wiki", wiki.root, "lint")
    assert code != 0 and "memory/leak.md:1: symlink to" in out + _
    result = retrieve(wiki, "zebracorn", mode="bm25", notify=lambda m: None)
    assert result.paths() == []


def _big(size: int, marker: str) -> str:
    head = "---\nname: big\ndescription: a very large generated log\n---\n"
    line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do\n"
    lines = ["# Log\n", *[line] * ((size - len(head)) // len(line)), f"{marker} at the end\n"]
    return head + "".join(lines)


def test_files_above_the_old_one_mb_limit_are_indexed_in_windows(wiki):
    text = _big(3 * 1024 * 1024, "quokkamarker")
    (wiki.root / "memory" / "big.md").write_text(text)
    result = retrieve(wiki, "quokkamarker", mode="bm25", notify=lambda m: None)
    assert result.paths() == ["memory/big.md"]
    last = text.count("\n")
    section = result.results[0].sections[0]
    assert section.start_line <= last <= section.end_line
    assert section.end_line - section.start_line < 100  # a window, not the whole file


def test_lint_streams_a_file_over_the_limit(wiki, tmp_path):
    """50 MB: reported with its size, frontmatter still checked, in bounded time and memory."""
    path = wiki.root / "memory" / "big.md"
    path.write_text(_big(50 * 1024 * 1024, "end").replace("name: big", "name: Big"))
    assert path.stat().st_size > MAX_FILE_BYTES
    script = (
        "import json, resource, sys, time\n"
        "from memwiki.wiki import Wiki\n"
        "t = time.perf_counter()\n"
        "problems = Wiki(sys.argv[1]).lint()\n"
        "print(json.dumps({'s': time.perf_counter() - t,\n"
        "  'rss_kb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,\n"
        "  'problems': [str(p) for p in problems]}))\n"
    )
    base = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, memwiki.wiki, memwiki.lint; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", script, str(wiki.root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    data = json.loads(run.stdout)
    assert time.perf_counter() - start < 60
    assert data["s"] < 10, data["s"]
    # Streaming: well under the file's size above a bare import (it was 726 MB).
    assert data["rss_kb"] - int(base.stdout) < 40 * 1024, data
    messages = "\n".join(data["problems"])
    assert "memory/big.md:1: not indexed: 50.0 MiB is over the 20 MiB limit" in messages
    assert "memory/big.md:2: name 'Big' is not a slug" in messages


def test_conflict_copies_index_retrieve_and_are_marked(wiki, cli):
    original = "---\nname: shared\ndescription: shared notes\n---\nthe wombat deploy key rotates\n"
    (wiki.root / "memory" / "shared.md").write_text(original)
    theirs = original.replace("rotates", "rotates weekly, wombat says")
    for stem in ("shared.conflict-run-20261102-101400-abc1234", "shared.conflict-remote-def5678"):
        copy = conflict_copy_text(theirs.encode(), stem, "memory/shared", "run")
        (wiki.root / "memory" / f"{stem}.md").write_bytes(copy)
    messages: list[str] = []
    result = retrieve(wiki, "wombat weekly", mode="bm25", notify=messages.append)
    assert messages == []  # no "not a slug"
    by_path = {r.path: r.to_dict() for r in result.results}
    copy = "memory/shared.conflict-run-20261102-101400-abc1234.md"
    assert by_path[copy]["conflict"] is True
    assert by_path[copy]["conflict_of"] == "memory/shared.md"
    assert (
        by_path["memory/shared.md"]["conflict"],
        by_path["memory/shared.md"]["conflict_of"],
    ) == (
        False,
        None,
    )
    code, out, err = cli("--wiki", wiki.root, "retrieve", "wombat weekly", "--mode", "bm25")
    assert code == 0, err
    assert f"## {copy} (unresolved conflict copy of memory/shared.md)" in out
