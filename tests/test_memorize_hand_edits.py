"""memorize commit and a person's work in the wiki: staged files stay staged, edits lint
rejects stay uncommitted, and a run that changes either is refused, naming the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_memorize_support import clean_status, git, make_wiki, merges, payload, recall, write

from memwiki import memorize
from memwiki.errors import StateError

BROKEN = "---\nname: broken\ndescription: [oops\n---\nx\n"


def staged(root: Path) -> str:
    return git(root, "diff", "--cached", "--name-status")


def test_a_persons_staged_files_stay_staged_and_out_of_memorizes_commits(tmp_path):
    """Bug: the sweep of hand edits committed the whole index, so a broken note a person had
    staged went into history as `memwiki: created memory/broken` without a word."""
    wiki = make_wiki(tmp_path, {"memory/c.md": recall("c", "C.\n"), "memory/d.md": recall("d", "D.\n")})  # fmt: skip
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/r.md", recall("r", "From the run.\n"))
    write(wiki.root, "memory/broken.md", BROKEN)
    write(wiki.root, "memory/good.md", recall("good", "Staged, valid.\n"))
    write(wiki.root, "memory/d.md", recall("d", "D staged.\n"))
    git(wiki.root, "add", "memory/broken.md", "memory/good.md", "memory/d.md")
    write(wiki.root, "memory/d.md", recall("d", "D staged, then edited again.\n"))
    write(wiki.root, "memory/c.md", recall("c", "C edited in Obsidian.\n"))  # not staged
    before = staged(wiki.root)
    result = memorize.commit(wiki, "one")
    assert result.created == ["memory/r.md"] and result.warnings == []
    # the Obsidian edit was committed before the merge; nothing the person staged was
    hand = git(wiki.root, "show", "--name-only", "--format=", "HEAD^1").split()
    assert hand == ["memory/c.md"]
    history = git(wiki.root, "log", "--name-only", "--format=", "HEAD").split()
    assert "memory/broken.md" not in history and "memory/good.md" not in history
    assert staged(wiki.root) == before
    assert "D staged, then edited again" in (wiki.root / "memory/d.md").read_text()
    assert clean_status(wiki.root).splitlines() == [
        "A  memory/broken.md", "MM memory/d.md", "A  memory/good.md",
    ]  # fmt: skip


def test_an_edit_lint_rejects_stays_uncommitted_and_is_named(tmp_path):
    """An Obsidian rename keeps the old `name:` (lint rejects the new file): neither half of
    the rename is committed, so history keeps the note."""
    wiki = make_wiki(tmp_path, {"memory/old.md": recall("old", "A long enough note body.\n")})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/r.md", recall("r", "From the run.\n"))
    (wiki.root / "memory/old.md").rename(wiki.root / "memory/new.md")
    write(wiki.root, "memory/half.md", BROKEN.replace("broken", "half"))
    write(wiki.root, "memory/fine.md", recall("fine", "Fine.\n"))
    result = memorize.commit(wiki, "one")
    assert [w.split(":")[0] for w in result.warnings] == [
        "left memory/half.md uncommitted", "left memory/new.md uncommitted",
        "left memory/old.md uncommitted",
    ]  # fmt: skip
    assert "deleted, as if renamed to memory/new.md, which lint rejects;" in result.warnings[2]
    assert "new.md uncommitted: lint rejects it (line 2: name 'old' does not" in result.warnings[1]
    assert git(wiki.root, "show", "--name-only", "--format=", "HEAD^1").split() == [
        "memory/fine.md"
    ]
    assert git(wiki.root, "cat-file", "-t", "HEAD:memory/old.md").strip() == "blob"
    assert sorted(clean_status(wiki.root).splitlines()) == [
        " D memory/old.md", "?? memory/half.md", "?? memory/new.md",
    ]  # fmt: skip


def test_a_run_changing_a_staged_file_is_refused_until_the_person_commits_it(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/a.md": recall("a", "A.\n")})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/a.md", recall("a", "A, from the run.\n"))
    write(wiki.root, "memory/a.md", recall("a", "A, staged by hand.\n"))
    git(wiki.root, "add", "memory/a.md")
    write(wiki.root, "memory/b.md", recall("b", "B in Obsidian.\n"))
    head, status = git(wiki.root, "rev-parse", "HEAD"), clean_status(wiki.root)
    with pytest.raises(StateError) as exc:
        memorize.commit(wiki, "one")
    assert exc.value.exit_code == 4 and "\n" not in exc.value.message
    assert "memory/a.md (staged with `git add`)" in exc.value.message
    # nothing was written: the wiki, its index and the run are as they were
    assert git(wiki.root, "rev-parse", "HEAD") == head and clean_status(wiki.root) == status
    assert memorize.status(wiki)[0].state == "edited"
    git(wiki.root, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "mine")
    result = memorize.commit(wiki, "one")
    assert len(merges(wiki.root)) == 1 and clean_status(wiki.root) == ""
    assert "staged by hand" in (wiki.root / "memory/a.md").read_text()
    (conflict,) = result.conflicts  # the person's commit stays at its path; the run's is a copy
    assert "from the run" in (wiki.root / conflict["copy"]).read_text()


def test_the_cli_refuses_with_one_line_and_exit_4(tmp_path):
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/a.md", recall("a", "A, from the run.\n"))
    write(wiki.root, "memory/a.md", BROKEN.replace("broken", "a"))
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "memwiki", "--wiki", str(wiki.root), "memorize", "commit", "one"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    (line,) = done.stderr.splitlines()
    assert "memory/a.md (lint rejects it" in line and "memorize commit one` again" in line
    assert (wiki.root / "memory/a.md").read_text() == BROKEN.replace("broken", "a")
