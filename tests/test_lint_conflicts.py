"""lint names unresolved conflict copies (from memorize merges or sync) for what they are."""

from __future__ import annotations

from memwiki.lint import lint_wiki
from memwiki.wiki import Wiki


def test_conflict_copy_is_reported_as_unresolved(tmp_path):
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory/notes.md").write_text("---\nname: notes\ndescription: Notes\n---\nours\n")
    copy = wiki.root / "memory/notes.conflict-run-20261130-ab12cd3.md"
    copy.write_text(
        "---\nname: notes.conflict-run-20261130-ab12cd3\ndescription: Notes\n"
        "conflict_of: memory/notes\nconflict_label: run-20261130\n---\ntheirs\n"
    )
    problems = lint_wiki(wiki)
    assert [(p.path, p.line) for p in problems] == [
        ("memory/notes.conflict-run-20261130-ab12cd3.md", 1)
    ]
    assert "unresolved conflict copy of memory/notes" in problems[0].message
    copy.unlink()
    assert lint_wiki(wiki) == []
