"""Lint: every problem as `path:line: message`, duplicates, stray files, conflict copies."""

from __future__ import annotations

import json

from memwiki.lint import lint_wiki
from memwiki.recallfile import RecallFile, render


def write(wiki, rel: str, text: str | bytes) -> None:
    path = wiki.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def valid(name: str, **more) -> str:
    return render(RecallFile("memory", name, f"About {name}", body="body\n", **more))


def test_clean_wiki_passes(wiki, cli) -> None:
    write(wiki, "memory/good.md", valid("good"))
    assert lint_wiki(wiki) == []
    assert cli("--wiki", wiki.root, "lint") == (0, "", "")


def test_each_problem_is_path_line_message_and_exit_1(wiki, cli) -> None:
    write(wiki, "memory/good.md", valid("good"))
    write(wiki, "memory/yaml.md", "---\nname: yaml\ndescription: a: b\n---\n")
    write(wiki, "memory/bytes.md", b"---\nname: bytes\ndescription: d\n---\n\nok\n\xff\xfe\n")
    write(wiki, "skill/stem.md", "---\ndescription: d\nname: other\n---\n")
    write(wiki, "skill/plain.md", "# no frontmatter\n")
    code, out, err = cli("--wiki", wiki.root, "lint")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "memory/bytes.md:7: not valid UTF-8 text",
        "memory/yaml.md:3: invalid YAML in frontmatter: mapping values are not allowed here",
        "skill/plain.md:1: missing frontmatter: the file must start with a '---' line "
        "and close it with '---'",
        "skill/stem.md:3: name 'other' does not match the file name 'stem'",
    ]
    code, out, _ = cli("--wiki", wiki.root, "lint", "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    assert data["problems"][0] == {
        "path": "memory/bytes.md",
        "line": 7,
        "message": "not valid UTF-8 text",
    }


def test_duplicate_names_within_a_track_case_insensitively(wiki) -> None:
    write(wiki, "memory/a/x.md", valid("x"))
    write(wiki, "memory/b/x.md", valid("x"))
    write(wiki, "skill/x.md", valid("x").replace("memory", "skill"))  # another track: fine
    problems = lint_wiki(wiki)
    assert [str(p) for p in problems] == [
        "memory/b/x.md:1: duplicate name in track 'memory': also memory/a/x.md"
    ]


def test_duplicate_differing_only_in_case(wiki) -> None:
    write(wiki, "memory/deploy.md", valid("deploy"))
    write(wiki, "memory/old/Deploy.md", valid("deploy"))
    messages = [str(p) for p in lint_wiki(wiki)]
    assert "memory/old/Deploy.md:1: duplicate name in track 'memory': also memory/deploy.md" in (
        messages
    )


def test_stray_recallfile_at_the_root_is_reported_but_readme_is_not(wiki) -> None:
    write(wiki, "loose-note.md", "---\nname: loose-note\ndescription: lost\n---\n")
    write(wiki, "Todo.md", "---\ntags: [x]\n---\nnot a RecallFile\n")
    assert [str(p) for p in lint_wiki(wiki)] == [
        "loose-note.md:1: looks like a RecallFile but is outside any track: "
        "move it into memory/ or skill/"
    ]


def test_conflict_copy_is_reported_at_its_key(wiki) -> None:
    text = "---\nname: plan-conflict\ndescription: d\nowner: me\nconflict_of: memory/plan.md\n---\n"
    write(wiki, "memory/plan-conflict.md", text)
    [problem] = lint_wiki(wiki)
    assert (problem.path, problem.line) == ("memory/plan-conflict.md", 5)
    assert problem.message.startswith("unresolved conflict copy of memory/plan.md")


def test_lint_only_the_given_files(wiki, cli, monkeypatch) -> None:
    write(wiki, "memory/bad-one.md", "no frontmatter\n")
    write(wiki, "memory/bad-two.md", "no frontmatter\n")
    code, out, _ = cli("--wiki", wiki.root, "lint", wiki.root / "memory" / "bad-two.md")
    assert code == 1 and [line.split(":")[0] for line in out.splitlines()] == ["memory/bad-two.md"]
    monkeypatch.chdir(wiki.root)
    code, out, _ = cli("--wiki", wiki.root, "lint", "memory/bad-one.md")
    assert code == 1 and [line.split(":")[0] for line in out.splitlines()] == ["memory/bad-one.md"]


def test_dot_folders_are_not_linted(wiki) -> None:
    write(wiki, ".obsidian/notes.md", "not a RecallFile\n")
    write(wiki, ".memwiki/runs/x/memory/y.md", "not a RecallFile\n")
    write(wiki, "memory/.trash/z.md", "not a RecallFile\n")
    assert lint_wiki(wiki) == []
