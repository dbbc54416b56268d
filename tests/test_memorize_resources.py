"""prepare --project, the resource job, verify-resources and the merge into project/<slug>.md."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from test_memorize_support import git, make_wiki, payload, recall, write

from memwiki import memorize
from memwiki.errors import InvalidInput, StateError
from memwiki.memorize import resources, runstate, touched


def checkout(tmp_path: Path) -> Path:
    """A ledger repository with tracked, untracked and ignored files."""
    root = tmp_path / "ledger"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, timeout=30)
    subprocess.run(
        ["git", "remote", "add", "origin", "git@github.com:acme/ledger.git"], cwd=root, check=True
    )
    write(root, ".gitignore", "*.log\nbuild/\n")
    write(root, "src/ledger/invoices.py", "def total(): ...\n")
    write(root, "tests/test_invoices.py", "def test_total(): ...\n")
    write(root, "README.md", "# ledger\n")
    write(root, "debug.log", "noise\n")
    write(root, "build/out.txt", "artifact\n")
    return root


def session_items(root: Path) -> list[dict]:
    return [
        {"type": "tool_call", "name": "Read", "arguments": {"file_path": str(root / "README.md")}},
        {"type": "tool_call", "name": "Edit", "arguments": {"file_path": "src/ledger/invoices.py"}},
        {
            "type": "tool_call",
            "name": "apply_patch",
            "arguments": {"input": "*** Begin Patch\n*** Update File: tests/test_invoices.py\n"},
        },
        {"type": "tool_call", "name": "Read", "arguments": {"file_path": "docs/missing.md"}},
        {"type": "tool_call", "name": "Read", "arguments": {"file_path": "debug.log"}},
        {"type": "tool_call", "name": "Read", "arguments": {"file_path": "/etc/hostname"}},
        {
            "type": "tool_call",
            "name": "Glob",
            "arguments": {"paths": ["build/out.txt", ".git/HEAD"]},
        },
        {"type": "tool_call", "name": "bash", "arguments": {"cmd": "pytest -x"}},
    ]


def prepared(tmp_path: Path, wiki_files: dict[str, str] | None = None):
    root = checkout(tmp_path)
    wiki = make_wiki(tmp_path, wiki_files)
    s1 = payload(tmp_path, "s1.json", ["fix the invoice totals", "done"], session_items(root))
    result = memorize.prepare(wiki, [s1], project="ledger", root=root)
    return wiki, root, result


def test_touched_paths_changed_first_each_once():
    items = [
        {"type": "message", "role": "user", "content": "x"},
        {"type": "tool_call", "name": "Read", "arguments": {"file_path": "a.py"}},
        {"type": "tool_call", "name": "Write", "arguments": {"file_path": "b.py"}},
        {"type": "tool_call", "name": "Read", "arguments": {"path": "b.py"}},
        {"type": "tool_call", "name": "Read", "arguments": {"file_path": "bad\nname"}},
        {"type": "tool_call", "name": "shell", "arguments": ["apply_patch", "*** Add File: c.py"]},
        {"type": "tool_call", "name": "x", "arguments": "not an object"},
    ]
    assert touched.touched_paths(items) == ["b.py", "a.py"]
    call = {"type": "tool_call", "name": "shell", "arguments": {"command": ["apply_patch", "x"]}}
    call["arguments"]["command"][1] = "*** Begin Patch\n*** Add File: c.py\n*** End Patch"
    assert touched.touched_paths([call]) == ["c.py"]


def test_prepare_with_a_project_adds_the_resource_job(tmp_path):
    wiki, root, result = prepared(tmp_path)
    assert len(result.jobs) == 3 and result.jobs[-1].endswith("03-resource-projects.md")
    assert result.to_dict()["transcripts"][0]["project"] == "ledger"
    state = runstate.load_state(runstate.run_dir(wiki.sidecar, result.run_id))
    assert state.sessions[0]["project"] == "ledger"
    assert state.sessions[0]["root"] == str(root.resolve())
    memory_job = Path(result.jobs[0]).read_text()
    skill_job = Path(result.jobs[1]).read_text()
    assert "project: ledger" in memory_job and "personal preferences" in memory_job
    assert "touched-session-01.txt" in skill_job
    resource_job = Path(result.jobs[2]).read_text()
    assert f"memwiki memorize verify-resources {result.run_id}" in resource_job
    assert "resources/ledger.md" in resource_job
    log = Path(result.to_dict()["transcripts"][0]["touched"]).read_text().splitlines()
    assert log[:2] == ["src/ledger/invoices.py", "tests/test_invoices.py"]
    assert str(root / "README.md") in log
    executor = Path(result.executor_prompt).read_text()
    assert "resource job" in executor


def test_prepare_without_a_project_is_unchanged(tmp_path):
    wiki = make_wiki(tmp_path)
    s1 = payload(tmp_path, "s1.json", ["hello", "hi"])
    result = memorize.prepare(wiki, [s1])
    assert len(result.jobs) == 2
    assert "not run inside a known code project" in Path(result.jobs[0]).read_text()
    transcript = result.to_dict()["transcripts"][0]
    assert (transcript["project"], transcript["touched"]) == (None, None)
    with pytest.raises(StateError, match="no project"):
        memorize.verify_resources(wiki, result.run_id)
    with pytest.raises(InvalidInput, match="project"):
        memorize.prepare(wiki, [s1], project="Not A Slug")


def test_prepare_project_cli_auto_and_strict_schema(tmp_path, cli, monkeypatch):
    root = checkout(tmp_path)
    wiki = make_wiki(tmp_path)
    s1 = payload(tmp_path, "s1.json", ["hello", "hi"], session_items(root))
    monkeypatch.chdir(root / "src")
    code, out, err = cli(
        "--wiki", wiki.root, "memorize", "prepare", s1, "--project", "auto", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["transcripts"][0]["project"] == "ledger" and len(data["jobs"]) == 3
    state = runstate.load_state(runstate.run_dir(wiki.sidecar, data["run_id"]))
    assert state.sessions[0]["root"] == str(root.resolve())
    # A named project is recorded even without a checkout here; schema 1.0 stays strict.
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(
        "--wiki", wiki.root, "memorize", "prepare", s1, "--project", "harbor", "--again", "--json"
    )
    assert code == 0, err
    rid = json.loads(out)["run_id"]
    assert runstate.load_state(runstate.run_dir(wiki.sidecar, rid)).sessions[0]["root"] is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"project": "x", "items": [{"type": "message", "role": "user",
                                                          "content": "x"}]}))  # fmt: skip
    code, _, err = cli("--wiki", wiki.root, "memorize", "prepare", bad, "--project", "x")
    assert code == 2 and "unknown field" in err
    code, _, err = cli("--wiki", wiki.root, "memorize", "prepare", s1, "--project", "auto")
    assert code == 2 and "not inside a git repository" in err


def test_verify_keeps_existing_tracked_files_inside_the_repository(tmp_path):
    wiki, root, result = prepared(tmp_path)
    (found,) = memorize.verify_resources(wiki, result.run_id)
    assert found.project == "ledger"
    assert found.kept == ["src/ledger/invoices.py", "tests/test_invoices.py", "README.md"]
    reasons = {d["path"]: d["reason"] for d in found.dropped}
    assert reasons["docs/missing.md"] == "missing"
    assert reasons["debug.log"] == "ignored by git"
    assert reasons["build/out.txt"] == "ignored by git"
    assert reasons["/etc/hostname"] == "outside the project's repository"
    assert reasons[".git/HEAD"] == "not a file of the repository"
    listing = Path(found.file).read_text()
    assert "- `src/ledger/invoices.py` —\n" in listing + "\n"
    verified = json.loads((Path(found.file).parent / "verified.json").read_text())
    assert verified == {"ledger": found.kept}


def test_verify_refuses_symlinks_out_and_caps_at_fifty(tmp_path):
    root = checkout(tmp_path)
    outside = tmp_path / "secret.txt"
    outside.write_text("no\n")
    (root / "link.txt").symlink_to(outside)
    many = [f"pkg/m{i:02d}.py" for i in range(60)]
    for rel in many:
        write(root, rel, "x = 1\n")
    kept, dropped = resources.verify_paths(["link.txt", *many, "pkg/m00.py"], root)
    assert kept == many[:50]
    assert {d["reason"] for d in dropped} == {
        "outside the project's repository",
        "over the cap of 50",
    }
    assert [d["path"] for d in dropped if "cap" in d["reason"]] == many[50:]


def test_verify_without_a_checkout_drops_everything_and_root_option_fixes_it(tmp_path, cli):
    root = checkout(tmp_path)
    wiki = make_wiki(tmp_path)
    s1 = payload(tmp_path, "s1.json", ["hello", "hi"], session_items(root)[1:2])
    result = memorize.prepare(wiki, [s1], project="ledger")
    (found,) = memorize.verify_resources(wiki, result.run_id)
    assert found.kept == [] and "no checkout" in found.dropped[0]["reason"]
    code, out, err = cli(
        "--wiki", wiki.root, "memorize", "verify-resources", result.run_id, "--root", root, "--json"
    )
    assert code == 0, err
    assert json.loads(out)["projects"][0]["kept"] == ["src/ledger/invoices.py"]


HAND_EDITED = """---
name: ledger
description: Ledger, the accounting API, and where things are
project: ledger
tags: [billing]
owner: dana   # a key memwiki does not know
---
# Ledger

