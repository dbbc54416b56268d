"""A person's messy Obsidian vault used as the wiki: the files such a vault holds besides
notes (a FIFO named like a note, ...) and what every command does with them. Real wikis
on disk, real `memwiki` processes where a hang is what could go wrong.

(tests/test_obsidian_vault.py covers plugins' notes and other sync tools' copies,
tests/test_walk_links.py symlinks and unreadable folders, tests/test_bad_files.py large,
binary and BOM files.)
"""

from __future__ import annotations

import os

import pytest

from memwiki.recallfile import RecallFile
from memwiki.wiki import Wiki


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch):
    """The test embedder: what files memwiki reads is under test here, not the model."""
    monkeypatch.setenv("MEMWIKI_EMBED", "hash")


FIFO_LINE = "memory/x.md:1: cannot read: not a regular file (a FIFO, socket or device)"


@pytest.mark.parametrize(
    "argv",
    [["list"], ["lint"], ["links", "memory/keep"], ["retrieve", "zanzibar", "--files"]],
)
def test_a_fifo_named_like_a_note_is_one_line_not_a_hang(wiki, run_memwiki, argv):
    """Bug: a FIFO `memory/x.md` (a named pipe, as a tool's socket or a mistaken mkfifo
    leaves) hung `list`, `lint` and `links` for good: reading a note opened it, and
    opening a FIFO waits for a writer. Now it is refused unread, and named."""
    wiki.put(RecallFile("memory", "keep", "A note", body="zanzibar [[other]]\n"))
    wiki.put(RecallFile("memory", "other", "Another", body="text\n"))
    os.mkfifo(wiki.root / "memory/x.md")
    done = run_memwiki("--wiki", wiki.root, *argv, timeout=30)
    assert "Traceback" not in done.stderr
    if argv[0] == "lint":
        assert done.returncode == 1
        assert FIFO_LINE in done.stdout.splitlines()
    elif argv[0] == "list":
        assert done.returncode == 0
        assert f"memwiki: skipped {FIFO_LINE}" in done.stderr.splitlines()
        assert "keep" in done.stdout
    else:
        assert done.returncode == 0, done.stderr
        assert "memory/keep.md" in done.stdout


