"""`rm` never deletes what git has no copy of; unreadable and missing files are one-line errors.

Unreadable files: root reads a mode-000 file anyway, so as root the memwiki process runs
without the two capabilities that let it (setpriv --bounding-set), keeping its uid.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_walk_links import unprivileged

from memwiki.wiki import Wiki

DRAFT = "---\nname: draft\ndescription: A draft\n---\nonly here\n"


@pytest.fixture
def wiki_dir(tmp_path) -> Path:
    wiki, _ = Wiki.init(tmp_path / "w")
    return wiki.root


def test_rm_refuses_a_file_git_never_saw(wiki_dir, cli, git) -> None:
    """Bug: `rm` deleted a never-committed file for good and said "Nothing to commit"."""
    draft = wiki_dir / "memory/draft.md"
    draft.write_text(DRAFT)
    head = git(wiki_dir, "rev-parse", "HEAD")
    code, out, err = cli("--wiki", wiki_dir, "rm", "memory/draft")
    assert code == 4 and out == ""
    assert len(err.splitlines()) == 1
    assert "memory/draft.md has changes that are not committed" in err and "--force" in err
    assert draft.read_text() == DRAFT and git(wiki_dir, "rev-parse", "HEAD") == head


def test_rm_refuses_uncommitted_edits_even_when_staged(wiki_dir, cli, git) -> None:
    """Bug: `rm` deleted a file with uncommitted edits: the edits were in no commit."""
    draft = wiki_dir / "memory/draft.md"
    draft.write_text(DRAFT)
    assert cli("--wiki", wiki_dir, "commit")[0] == 0
    draft.write_text(DRAFT + "an edit\n")
    assert cli("--wiki", wiki_dir, "rm", "memory/draft")[0] == 4
    git(wiki_dir, "add", "memory/draft.md")  # staged is not committed: HEAD has no copy
    assert cli("--wiki", wiki_dir, "rm", "memory/draft")[0] == 4
    assert draft.read_text() == DRAFT + "an edit\n"


def test_rm_force_deletes_and_a_committed_file_needs_no_force(wiki_dir, cli, git) -> None:
    """Bug guard: the refusal must not stop deleting committed files, and --force must work."""
    (wiki_dir / "memory/draft.md").write_text(DRAFT)
    code, out, _ = cli("--wiki", wiki_dir, "rm", "memory/draft", "--force")
    assert code == 0 and "Nothing to commit" in out  # never committed: nothing to record
    assert not (wiki_dir / "memory/draft.md").exists()
    (wiki_dir / "memory/kept.md").write_text(DRAFT.replace("draft", "kept"))
    assert cli("--wiki", wiki_dir, "commit")[0] == 0
    code, out, _ = cli("--wiki", wiki_dir, "rm", "memory/kept")
    assert code == 0 and "deleted  memory/kept.md" in out
    assert git(wiki_dir, "status", "--porcelain") == ""


def test_add_body_file_that_does_not_exist(wiki_dir, cli) -> None:
    """Bug: a missing --body-file was reported as "cannot read as UTF-8 text ([Errno 2] ...)"."""
    code, out, err = cli(
        "--wiki", wiki_dir, "add", "memory", "x", "-d", "x", "--body-file", "/nope"
    )
    assert (code, out) == (2, "")
    assert err == "memwiki: error: --body-file /nope: no such file\n"
    (wiki_dir / "bad.txt").write_bytes(b"\xff\xfe")
    code, _, err = cli("--wiki", wiki_dir, "add", "memory", "x", "-d", "x",
                       "--body-file", wiki_dir / "bad.txt")  # fmt: skip
    assert code == 2 and err.endswith("bad.txt: not UTF-8 text\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "memory/locked"],
        ["show", "memory/locked", "--json"],
        ["add", "memory", "locked", "-d", "x", "--body-file", "/dev/null"],
    ],
)
def test_an_unreadable_file_is_one_line_not_an_internal_error(wiki_dir, argv) -> None:
    """Bug: show and add on a file without read permission exited 70 (PermissionError)."""
    locked = wiki_dir / "memory/locked.md"
    locked.write_text(DRAFT.replace("draft", "locked"))
    locked.chmod(0)
    try:
        done = subprocess.run(
            [*unprivileged(), sys.executable, "-m", "memwiki", "--wiki", str(wiki_dir),
             *argv],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        )  # fmt: skip
    finally:
        locked.chmod(0o644)
    assert done.returncode == 5, done.stderr
    assert done.stderr == "memwiki: error: memory/locked.md: cannot read: Permission denied\n"
    assert locked.read_text() == DRAFT.replace("draft", "locked")
