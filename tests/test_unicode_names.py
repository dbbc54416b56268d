"""Names in another Unicode normalization: macOS and some editors write file names
decomposed (NFD), typed text and `[[links]]` are usually composed (NFC). Links match by
NFC (links.note_key); files keep their names. Linux keeps the bytes as given, so real
files in both forms are made here."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from memwiki.links import LinkIndex, broken_links


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def note(root: Path, rel: str, body: str) -> Path:
    """A valid RecallFile (a slug name) at rel, with body."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {path.stem}\ndescription: the {path.stem} note\n---\n{body}")
    return path


@pytest.mark.parametrize(("on_disk", "typed"), [(nfd, nfc), (nfc, nfd)])
def test_links_reach_a_note_whatever_the_normalization_of_its_name(wiki, cli, on_disk, typed):
    """Bug: `[[café]]` (NFC) to `café.md` written in NFD (a Mac's name) was a broken link,
    in `memwiki links`, in backlinks and in lint; so was a folder named in NFD."""
    assert nfc("café") != nfd("café")
    root = wiki.root
    loose = root / f"{on_disk('Café')}.md"  # a person's note at the vault root
    loose.write_text("# Café\nSee [[linker]].\n")
    folder = on_disk("Cafés")  # a subfolder as Obsidian users make them
    note(root, f"memory/{folder}/espresso.md", "# Espresso\ngrinder settings\n")
    links = (
        f"[[{typed('café')}]] [[{typed('Café')}.md]] [[/{typed('Café')}]] "
        f"[[{typed('Cafés')}/espresso]] [[memory/{typed('Cafés')}/espresso|the shots]] "
        f"[[./{typed('Cafés')}/espresso]]"
    )
    note(root, "memory/linker.md", f"# Linker\n{links}\n")
    index = LinkIndex(wiki)
    targets = [lk.target for lk in index.outgoing("memory/linker.md")]
    espresso = f"memory/{folder}/espresso.md"  # as on disk: a target is a path to open
    assert targets == [loose.name, loose.name, loose.name, espresso, espresso, espresso]
    assert broken_links(wiki) == []
    assert [lk.source for lk in index.backlinks(espresso)] == ["memory/linker.md"] * 3

    code, out, err = cli("--wiki", root, "links", "memory/espresso", "--json")
    assert code == 0, err
    assert [b["source"] for b in json.loads(out)["backlinks"]] == ["memory/linker.md"] * 3
    code, out, err = cli("--wiki", root, "links", "memory/linker", "--json")
    assert code == 0, err
    assert not any(lk["broken"] for lk in json.loads(out)["outgoing"])
    code, out, err = cli("--wiki", root, "lint")
    assert "broken link" not in out + err

    # The file keeps its name, and retrieve names the path as it is on disk.
    assert (root / espresso).is_file() and sorted(p.name for p in root.glob("*.md")) == sorted(
        ["README.md", loose.name]
    )
    code, out, err = cli("--wiki", root, "retrieve", "espresso grinder", "--files")
    assert code == 0, err
    assert out.splitlines()[0] == espresso and (root / out.splitlines()[0]).is_file()


def test_an_alias_in_the_other_normalization_resolves(wiki):
    note(wiki.root, "memory/cafe-notes.md", "# Notes\n")
    path = wiki.root / "memory" / "cafe-notes.md"
    path.write_text(path.read_text().replace("---\n#", f"aliases: [{nfd('Crème')}]\n---\n#"))
    note(wiki.root, "memory/linker.md", f"[[{nfc('crème')}]]\n")
    (link,) = LinkIndex(wiki).outgoing("memory/linker.md")
    assert (link.target, link.via_alias) == ("memory/cafe-notes.md", True)


def test_lint_finds_two_notes_whose_names_differ_only_in_normalization(wiki, cli):
    """Two files `crème.md`, one NFC and one NFD, are one name to a person and to a link."""
    (wiki.root / "notes" / "sub").mkdir(parents=True)
    (wiki.root / "notes" / f"{nfc('crème')}.md").write_text("# a\n")
    (wiki.root / "notes" / "sub" / f"{nfd('crème')}.md").write_text("# b\n")
    code, out, _ = cli("--wiki", wiki.root, "lint")
    assert code == 1
    assert f"duplicate name in track 'notes': also notes/{nfc('crème')}.md" in out


def test_a_file_name_that_is_not_utf8_is_held_back_not_an_internal_error(wiki, run_memwiki):
    """Bug: `memwiki commit` with `memory/bad\\xffname.md` in the work tree (Latin-1 bytes
    from an old disk or an archive) was exit 70, "UnicodeEncodeError ... surrogates not
    allowed", and left the file staged; committed, it breaks every Mac the wiki syncs to.
    Now it is held back like another tool's copy, with why; a tracked one (committed by
    git itself) is named escaped in memwiki's commit message."""
    import os
    import subprocess

    root = wiki.root
    bad = os.fsencode(root) + b"/memory/bad\xffname.md"
    with open(bad, "wb") as fh:
        fh.write(b"---\nname: bad\ndescription: d\n---\nx\n")
    done = run_memwiki("--wiki", root, "commit", "--json")
    assert done.returncode == 0, done.stderr
    held = json.loads(done.stdout)["not_committed"]
    assert held[0]["path"] == "memory/bad\udcffname.md"  # a JSON escape: the bytes, escaped
    assert [h["problem"].split(":")[0] for h in held] == ["a file name that is not UTF-8"]
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True
    ).stdout
    assert status == b'?? "memory/bad\\377name.md"\n'  # untracked still, not staged
    # One that git itself committed, then edited: memwiki's commit names it escaped.
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@x"]
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "by git"], cwd=root, check=True)
    with open(bad, "ab") as fh:
        fh.write(b"more\n")
    done = run_memwiki("--wiki", root, "commit")
    assert done.returncode == 0, done.stderr
    message = subprocess.run(
        ["git", "log", "-1", "--format=%B"], cwd=root, capture_output=True, check=True
    ).stdout
    assert b"memwiki: updated memory/bad\\xffname" in message
