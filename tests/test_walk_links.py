"""Symlink loops, folder symlinks and unreadable folders: `list`, `lint` and `retrieve` walk
the same files, and say what they cannot read instead of leaving it out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki.index.search import retrieve
from memwiki.index.walk import walk
from memwiki.lint import lint_wiki
from memwiki.recallfile import RecallFile


def _notes(wiki, n: int = 3) -> list[str]:
    for i in range(n):
        wiki.put(RecallFile("memory", f"note-{i}", f"note {i} about zebracorn", body="zebracorn\n"))
    wiki.put(RecallFile("skill", "howto", "links to [[note-0]]", body="see [[note-0]]\n"))
    return [f"memory/note-{i}.md" for i in range(n)]


def _listed(wiki) -> tuple[list[str], list[str]]:
    page = wiki.list_recall_files(limit=1000)
    return [e.path for e in page.items], [str(p) for p in page.skipped]


def test_a_symlink_loop_hides_no_file_and_is_reported(wiki):
    """A symlink loop in memory/ once hid every memory/ file from list and lint, silently
    (ELOOP from DirEntry.is_dir emptied the whole folder), and lint then reported false
    broken links into memory/."""
    notes = _notes(wiki)
    memory = wiki.root / "memory"
    os.symlink("loop-b.md", memory / "loop-a.md")
    os.symlink("loop-a.md", memory / "loop-b.md")
    os.symlink("x", memory / "x")  # a loop not named like a note: ignored, as any such file
    for name in ("loop-a.md", "loop-b.md"):  # older than the racy window of a fresh index
        os.utime(memory / name, (1e9, 1e9), follow_symlinks=False)

    listed, skipped = _listed(wiki)
    assert [p for p in listed if p.startswith("memory/")] == notes
    assert skipped == [
        "memory/loop-a.md:1: cannot read: Too many levels of symbolic links",
        "memory/loop-b.md:1: cannot read: Too many levels of symbolic links",
    ]
    problems = [str(p) for p in lint_wiki(wiki)]
    assert problems == skipped  # no broken link into memory/

    told: list[str] = []
    result = retrieve(wiki, "zebracorn", mode="bm25", notify=told.append)
    assert sorted(p for p in result.paths() if p.startswith("memory/")) == notes
    assert "memory/loop-a.md: not indexed: cannot read: Too many levels of symbolic links" in told
    told.clear()
    retrieve(wiki, "zebracorn", mode="bm25", notify=told.append)
    assert not any("loop" in m for m in told), told  # said once, not on every scan


def test_folder_symlinks_inside_the_wiki_are_not_indexed_again(wiki):
    """A folder symlink back into the wiki (`memory/again -> .`) made the index walk
    follow it until ELOOP: the same note came back 5 times at different depths, and a link
    to another track duplicated its hits; `list` never followed them."""
    _notes(wiki)
    os.symlink(".", wiki.root / "memory" / "again")
    os.symlink("../skill", wiki.root / "memory" / "sk")
    os.symlink(wiki.root / "memory" / "note-1.md", wiki.root / "skill" / "alias.md")

    listed = [str(p.relative_to(wiki.root)) for _, p in wiki.iter_paths()]
    assert sorted(walk(wiki.root)) == sorted(listed)
    assert "skill/alias.md" in listed  # a file symlink inside the wiki is still followed
    result = retrieve(wiki, "zebracorn", k=20, mode="bm25", notify=lambda m: None)
    paths = result.paths()
    assert len(paths) == len(set(paths)) and not any("again" in p or "/sk/" in p for p in paths)


def unprivileged() -> list[str]:
    """A command prefix under which file permissions apply (root bypasses them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop root's permission bypass")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_an_unreadable_folder_is_reported_by_list_lint_and_retrieve(wiki, tmp_path):
    """A folder that cannot be listed (chmod 000) was left out of list, lint and retrieve
    with no word at all, where an unreadable file gets a 'cannot read' line."""
    _notes(wiki)
    sub = wiki.root / "memory" / "sub"
    sub.mkdir()
    (wiki.root / "memory" / "note-2.md").rename(sub / "note-2.md")
    sub.chmod(0)
    try:
        command = [*unprivileged(), sys.executable, "-m", "memwiki", "-w", str(wiki.root)]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}

        def run(*argv: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [*command, *argv], capture_output=True, text=True, env=env, timeout=60
            )

        said = "memory/sub:1: cannot read: Permission denied"
        listed = run("list")
        assert listed.returncode == 0 and listed.stderr == f"memwiki: skipped {said}\n"
        assert "note-0" in listed.stdout and "note-2" not in listed.stdout
        linted = run("lint")
        assert linted.returncode == 1 and said in linted.stdout.splitlines()
        found = run("retrieve", "zebracorn", "--mode", "bm25", "--files")
        assert found.returncode == 0, found.stderr
        assert "memory/sub: not indexed: cannot read: Permission denied" in found.stderr
        assert "memory/note-0.md" in found.stdout
    finally:
        sub.chmod(0o755)
    told: list[str] = []
    result = retrieve(wiki, "zebracorn", k=20, mode="bm25", notify=told.append)
    assert "memory/sub/note-2.md" in result.paths()  # readable again: indexed again
    assert not any("sub:" in m for m in told), told