def test_add_onto_a_fifo_is_refused_and_leaves_it(wiki, run_memwiki):
    """`add` over a FIFO note says why in one line (exit 5), and writes nothing."""
    os.mkfifo(wiki.root / "memory/x.md")
    done = run_memwiki(
        "--wiki", wiki.root, "add", "memory", "x", "-d", "d", "--body-file", "/dev/null",
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 5
    assert done.stderr == (
        "memwiki: error: memory/x.md: cannot read: not a regular file (a FIFO, socket or device)\n"
    )
    assert (wiki.root / "memory/x.md").is_fifo()
    assert Wiki.open(wiki.root).repo.status() == {}


def test_retrieve_takes_any_folder_list_takes_as_a_track(wiki, cli):
    """Bug: a vault's own folder (`Projects/`, as the PARA method names it) was listed by
    `list --track Projects` and its notes retrieved, but `retrieve --track Projects` was
    refused: "track 'Projects' is not a slug" (exit 2), against docs/reference.md ("or a
    folder you added"). Tracks are read as list reads them; only a writer's must be slugs."""
    note = "---\nname: roadmap\ndescription: The side project's roadmap\n---\nquokkafish launch\n"
    (wiki.root / "Projects/Side 🚀").mkdir(parents=True)
    (wiki.root / "Projects/Side 🚀/roadmap.md").write_text(note)
    wiki.put(RecallFile("memory", "other", "Another", body="quokkafish too\n"))
    code, out, err = cli("--wiki", wiki.root, "list", "--track", "Projects")
    assert (code, err) == (0, "") and "roadmap" in out
    code, out, err = cli("--wiki", wiki.root, "retrieve", "quokkafish", "--track", "Projects",
                         "--files")  # fmt: skip
    assert (code, out, err) == (0, "Projects/Side 🚀/roadmap.md\n", "")
    for bad in (".git", "Projects/Side 🚀", ""):
        code, out, err = cli("--wiki", wiki.root, "retrieve", "quokkafish", "--track", bad)
        assert code == 2 and out == "", bad
        message = f"invalid track {bad!r}: a top-level folder name of the wiki"
        assert err == f"memwiki: error: {message}\n"


def test_commit_prints_a_file_name_with_a_line_break_or_an_escape_on_one_line(wiki, cli):
    """Bug: `memwiki commit` printed a pasted file's name as it is: `memory/evil\\nforged...`
    made two lines of its output (and of the 'though lint rejects it' warning), and an
    escape sequence in a name recoloured the terminal; lint, list and retrieve escaped
    them already (recallfile.printable). Now every commit line and warning does too."""
    (wiki.root / "memory/evil\nforged.md").write_text("no frontmatter\n")
    (wiki.root / "memory/esc\x1b[31mred.md").write_text("no frontmatter\n")
    code, out, err = cli("--wiki", wiki.root, "commit")
    assert code == 0
    assert out.splitlines()[:2] == [
        "created  memory/esc\\x1b[31mred.md",
        "created  memory/evil\\nforged.md",
    ]
    assert "\x1b" not in out + err
    assert len(err.splitlines()) == 2
    assert all(line.startswith("memwiki: committed memory/") for line in err.splitlines())


def test_templaters_templates_folder_is_left_out_as_the_core_plugins_is(wiki, cli):
    """Bug: only the core Templates plugin's folder was left out; a vault using Templater
    (the most used templates plugin, `templates_folder` in its data.json) had every
    template reported by lint (`name: <% tp.file.title %>` is no name), so the pre-commit
    hook refused them, listed as skipped and 'not indexed' by every retrieve."""
    plugin = wiki.root / ".obsidian/plugins/templater-obsidian"
    plugin.mkdir(parents=True)
    (plugin / "data.json").write_text('{"command_timeout": 5, "templates_folder": "Meta/Tpl/"}')
    (wiki.root / "Meta/Tpl").mkdir(parents=True)
    template = "---\nname: <% tp.file.title %>\ndescription: <% tp.system.prompt() %>\n---\n"
    (wiki.root / "Meta/Tpl/meeting.md").write_text(template + "quokkafish agenda\n")
    (wiki.root / "Meta/kept.md").write_text("---\nname: kept\ndescription: d\n---\nquokkafish\n")
    assert cli("--wiki", wiki.root, "lint") == (0, "", "")
    code, out, err = cli("--wiki", wiki.root, "list")
    assert (code, err) == (0, "") and "kept" in out and "tp.file" not in out
    code, out, err = cli("--wiki", wiki.root, "retrieve", "quokkafish", "--files")
    assert (code, out, err) == (0, "Meta/kept.md\n", "")


def test_a_link_to_dev_zero_at_the_root_is_named_not_read_forever(wiki):
    """Bug: `memwiki lint` read every markdown file at the wiki's root whole, to see whether
    it looks like a RecallFile: `zero.md -> /dev/zero` filled memory until a MemoryError
    (7 s under a 2 GB limit; without one, until the machine ran out). Now a device, FIFO
    or socket is refused unread, and the symlink is named as leading outside the wiki."""
    import resource
    import subprocess
    import sys

    os.symlink("/dev/zero", wiki.root / "zero.md")

    def limit() -> None:  # a regression fails with a MemoryError, not a swapping machine
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "memwiki", "--wiki", str(wiki.root), "lint"],
        capture_output=True, text=True, timeout=60, preexec_fn=limit,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.stderr == ""
    line = "zero.md:1: symlink to /dev/zero, outside the wiki: not read, not indexed"
    assert (done.returncode, done.stdout) == (1, f"{line}\n")


def test_a_fifo_named_as_a_numbered_copy_does_not_hang_lint(wiki, run_memwiki):
    """Bug: with a FIFO named as iCloud names its copies (`memory/people 2.md`), lint hung
    for good: the check for other sync tools' copies opened it to read its `name:`. Only
    regular files are candidates now; the FIFO is named as every reader names it."""
    wiki.put(RecallFile("memory", "people", "The team", body="Bob\n"))
    os.mkfifo(wiki.root / "memory/people 2.md")
    os.mkfifo(wiki.root / "people (conflicted copy).md")
    done = run_memwiki("--wiki", wiki.root, "lint", timeout=30)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == (
        "memory/people 2.md:1: cannot read: not a regular file (a FIFO, socket or device)\n"
    )


def test_a_note_saved_as_utf16_is_named_as_such_not_as_a_binary_file(wiki, cli):
    """Bug: a note saved as UTF-16 (Windows Notepad's "Unicode") was a "binary file, not
    markdown" in lint, list and retrieve: true of its bytes, but it sends a person looking
    for an image. It says what the file is and what to do."""
    text = "---\nname: utf16\ndescription: d\n---\nbody\n"
    (wiki.root / "memory/utf16.md").write_text(text, encoding="utf-16")  # with its BOM
    (wiki.root / "memory/png.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    code, out, err = cli("--wiki", wiki.root, "lint")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "memory/png.md:1: binary file, not markdown",
        "memory/utf16.md:1: UTF-16 text: memwiki reads UTF-8, save the file as UTF-8",
    ]
