"""Git conflict markers and duplicate frontmatter keys make a file invalid: lint reports them
at their line, and retrieve, `add`, sync and the pre-commit hook (`memwiki lint FILE`) refuse it."""

from __future__ import annotations

import subprocess

import pytest

from memwiki.config import load
from memwiki.git import sync as syncmod
from memwiki.lint import lint_wiki
from memwiki.recallfile import InvalidRecallFile, parse
from memwiki.wiki import Wiki

HEAD = "---\nname: notes\ndescription: Notes\n---\n"
CONFLICT = "intro\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> origin/main\n"


def problems_of(text: str) -> list[str]:
    try:
        parse(text, "memory", "notes")
    except InvalidRecallFile as exc:
        return [f"{p.line}: {p.message}" for p in exc.problems]
    return []


def test_conflict_markers_in_the_body_are_a_problem_at_their_line() -> None:
    """Bug: a body with git conflict markers passed lint and retrieve served it."""
    assert problems_of(HEAD + CONFLICT) == [
        "6: unresolved git conflict (lines 6-10): keep what you want and delete the marker lines"
    ]
    assert problems_of(HEAD + "a\n>>>>>>> theirs\n") == [
        "6: git conflict marker left in the file: resolve and delete it"
    ]


@pytest.mark.parametrize(
    "body",
    [
        "```\n" + CONFLICT + "```\n",  # a fenced example of a conflict
        "    <<<<<<< HEAD\n",  # indented: code
        "Title\n=======\n",  # a setext heading, not a marker
        "<<<<<<<< eight\n>>>>>>>no-space\n",  # not git's seven and a space
    ],
)
def test_markers_in_code_and_lookalikes_are_fine(body: str) -> None:
    """Bug guard: a document about git conflicts, or a setext heading, is not a conflict."""
    assert problems_of(HEAD + body) == []


def test_markers_around_or_in_the_frontmatter_are_named() -> None:
    """Bug: a conflict around the frontmatter was reported only as "missing frontmatter"."""
    around = "<<<<<<< HEAD\n" + HEAD + "ours\n=======\n" + HEAD + "theirs\n>>>>>>> b\n"
    assert problems_of(around) == [
        "1: unresolved git conflict (lines 1-13): keep what you want and delete the marker lines"
    ]
    inside = (
        "---\nname: notes\n<<<<<<< HEAD\ndescription: A\n=======\ndescription: B\n>>>>>>> b\n---\n"
    )
    assert problems_of(inside) == [
        "3: unresolved git conflict (lines 3-7): keep what you want and delete the marker lines"
    ]
    crlf = HEAD.replace("\n", "\r\n") + CONFLICT.replace("\n", "\r\n")
    assert problems_of(crlf)[0].startswith("6: unresolved git conflict (lines 6-10)")


def test_duplicate_keys_are_a_problem_at_the_second_line() -> None:
    """Bug: `description: d` then `description: e` was accepted silently (the last won)."""
    text = "---\nname: notes\ndescription: d\ntags: [a]\ndescription: e\n---\nbody\n"
    assert problems_of(text) == [
        "5: duplicate key 'description' in frontmatter (first on line 3): "
        "YAML keeps only the last one; delete one of them"
    ]
    assert problems_of("---\nname: notes\nname: notes\ndescription: d\n---\n")[0].startswith(
        "3: duplicate key 'name'"
    )
    # Not duplicates: nested keys, a repeated word inside a block scalar, a quoted other key.
    fine = "---\nname: notes\ndescription: d\nowner:\n  name: a\nnote: |\n  x\n'name2': y\n---\n"
    assert problems_of(fine) == []


def test_lint_add_retrieve_and_sync_refuse_them(tmp_path, cli) -> None:
    """Bug: `add -d` rewrote both duplicate lines; lint, retrieve and sync took conflicts."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    wiki, _ = Wiki.init(tmp_path / "w")
    syncmod.add_remote(wiki, str(remote))
    dup = "---\nname: dup\ndescription: d\ndescription: e\n---\nzebra\n"
    (wiki.root / "memory/dup.md").write_text(dup)
    (wiki.root / "memory/notes.md").write_text(HEAD + "zebra\n" + CONFLICT)
    assert [str(p) for p in lint_wiki(wiki)] == [
        "memory/dup.md:4: duplicate key 'description' in frontmatter (first on line 3): "
        "YAML keeps only the last one; delete one of them",
        "memory/notes.md:7: unresolved git conflict (lines 7-11): keep what you want and "
        "delete the marker lines",
    ]
    code, out, err = cli("--wiki", wiki.root, "lint", "memory/notes.md")  # the pre-commit hook
    assert code == 1 and out.startswith("memory/notes.md:7: unresolved git conflict")
    code, _, err = cli("--wiki", wiki.root, "add", "memory", "dup", "-d", "x")
    assert code == 2 and "memory/dup.md:4: duplicate key 'description'" in err
    assert (wiki.root / "memory/dup.md").read_text() == dup
    assert wiki.retrieve("zebra", mode="bm25", notify=lambda _: None).results == []
    result = syncmod.sync(wiki, load())
    assert sorted(p["path"] for p in result.not_committed) == ["memory/dup.md", "memory/notes.md"]
    pushed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "main"], cwd=remote, capture_output=True, text=True
    ).stdout
    assert "memory/notes.md" not in pushed and "memory/dup.md" not in pushed


def test_lint_finds_markers_in_a_file_an_older_index_took_as_valid(tmp_path) -> None:
    """Bug: lint trusts the index's parse of unchanged bytes, and an index built before
    markers made a file invalid took a file with them as valid: lint said nothing until the
    file changed again. The link cache (rebuilt once: its version changed) sends such a
    file back to the parser."""
    import os

    from memwiki.index.indexer import Index

    wiki, _ = Wiki.init(tmp_path / "w")
    path = wiki.root / "memory/notes.md"
    clean = HEAD + "intro\n" + "x" * (len(CONFLICT) - len("intro\n")) + "\n"
    path.write_text(clean)
    an_hour_ago = path.stat().st_mtime_ns - 3600 * 10**9  # outside the racy window
    os.utime(path, ns=(an_hour_ago, an_hour_ago))
    Index(wiki, load({"wiki": str(wiki.root)}), notify=lambda m: None).snapshot(need_vectors=False)
    assert lint_wiki(wiki) == []
    before = path.stat()
    # The same size and mtime, as in an index that parsed these bytes with older rules.
    path.write_text(HEAD + CONFLICT + "\n")
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    (wiki.sidecar / "links.pkl").unlink()
    assert [p.line for p in lint_wiki(wiki)] == [6]
