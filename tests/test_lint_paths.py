"""`memwiki lint FILE...`: what a path argument means, and that a bad one is never "ok"."""

from __future__ import annotations

import json

import pytest

from memwiki.wiki import Wiki

BROKEN = "---\nname: {name}\n---\nno description\n"


@pytest.fixture
def root(tmp_path):
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory/bad-note.md").write_text(BROKEN.format(name="bad-note"))
    (wiki.root / "skill/bad-skill.md").write_text(BROKEN.format(name="bad-skill"))
    return wiki.root


def test_a_missing_path_is_not_found(root, run_memwiki) -> None:
    """Bug: `lint memory/typo.md` linted nothing and said ok (exit 0)."""
    done = run_memwiki("--wiki", root, "lint", "memory/typo.md", "--json")
    assert done.returncode == 3
    assert json.loads(done.stdout)["error"]["message"] == "memory/typo.md: no such file"
    assert done.stderr == "memwiki: error: memory/typo.md: no such file\n"


def test_a_path_outside_the_wiki_is_invalid(root, run_memwiki, tmp_path) -> None:
    """Bug: `lint /etc/passwd` linted nothing and said ok (exit 0)."""
    outside = tmp_path / "elsewhere.md"
    outside.write_text(BROKEN.format(name="elsewhere"))
    for arg in (str(outside), "../elsewhere.md"):
        done = run_memwiki("--wiki", root, "lint", arg, cwd=root)
        assert done.returncode == 2, arg
        assert done.stderr == f"memwiki: error: {arg}: outside the wiki {root}\n"


def test_a_folder_lints_every_file_in_it(root, run_memwiki) -> None:
    """Bug: `lint memory` linted nothing and said ok (exit 0)."""
    done = run_memwiki("--wiki", root, "lint", "memory")
    assert done.returncode == 1
    assert done.stdout == "memory/bad-note.md:2: missing 'description' in frontmatter\n"
    done = run_memwiki("lint", ".", cwd=root, env={"MEMWIKI_DIR": str(root)})
    assert done.returncode == 1 and done.stdout.count("missing 'description'") == 2
    (root / "memory/bad-note.md").unlink()
    done = run_memwiki("--wiki", root, "lint", "memory", "README.md")  # what pre-commit passes
    assert (done.returncode, done.stdout) == (0, "")


def test_relative_paths_follow_the_shell_inside_the_wiki(root, run_memwiki, tmp_path) -> None:
    """Bug guard: inside the wiki a path is the shell's; from elsewhere it is the wiki's."""
    done = run_memwiki("--wiki", root, "lint", "bad-note.md", cwd=root / "memory")
    assert done.returncode == 1 and done.stdout.startswith("memory/bad-note.md:2:")
    done = run_memwiki("--wiki", root, "lint", "memory/bad-note.md", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout.startswith("memory/bad-note.md:2:")
