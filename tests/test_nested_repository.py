"""A git repository cloned into the wiki (a code project kept in an Obsidian vault).

Bug it prevents: git lists such a repository as one entry, `Projects/code/`, never its
files; staging it failed, so `memwiki commit` and `memwiki sync` failed for good with
"git failed: invalid path: 'Projects/code/'" (exit 5) and committed none of the hand edits.
Found by the vault audit. It is now held back, with one line saying what to do.
"""

from __future__ import annotations

import json
import subprocess

from memwiki.wiki import Wiki

NOTE = "---\nname: n1\ndescription: a note\n---\nbody\n"
ADVICE = (
    "a git repository inside the wiki: move it out of the wiki, or add Projects/code/ to .gitignore"
)


def _nested(root) -> None:
    code = root / "Projects" / "code"
    code.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=code, check=True, timeout=30)
    (code / "main.py").write_text("print(1)\n")
    subprocess.run(["git", "add", "main.py"], cwd=code, check=True, timeout=30)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=code, check=True, timeout=30)


def test_commit_takes_the_notes_and_holds_back_the_repository(tmp_path, run_memwiki, git):
    wiki, _ = Wiki.init(tmp_path / "w")
    _nested(wiki.root)
    (wiki.root / "memory" / "n1.md").write_text(NOTE, encoding="utf-8")
    got = run_memwiki("--wiki", wiki.root, "commit", "--json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["created"] == ["memory/n1.md"]
    assert data["not_committed"] == [{"path": "Projects/code/", "problem": ADVICE}]
    assert "Projects/code" not in git(wiki.root, "ls-tree", "-r", "--name-only", "HEAD")


def test_sync_pushes_the_notes_and_holds_back_the_repository(tmp_path, run_memwiki, git):
    remote = tmp_path / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", remote], check=True, timeout=30)
    wiki, _ = Wiki.init(tmp_path / "w")
    assert run_memwiki("--wiki", wiki.root, "remote", "add", str(remote)).returncode == 0
    _nested(wiki.root)
    (wiki.root / "memory" / "n1.md").write_text(NOTE, encoding="utf-8")
    got = run_memwiki("--wiki", wiki.root, "sync")
    assert got.returncode == 0, got.stderr
    assert f"not committed  Projects/code/: {ADVICE}" in got.stdout
    assert "invalid RecallFiles" not in got.stderr  # it is no RecallFile
    assert "memory/n1.md" in git(remote, "ls-tree", "-r", "--name-only", "main")
