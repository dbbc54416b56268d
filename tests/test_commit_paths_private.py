"""`memwiki add`'s commit (git/repo.commit_paths) and paths that are never committed.

It looked at every entry of the index and of HEAD's tree for the sidecar and temporary
files, twice: 180 of the 500 ms of `memwiki add` at 10,000 files. Now HEAD's sidecar is
found by one lookup, and what a person staged stays theirs (as every other staged file).
"""

from __future__ import annotations

from memwiki.wiki import Wiki


def _files(git, root, rev: str = "HEAD") -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", rev).split())


def test_add_untracks_a_sidecar_an_old_tool_committed(tmp_path, run_memwiki, git) -> None:
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / ".memwiki").mkdir(exist_ok=True)
    (wiki.root / ".memwiki" / "old-tool.json").write_text("{}\n")
    git(wiki.root, "add", "-f", ".memwiki/old-tool.json")
    git(wiki.root, "commit", "-qm", "an old tool committed its sidecar")
    got = run_memwiki("--wiki", wiki.root, "add", "memory", "cats", "-d", "Cats", input="Purr.\n")
    assert got.returncode == 0, got.stderr
    assert _files(git, wiki.root) >= {"memory/cats.md"}
    assert not any(p.startswith(".memwiki") for p in _files(git, wiki.root))
    assert "old-tool.json" not in git(wiki.root, "ls-files")  # not staged again either
    assert (wiki.root / ".memwiki" / "old-tool.json").is_file()  # the file itself stays


def test_add_leaves_a_staged_sidecar_file_staged_and_out_of_its_commit(
    tmp_path, run_memwiki, git
) -> None:
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / ".memwiki").mkdir(exist_ok=True)
    (wiki.root / ".memwiki" / "mine.json").write_text("{}\n")
    git(wiki.root, "add", "-f", ".memwiki/mine.json")  # a person's `git add -f`
    got = run_memwiki("--wiki", wiki.root, "add", "memory", "cats", "-d", "Cats", input="Purr.\n")
    assert got.returncode == 0, got.stderr
    assert "memory/cats.md" in _files(git, wiki.root)
    assert not any(p.startswith(".memwiki") for p in _files(git, wiki.root))
    assert "A  .memwiki/mine.json" in git(wiki.root, "status", "--porcelain", "--ignored=no")
