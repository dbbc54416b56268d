"""A developer's own ignore rules (core.excludesFile, ~/.config/git/ignore) in a wiki."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gitconfig_home import libgit2_reads_home, write_gitconfig

NOTE = "---\nname: {name}\ndescription: a note\n---\nbody of {name}\n"


def _personal_excludes(lines: str) -> Path:
    ignore = Path(os.environ["HOME"]) / "global-ignore"
    ignore.write_text(lines, encoding="utf-8")
    write_gitconfig(f"[core]\n\texcludesFile = {ignore}\n")
    return ignore


def _wiki_with_obsidian(run_memwiki, git, root: Path) -> None:
    assert run_memwiki("init", root).returncode == 0
    done = run_memwiki("-w", root, "add", "memory", "deploy-steps", "-d", "how", input="steps")
    assert done.returncode == 0, done.stderr
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}\n")  # shared settings: synced
    (root / ".obsidian" / "workspace.json").write_text("{}\n")  # per device: the wiki ignores
    git(root, "add", "-f", ".obsidian")
    git(root, "commit", "-q", "-m", "obsidian")


def test_a_personal_excludes_file_never_makes_untrack_ignored_drop_notes(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: a global excludes file with `*.md` and `.obsidian/` (written for code
    repositories) made doctor FAIL naming every note, and untrack-ignored untracked them
    all: the next sync deleted them on every other device."""
    _personal_excludes("*.md\n.obsidian/\n")
    root = tmp_path / "wiki"
    _wiki_with_obsidian(run_memwiki, git, root)
    assert "memory/deploy-steps.md" in git(
        root,
        "ls-files",
        "--cached",
        "--ignored",
        "-X",
        str(Path(os.environ["HOME"]) / "global-ignore"),
    )
    doctor = run_memwiki("-w", root, "doctor", "--json")
    tracked = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "tracked"]
    assert tracked and "deploy-steps" not in tracked[0]["detail"]
    assert "README.md" not in tracked[0]["detail"] and "app.json" not in tracked[0]["detail"]
    assert ".obsidian/workspace.json" in tracked[0]["detail"]
    done = run_memwiki("-w", root, "untrack-ignored", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["untracked"] == [".obsidian/workspace.json"]
    files = git(root, "ls-files").split()
    assert {"memory/deploy-steps.md", "README.md", ".obsidian/app.json"} <= set(files)


def test_the_wikis_own_gitignore_still_decides_in_process(wiki, git) -> None:
    """The wiki's .gitignore is applied with the personal rules left out, and libgit2's
    search paths are as they were afterwards."""
    import pygit2

    from memwiki.git.ignored import ignored_by_the_wiki, tracked_but_ignored

    _personal_excludes("*.md\n")
    (wiki.root / "memory" / "kept.md").write_text(NOTE.format(name="kept"))
    (wiki.root / "scratch.md").write_text("x\n")
    (wiki.root / ".gitignore").write_text((wiki.root / ".gitignore").read_text() + "scratch.md\n")
    git(wiki.root, "add", "-f", "memory/kept.md", "scratch.md", ".gitignore")
    git(wiki.root, "commit", "-q", "-m", "x")
    with libgit2_reads_home():
        before = pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL]
        repo = pygit2.Repository(str(wiki.root))
        assert repo.path_is_ignored("memory/kept.md")  # the personal rule applies to git
        assert ignored_by_the_wiki(repo, ["memory/kept.md", "scratch.md"]) == ["scratch.md"]
        assert tracked_but_ignored(repo) == ["scratch.md"]
        assert pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL] == before


def test_init_commits_its_whole_layout_whatever_the_personal_excludes(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: `*.md` in a global excludes file kept README.md out of init's commit; each
    clone then committed it again ("memwiki: complete the wiki layout")."""
    _personal_excludes("*.md\n*.yaml\n")
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    assert {"README.md", ".pre-commit-config.yaml", ".gitignore"} <= set(
        git(root, "ls-files").split()
    )
    assert git(root, "status", "--porcelain") == ""
