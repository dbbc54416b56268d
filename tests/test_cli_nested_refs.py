"""Notes in a track's subfolders, named by the path `retrieve --files` and `list` print.

Bug it prevents: retrieve printed memory/team/oncall.md, and `show`, `rm`, `links` and
`restore` refused that path ("expected TRACK/NAME"); only memory/oncall found the note,
and a note deleted from a subfolder could not be restored there.
"""

from __future__ import annotations

import pytest

NOTE = "---\nname: oncall\ndescription: Who is on call\n---\n# Oncall\nKim this week.\n"


@pytest.fixture
def nested(wiki, git):
    (wiki.root / "memory" / "team").mkdir()
    (wiki.root / "memory" / "team" / "oncall.md").write_text(NOTE, encoding="utf-8")
    git(wiki.root, "add", "-A")
    git(wiki.root, "commit", "-qm", "a note in a subfolder")
    return wiki


def test_show_and_links_take_the_notes_path(nested, cli) -> None:
    for ref in ("memory/team/oncall.md", "memory/team/oncall", "memory/oncall"):
        code, out, err = cli("--wiki", nested.root, "show", ref)
        assert (code, out, err) == (0, NOTE, ""), ref
    code, out, _ = cli("--wiki", nested.root, "links", "memory/team/oncall.md")
    assert code == 0 and out.startswith("memory/team/oncall.md\n")


def test_a_path_naming_another_folder_or_escaping_is_refused(nested, cli) -> None:
    code, out, err = cli("--wiki", nested.root, "rm", "memory/old/oncall.md")
    assert (code, out) == (3, "")
    assert "no RecallFile memory/old/oncall.md (the note oncall is memory/team/oncall.md)" in err
    assert (nested.root / "memory" / "team" / "oncall.md").is_file()
    for ref in ("memory/../oncall", "memory/./oncall", "memory//oncall"):
        code, _, err = cli("--wiki", nested.root, "show", ref)
        assert code == 2 and "expected TRACK/NAME" in err, ref


def test_rm_then_restore_by_path_brings_the_note_back_to_its_folder(nested, cli, git) -> None:
    path = nested.root / "memory" / "team" / "oncall.md"
    assert cli("--wiki", nested.root, "rm", "memory/team/oncall.md")[0] == 0
    assert not path.exists()
    code, out, err = cli("--wiki", nested.root, "restore", "memory/team/oncall")
    assert code == 0, err
    assert path.read_text(encoding="utf-8") == NOTE
    assert not (nested.root / "memory" / "oncall.md").exists()
    assert git(nested.root, "status", "--porcelain") == ""