def test_a_symlinked_track_is_neither_listed_nor_indexed(wiki):
    """Bug: a top-level folder linked to a track (`ln -s memory mem2`) was listed by `list`
    and `lint` but skipped by the index walk, so the two disagreed about the wiki's files."""
    notes = _notes(wiki)
    os.symlink("memory", wiki.root / "mem2")
    listed, _ = _listed(wiki)
    assert not [p for p in listed if p.startswith("mem2/")]
    assert sorted(p for p in listed if p.startswith("memory/")) == notes
    assert not [p for p in walk(wiki.root) if p.startswith("mem2/")]
    hits = retrieve(wiki, "zebracorn", k=10, mode="bm25").paths()
    assert not [p for p in hits if p.startswith("mem2/")]


def test_obsidian_template_and_daily_note_folders_are_not_the_wiki(wiki):
    """Bug: Obsidian's Templates plugin keeps its templates in a vault folder, which memwiki
    took for a track: lint (and so the pre-commit hook) refused the recommended template
    (`name: {{title}}` is not YAML memwiki can read) and every daily note without
    frontmatter. The folders the plugins name in .obsidian/ are now left out, as
    dot-folders are; memwiki's own tracks never are."""
    notes = _notes(wiki)
    obsidian = wiki.root / ".obsidian"
    obsidian.mkdir()
    (obsidian / "templates.json").write_text('{"folder": "Templates"}')
    (obsidian / "daily-notes.json").write_text('{"folder": "Journal/Daily/", "format": "YYYY"}')
    (wiki.root / "Templates").mkdir()
    (wiki.root / "Templates/note.md").write_text("---\nname: {{title}}\ndescription:\n---\n")
    (wiki.root / "Journal/Daily").mkdir(parents=True)
    (wiki.root / "Journal/Daily/2026-12-04.md").write_text("zebracorn stand-up\n")
    write_text = (wiki.root / "Journal/ideas.md").write_text
    write_text("---\nname: ideas\ndescription: zebracorn ideas\n---\nbody\n")
    listed, skipped = _listed(wiki)
    assert sorted(listed) == sorted([*notes, "Journal/ideas.md", "skill/howto.md"]), skipped
    assert lint_wiki(wiki) == []
    assert sorted(walk(wiki.root)) == sorted(listed)
    hits = retrieve(wiki, "zebracorn", k=20, mode="bm25", notify=lambda m: None).paths()
    assert "Journal/ideas.md" in hits and not [p for p in hits if "Daily" in p or "Templ" in p]
    # A plugin pointed at one of memwiki's own tracks leaves it alone.
    (obsidian / "templates.json").write_text('{"folder": "memory"}')
    assert set(notes) <= set(_listed(wiki)[0])