Dana wrote this paragraph by hand. Keep it.

## Resources

* `README.md` — overview
- `docs/adr/0001.md` — the first decision record (hand-added)

## Notes

- Resource lines below this heading are not entries: `src/x.py` — untouched
"""


def describe(file: Path, descriptions: dict[str, str]) -> None:
    lines = []
    for line in file.read_text().splitlines():
        m = resources.ENTRY.match(line)
        if m and m.group(2) in descriptions:
            line = f"- `{m.group(2)}` — {descriptions[m.group(2)]}"
        lines.append(line)
    file.write_text("\n".join(lines) + "\n")


def test_commit_merges_descriptions_and_keeps_hand_edits(tmp_path):
    wiki, root, result = prepared(tmp_path, {"project/ledger.md": HAND_EDITED})
    (found,) = memorize.verify_resources(wiki, result.run_id)
    assert "- `README.md` — overview" in Path(found.file).read_text()  # the known description
    describe(
        Path(found.file),
        {
            "src/ledger/invoices.py": "invoice totals and rounding (Decimal, cents)",
            "README.md": "overview and quick start",
            "tests/test_invoices.py": "",  # left undescribed: left out
        },
    )
    # Meanwhile a person edits the same file in the wiki (another part of it).
    hand = wiki.root / "project" / "ledger.md"
    hand.write_text(HAND_EDITED.replace("Keep it.", "Keep it. Edited during the run."))
    done = memorize.commit(wiki, result.run_id)
    assert "project/ledger.md" in done.updated and not done.conflicts
    text = hand.read_text()
    assert "Keep it. Edited during the run." in text
    assert "* `README.md` — overview and quick start\n" in text  # its bullet kept
    assert "- `docs/adr/0001.md` — the first decision record (hand-added)\n" in text
    new_line = "- `src/ledger/invoices.py` — invoice totals and rounding (Decimal, cents)\n"
    assert text.index(new_line) < text.index("## Notes")
    assert "tests/test_invoices.py" not in text
    assert "owner: dana   # a key memwiki does not know" in text
    assert "`src/x.py` — untouched" in text
    before, after = HAND_EDITED.splitlines(), text.splitlines()
    changed = {ln for ln in before if ln not in after}
    assert changed == {"* `README.md` — overview", "Dana wrote this paragraph by hand. Keep it."}
    assert "memorize: merge run" in git(wiki.root, "log", "-1", "--format=%s")
    run_dir = Path(found.file).parent.parent
    assert sorted(p.name for p in run_dir.iterdir()) == ["run.json"]  # the record only


def test_commit_creates_the_project_file_when_missing(tmp_path):
    wiki, _root, result = prepared(tmp_path)
    (found,) = memorize.verify_resources(wiki, result.run_id)
    describe(Path(found.file), {"README.md": "overview"})
    done = memorize.commit(wiki, result.run_id)
    assert done.created == ["project/ledger.md"]
    text = (wiki.root / "project" / "ledger.md").read_text()
    assert "project: ledger" in text and text.endswith("## Resources\n\n- `README.md` — overview\n")
    assert wiki.retrieve("ledger overview", mode="bm25", project="ledger").paths()[0] == (
        "project/ledger.md"
    )


def test_executor_cannot_inject_unverified_paths(tmp_path):
    wiki, _root, result = prepared(tmp_path)
    (found,) = memorize.verify_resources(wiki, result.run_id)
    with open(found.file, "a") as fh:
        fh.write("- `../../etc/passwd` — sneaky\n- `README.md` — overview\n")
    memorize.commit(wiki, result.run_id)
    text = (wiki.root / "project" / "ledger.md").read_text()
    assert "passwd" not in text and "`README.md` — overview" in text


def test_merge_entries_without_a_section_and_with_crlf():
    text = "---\nname: a\ndescription: d\n---\n# A\n\nBody.\n"
    out = resources.merge_entries(text, {"x.py": "the x"})
    assert out == text + "\n## Resources\n\n- `x.py` — the x\n"
    crlf = "# A\r\n\r\n## Resources\r\n\r\n## Next\r\n"
    merged = resources.merge_entries(crlf, {"y.py": "why"})
    assert merged == "# A\r\n\r\n## Resources\r\n\r\n- `y.py` — why\r\n\r\n## Next\r\n"
    fenced = "```\n## Resources\n```\n"
    assert resources.merge_entries(fenced, {"z": "d"}).startswith(fenced)


@settings(max_examples=80, deadline=None)
@given(
    body=hst.lists(
        hst.sampled_from(
            ["text", "", "## Other", "- `a.py` — old", "## Resources", "- note", "```", "# Top"]
        ),
        max_size=12,
    ),
    entries=hst.dictionaries(
        hst.sampled_from(["a.py", "b/c.md", "d e.txt"]),
        hst.sampled_from(["one", "two"]),
        max_size=3,
    ),
)
def test_merge_is_idempotent_and_only_adds_or_rewrites_entries(body, entries):
    text = "\n".join(body) + "\n"
    once = resources.merge_entries(text, entries)
    assert resources.merge_entries(once, entries) == once
    kept = once.splitlines()
    for line in text.splitlines():
        m = resources.ENTRY.match(line)
        if not (m and m.group(2) in entries):
            assert line in kept
    assert resources.project_file_entries(once).items() >= entries.items()


def test_an_invalid_project_file_from_the_executor_is_refused(tmp_path):
    wiki, _root, result = prepared(tmp_path)
    ws = Path(result.workspace)
    write(ws, "project/ledger.md", recall("wrong-name", "x"))
    with pytest.raises(memorize.RunInvalid):
        memorize.commit(wiki, result.run_id)


# ------------------------------------------------------------------ bad input


def test_verify_drops_non_utf8_and_escaping_paths_with_a_reason(tmp_path):
    wiki, root, result = prepared(tmp_path)
    # A real file whose name is not UTF-8, and a symlinked directory leading out.
    name = bytes(root) + b"/caf\xe9.py"
    with open(name, "wb") as fh:
        fh.write(b"x = 1\n")
    outside = tmp_path / "elsewhere"
    write(outside, "secret.py", "key = 1\n")
    (root / "vendor").symlink_to(outside, target_is_directory=True)
    log = touched.touched_log_path(Path(result.workspace).parent, 1)
    with open(log, "ab") as fh:  # the executor adds lines; a tool logged raw bytes
        fh.write(b"caf\xe9.py\n\xff\xfe\n" + bytes(root) + b"/vendor/secret.py\nvendor/secret.py\n")
    (found,) = memorize.verify_resources(wiki, result.run_id)
    reasons = [(d["path"], d["reason"]) for d in found.dropped]
    assert ("caf\ufffd.py", "not a UTF-8 path") in reasons
    assert ("\ufffd\ufffd", "not a UTF-8 path") in reasons
    assert (str(root / "vendor/secret.py"), "outside the project's repository") in reasons
    assert found.kept == ["src/ledger/invoices.py", "tests/test_invoices.py", "README.md"]
    Path(found.file).read_text(encoding="utf-8")  # the list the executor reads is UTF-8
    json.dumps(found.to_dict(), ensure_ascii=False).encode("utf-8")


def test_prepare_refuses_a_payload_with_a_lone_surrogate_in_one_line(tmp_path, cli):
    wiki = make_wiki(tmp_path)
    root = checkout(tmp_path)
    bad = {"type": "tool_call", "name": "Edit", "arguments": {"file_path": "caf\udce9.py"}}
    s1 = payload(tmp_path, "s1.json", ["hello", "hi"], [bad])  # json writes "\udce9"
    assert "\\udce9" in s1.read_text()
    code, out, err = cli("--wiki", wiki.root, "memorize", "prepare", s1, "--project", "ledger",
                         "--root", root)  # fmt: skip
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "items[2].arguments.file_path: not valid Unicode text" in err
    assert not list((wiki.sidecar / "runs").glob("*")) if (wiki.sidecar / "runs").exists() else True


def test_commit_stops_on_a_project_file_it_cannot_read_and_loses_nothing(tmp_path):
    wiki, _root, result = prepared(tmp_path)
    (found,) = memorize.verify_resources(wiki, result.run_id)
    describe(Path(found.file), {"README.md": "overview"})
    target = Path(result.workspace) / "project" / "ledger.md"
    target.parent.mkdir(exist_ok=True)
    broken = b"---\nname: ledger\ndescription: d\n---\n\xff hand notes\n\n## Resources\n"
    target.write_bytes(broken)
    with pytest.raises(InvalidInput, match=r"project/ledger.md is not valid UTF-8 \(byte 36\)"):
        memorize.commit(wiki, result.run_id)
    assert target.read_bytes() == broken
    assert runstate.load_state(Path(result.workspace).parent).phase == runstate.PREPARED
    target.write_bytes(broken.replace(b"\xff", b"fixed:"))
    memorize.commit(wiki, result.run_id)
    text = (wiki.root / "project" / "ledger.md").read_text()
    assert "fixed: hand notes" in text and "- `README.md` — overview" in text


def test_merge_leaves_lines_it_cannot_read_alone():
    text = (
        "# Ledger\n\n## Resources\n\n- src/x.py — no backticks\n- `unterminated — d\n"
        "- ask Priya before changing the schema\n- `a.py` — old\n"
    )
    out = resources.merge_entries(text, {"a.py": "new", "src/x.py": "the x"})
    assert out == text.replace("`a.py` — old", "`a.py` — new") + "- `src/x.py` — the x\n"
