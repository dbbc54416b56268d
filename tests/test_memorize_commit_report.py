"""A same-line conflict is reported as the conflict copy it made, never as an update."""

from __future__ import annotations

from pathlib import Path

from test_memorize_support import make_wiki, payload, recall, write

from memwiki import memorize
from memwiki.cli.output import print_committed

NOTES = recall("notes", "# Notes\n\nline one\nline two\nline three\n")


def test_same_line_conflict_says_conflict_copy_created(tmp_path, capsys):
    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES})
    one = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    two = memorize.prepare(wiki, [payload(tmp_path, "2.json", ["two"])], run_id="two")
    write(Path(one.workspace), "memory/notes.md", NOTES.replace("line two", "line two (one)"))
    write(Path(two.workspace), "memory/notes.md", NOTES.replace("line two", "line two (two)"))
    write(Path(two.workspace), "memory/extra.md", recall("extra", "more\n"))
    assert memorize.commit(wiki, "one").updated == ["memory/notes.md"]
    result = memorize.commit(wiki, "two")
    [conflict] = result.conflicts
    assert result.updated == [] and result.created == ["memory/extra.md"]
    assert result.to_dict()["updated"] == []
    capsys.readouterr()
    print_committed(result)
    out = capsys.readouterr().out
    assert "updated" not in out
    assert (
        f"conflict copy created {conflict['copy']} (both-modified: memory/notes.md unchanged)"
        in out
    )
    assert "created  memory/extra.md" in out
