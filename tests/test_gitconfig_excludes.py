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

    from memwiki.git.excludes import ignored_by_the_wiki
    from memwiki.git.ignored import tracked_but_ignored

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


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "memorize"


def test_a_memorize_run_keeps_the_notes_a_personal_excludes_file_ignores(
    wiki, run_memwiki, git, monkeypatch
) -> None:
    """Bug: with `*.md` in a global excludes file, memorize commit staged nothing of what
    the executor wrote, reported an empty run and deleted its workspace: memory lost."""
    import subprocess
    import sys

    monkeypatch.setenv("MEMWIKI_EMBED", "none")
    _personal_excludes("*.md\n")
    session = EXAMPLES / "session-flaky-test.json"
    prep = run_memwiki("-w", wiki.root, "memorize", "prepare", session, "--json")
    assert prep.returncode == 0, prep.stderr
    data = json.loads(prep.stdout)
    executor = [sys.executable, str(EXAMPLES / "executor.py"), data["executor_prompt"]]
    subprocess.run(executor, check=True, capture_output=True, timeout=60)
    done = run_memwiki("-w", wiki.root, "memorize", "commit", data["run_id"], "--json")
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)["created"]
    assert created and all(p in git(wiki.root, "ls-files").split() for p in created)


def test_hand_written_notes_a_personal_excludes_file_ignores_are_committed_and_synced(
    tmp_path, run_memwiki, git
) -> None:
    """Bug: `notes.md` and `build/` in a global excludes file kept memory/notes.md and
    memory/build/*.md out of `memwiki commit` and sync: on one device only, silently.
    What the wiki's own .gitignore ignores, and junk only the personal file ignores, stay
    out."""
    _personal_excludes("notes.md\nbuild/\n*.log\n.idea/\nnode_modules/\n")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    root = tmp_path / "wiki"
    assert run_memwiki("init", root, "--remote", remote).returncode == 0
    (root / ".gitignore").write_text((root / ".gitignore").read_text() + "memory/private-*\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "private notes stay here")
    (root / "memory" / "build").mkdir()
    for rel in ("memory/notes.md", "memory/build/ci.md", "memory/private-diary.md"):
        (root / rel).write_text(NOTE.format(name=Path(rel).stem))
    (root / "memory" / "debug.log").write_text("junk\n")
    clone = root / "memory" / "build" / "tool"  # a repository in an ignored folder
    git(tmp_path, "init", "-q", str(clone))
    (clone / "README.md").write_text("# a tool\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)  # a folder of markdown, not notes
    (root / "node_modules" / "pkg" / "README.md").write_text("# pkg\n")
    (root / ".idea").mkdir()
    (root / ".idea" / "workspace.xml").write_text("<x/>\n")
    done = run_memwiki("-w", root, "sync")
    assert done.returncode == 0, done.stderr
    files = set(git(root, "ls-files").split())
    assert {"memory/notes.md", "memory/build/ci.md"} <= files
    assert not files & {"memory/private-diary.md", "memory/debug.log", ".idea/workspace.xml"}
    assert not any(f.startswith(("memory/build/tool", "node_modules/")) for f in files)
    other = tmp_path / "other"
    assert run_memwiki("clone", remote, other).returncode == 0
    assert (other / "memory" / "build" / "ci.md").is_file()
    assert (other / "memory" / "notes.md").read_text() == NOTE.format(name="notes")
    assert run_memwiki("-w", root, "commit").stdout.strip() == "Nothing to commit"


def test_no_personal_excludes_file_costs_no_second_status_walk(wiki) -> None:
    """The common case (no excludes file anywhere) never looks for ignored notes; git's
    default excludes file counts as one."""
    import pygit2
    import pytest

    from memwiki.git import excludes
    from memwiki.git.repo import read_status

    with libgit2_reads_home():
        repo = pygit2.Repository(str(wiki.root))
        assert not excludes.has_personal_excludes(repo)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(excludes, "notes_only_you_ignore", None)  # would fail if called
            assert read_status(repo) == {}
        ignore = Path(os.environ["HOME"]) / ".config" / "git" / "ignore"
        ignore.parent.mkdir(parents=True)
        ignore.write_text("*.md\n")  # git's default excludes file, no setting needed
        (wiki.root / "memory" / "x.md").write_text(NOTE.format(name="x"))
        assert excludes.has_personal_excludes(repo)
        status = read_status(pygit2.Repository(str(wiki.root)))
        assert status["memory/x.md"] == pygit2.GIT_STATUS_WT_NEW


def test_doctor_counts_the_notes_a_personal_excludes_file_ignores(tmp_path, run_memwiki) -> None:
    """`memwiki commit` takes them, so doctor's "uncommitted" count says so (it said 0)."""
    _personal_excludes("notes.md\n")
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    (root / "memory" / "notes.md").write_text(NOTE.format(name="notes"))
    doctor = run_memwiki("-w", root, "doctor", "--json")
    (check,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "git"]
    assert "1 uncommitted change" in check["detail"], check
