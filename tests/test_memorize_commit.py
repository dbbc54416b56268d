"""memorize commit: validation, run commit, three-way merge, conflict copies, idempotence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from test_memorize_support import (
    EXAMPLES,
    clean_status,
    git,
    make_wiki,
    merges,
    payload,
    recall,
    run_branches,
    worktree_count,
    write,
)

from memwiki import memorize
from memwiki import recallfile as rfmod
from memwiki.git.conflicts import find_conflict_copies
from memwiki.memorize.validate import RunInvalid

SKILL = recall(
    "release-billing-service",
    "# Release the billing service\n\n## Steps\n1. Run the tests.\n2. Tag and push.\n",
    "How to cut and ship a release of the billing service",
    "tags: [release, billing]\n",
)
NOTES = recall("notes", "# Notes\n\nline one\nline two\nline three\n\n## Later\n\ntail\n")


def trailers(root: Path, rev: str) -> dict[str, str]:
    out = git(root, "log", "-1", "--format=%(trailers:only,unfold)", rev)
    return dict(line.split(": ", 1) for line in out.splitlines() if line)


def test_end_to_end_with_the_scripted_executor(tmp_path):
    wiki = make_wiki(tmp_path, {"skill/release-billing-service.md": SKILL})
    before = git(wiki.root, "rev-parse", "HEAD").strip()
    sessions = [EXAMPLES / "session-flaky-test.json", EXAMPLES / "session-release.json"]
    prepared = memorize.prepare(wiki, sessions)
    assert prepared.redactions == {"url-password": 1}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "executor.py"), prepared.executor_prompt],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "created billing-service-tests.md" in done.stdout
    assert memorize.status(wiki)[0].state == "edited"
    calls = []
    result = memorize.commit(wiki, prepared.run_id, reindex=lambda: calls.append(1))
    assert calls == [1]
    assert result.created == ["memory/billing-service-tests.md"]
    assert result.updated == ["skill/release-billing-service.md"]
    assert result.deleted == [] and result.conflicts == []
    # git log: the run's commit and the merge, both with trailers
    assert git(wiki.root, "rev-parse", "HEAD").strip() == result.commit
    parents = git(wiki.root, "rev-list", "--parents", "-1", "HEAD").split()[1:]
    assert parents == [before, result.run_commit]
    sessions_ids = ", ".join(t["source_id"] for t in prepared.transcripts)
    for rev in ("HEAD", "HEAD^2"):
        assert trailers(wiki.root, rev) == {
            "Memwiki-Run": prepared.run_id,
            "Memwiki-Sessions": sessions_ids,
        }
    subject = git(wiki.root, "log", "-1", "--format=%s", "HEAD^2")
    assert subject.startswith(f"memorize run {prepared.run_id}: ")
    body = git(wiki.root, "log", "-1", "--format=%b", "HEAD^2")
    assert "Created: memory/billing-service-tests.md" in body
    assert "Updated: skill/release-billing-service.md" in body
    # the files are in the wiki, valid, stamped, with their sources
    memory = rfmod.read(wiki.root / "memory" / "billing-service-tests.md", "memory")
    assert "uv run pytest" in memory.body and memory.created and memory.updated
    assert memory.sources == [prepared.transcripts[0]["source_id"]]
    skill = (wiki.root / "skill" / "release-billing-service.md").read_text()
    assert "changelog check failed" in skill and "tags: [release, billing]" in skill
    # the run is gone: no worktree, no branch, a clean wiki, a committed record
    assert clean_status(wiki.root) == ""
    assert run_branches(wiki.root) == [] and worktree_count(wiki.root) == 1
    assert not Path(prepared.workspace).exists()
    (st,) = memorize.status(wiki)
    assert (st.state, st.commit) == ("committed", result.commit)
    assert wiki.lint() == []
    git(wiki.root, "fsck", "--no-dangling")


def test_commit_twice_is_idempotent(tmp_path):
    wiki = make_wiki(tmp_path)
    prepared = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hi"])])
    write(Path(prepared.workspace), "memory/a.md", recall("a", "A.\n"))
    first = memorize.commit(wiki, prepared.run_id)
    second = memorize.commit(wiki, prepared.run_id)
    assert second.already_committed and not first.already_committed
    assert second.commit == first.commit and second.created == ["memory/a.md"]
    assert len(merges(wiki.root)) == 1


def test_nothing_changed_commits_nothing(tmp_path):
    wiki = make_wiki(tmp_path)
    head = git(wiki.root, "rev-parse", "HEAD")
    prepared = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hi"])])
    result = memorize.commit(wiki, prepared.run_id, reindex=lambda: pytest.fail("no reindex"))
    assert result.commit is None and result.created == result.updated == result.deleted == []
    assert git(wiki.root, "rev-parse", "HEAD") == head
    assert run_branches(wiki.root) == []
    assert memorize.status(wiki)[0].state == "committed"


def test_failing_reindex_is_a_warning(tmp_path):
    wiki = make_wiki(tmp_path)
    prepared = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hi"])])
    write(Path(prepared.workspace), "memory/a.md", recall("a", "A.\n"))

    def broken() -> None:
        raise RuntimeError("disk full")

    result = memorize.commit(wiki, prepared.run_id, reindex=broken)
    assert result.commit and "disk full" in result.warnings[0]


def test_two_runs_from_the_same_commit_editing_different_files_both_land(tmp_path):
    wiki = make_wiki(
        tmp_path, {"memory/a.md": recall("a", "A.\n"), "memory/b.md": recall("b", "B.\n")}
    )
    one = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    two = memorize.prepare(wiki, [payload(tmp_path, "2.json", ["two"])], run_id="two")
    write(Path(one.workspace), "memory/a.md", recall("a", "A, edited by run one.\n"))
    write(Path(two.workspace), "memory/b.md", recall("b", "B, edited by run two.\n"))
    r1 = memorize.commit(wiki, "one")
    r2 = memorize.commit(wiki, "two")
    assert r1.conflicts == r2.conflicts == []
    assert "edited by run one" in (wiki.root / "memory/a.md").read_text()
    assert "edited by run two" in (wiki.root / "memory/b.md").read_text()
    assert len(merges(wiki.root)) == 2 and clean_status(wiki.root) == ""


def test_two_runs_editing_different_sections_of_one_file_merge(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES})
    one = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    two = memorize.prepare(wiki, [payload(tmp_path, "2.json", ["two"])], run_id="two")
    write(Path(one.workspace), "memory/notes.md", NOTES.replace("line one", "line ONE"))
    write(Path(two.workspace), "memory/notes.md", NOTES.replace("tail", "TAIL"))
    memorize.commit(wiki, "one")
    r2 = memorize.commit(wiki, "two")
    # both runs stamped `updated:`; that alone must not make a conflict
    assert r2.conflicts == []
    text = (wiki.root / "memory/notes.md").read_text()
    assert "line ONE" in text and "TAIL" in text
    assert find_conflict_copies(wiki.root) == []


def test_two_runs_editing_the_same_lines_keep_both_versions(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES})
    one = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    two = memorize.prepare(wiki, [payload(tmp_path, "2.json", ["two"])], run_id="two")
    write(Path(one.workspace), "memory/notes.md", NOTES.replace("line two", "line two (one)"))
    write(Path(two.workspace), "memory/notes.md", NOTES.replace("line two", "line two (two)"))
    assert memorize.commit(wiki, "one").conflicts == []
    r2 = memorize.commit(wiki, "two")
    assert len(r2.conflicts) == 1
    conflict = r2.conflicts[0]
    assert conflict["path"] == "memory/notes.md" and conflict["kind"] == "both-modified"
    assert conflict["kept"] == "ours"
    copy = wiki.root / conflict["copy"]
    assert copy.name.startswith("notes.conflict-run-two-") and copy.suffix == ".md"
    assert "line two (one)" in (wiki.root / "memory/notes.md").read_text()
    copy_text = copy.read_text()
    assert "line two (two)" in copy_text
    assert f"name: {copy.stem}\n" in copy_text
    assert "conflict_of: memory/notes\nconflict_label: run-two\n" in copy_text
    assert "description: Notes about notes" in copy_text
    assert find_conflict_copies(wiki.root) == [copy]
    assert any(p.path == conflict["copy"] for p in wiki.lint())
    message = git(wiki.root, "log", "-1", "--format=%B")
    assert f"- memory/notes.md -> {conflict['copy']}" in message
    assert clean_status(wiki.root) == ""


def test_hand_edits_made_while_a_run_is_open_survive(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES, "memory/b.md": recall("b", "B.\n")})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    # in the wiki (Obsidian, uncommitted): edit one file, add another, edit the run's file
    write(wiki.root, "memory/b.md", recall("b", "B, edited by hand.\n"))
    write(wiki.root, "memory/fresh.md", recall("fresh", "Written by hand.\n"))
    write(wiki.root, "memory/notes.md", NOTES.replace("line two", "line two (hand)"))
    write(Path(run.workspace), "memory/notes.md", NOTES.replace("line two", "line two (run)"))
    write(Path(run.workspace), "memory/c.md", recall("c", "C from the run.\n"))
    result = memorize.commit(wiki, "one")
    assert "edited by hand" in (wiki.root / "memory/b.md").read_text()
    assert "Written by hand" in (wiki.root / "memory/fresh.md").read_text()
    assert "line two (hand)" in (wiki.root / "memory/notes.md").read_text()
    assert "line two (run)" in (wiki.root / result.conflicts[0]["copy"]).read_text()
    assert (wiki.root / "memory/c.md").is_file()
    # the hand edits became their own commit, the merge's first parent
    hand = git(wiki.root, "log", "-1", "--format=%s", "HEAD^1")
    assert "fresh" in hand and clean_status(wiki.root) == ""


def test_run_deleting_a_file_the_wiki_changed_keeps_the_change(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/a.md": recall("a", "A.\n")})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    (Path(run.workspace) / "memory/a.md").unlink()
    write(wiki.root, "memory/a.md", recall("a", "A, improved by hand.\n"))
    result = memorize.commit(wiki, "one")
    assert result.deleted == ["memory/a.md"]
    assert result.conflicts == [
        {
            "path": "memory/a.md",
            "kind": "deleted-by-theirs",
            "kept": "ours",
            "copy": None,
            "other_name": None,
        }
    ]
    assert "improved by hand" in (wiki.root / "memory/a.md").read_text()


def test_a_note_in_a_subfolder_may_be_edited_by_the_run_where_it_is(tmp_path):
    """Found by the vault audit: retrieve hands the executor memory/work/deploys.md, and a
    run improving it was refused, "outside the tracks". New notes still go to the top."""
    wiki = make_wiki(tmp_path, {"memory/work/deploys.md": recall("deploys", "Argo CD.\n")})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    ws = Path(run.workspace)
    write(ws, "memory/work/deploys.md", recall("deploys", "Argo CD; production by a PR.\n"))
    result = memorize.commit(wiki, "one")
    assert result.updated == ["memory/work/deploys.md"]
    assert "production by a PR" in (wiki.root / "memory/work/deploys.md").read_text()


def test_invalid_files_are_refused_with_every_problem_then_a_retry_succeeds(tmp_path):
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    ws = Path(run.workspace)
    write(ws, "memory/no-frontmatter.md", "Just text, no frontmatter.\n")
    write(ws, "memory/wrong-name.md", recall("other-name", "Body.\n"))
    write(ws, "memory/broken-yaml.md", "---\nname: broken-yaml\ndescription: [oops\n---\nx\n")
    write(ws, "notes/outside.md", recall("outside", "Body.\n"))
    write(ws, "skill/nested/deep.md", recall("deep", "Body.\n"))
    write(ws, "README.md", "changed by the executor\n")
    head = git(wiki.root, "rev-parse", "HEAD")
    with pytest.raises(RunInvalid) as exc:
        memorize.commit(wiki, "one")
    assert exc.value.exit_code == 2 and "\n" not in exc.value.message
    flagged = {p.path for p in exc.value.problems}
    assert flagged == {
        "memory/no-frontmatter.md",
        "memory/wrong-name.md",
        "memory/broken-yaml.md",
        "notes/outside.md",
        "skill/nested/deep.md",
        "README.md",
    }
    assert "6 problems" in exc.value.message and "does not match the file name" in exc.value.message
    assert "outside the tracks" in exc.value.message
    # nothing moved; the run is kept for the retry
    assert git(wiki.root, "rev-parse", "HEAD") == head
    assert memorize.status(wiki)[0].state == "edited"
    # fix every file and retry
    git(ws, "checkout", "--", "README.md")
    for rel in ("notes/outside.md", "skill/nested/deep.md"):
        (ws / rel).unlink()
    write(ws, "memory/no-frontmatter.md", recall("no-frontmatter", "Fixed.\n"))
    write(ws, "memory/wrong-name.md", recall("wrong-name", "Fixed.\n"))
    write(ws, "memory/broken-yaml.md", recall("broken-yaml", "Fixed.\n"))
    result = memorize.commit(wiki, "one")
    assert result.created == [
        "memory/broken-yaml.md", "memory/no-frontmatter.md", "memory/wrong-name.md",
    ]  # fmt: skip
    assert wiki.lint() == [] and len(merges(wiki.root)) == 1


def test_executor_commits_in_the_workspace_still_count(tmp_path):
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    ws = Path(run.workspace)
    write(ws, "memory/a.md", recall("a", "A.\n"))
    git(ws, "add", "-A")
    git(ws, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "executor commit")
    write(ws, "notes/bad.md", "x\n")
    assert memorize.status(wiki)[0].changed == ["memory/a.md", "notes/bad.md"]
    with pytest.raises(RunInvalid, match="notes/bad.md"):
        memorize.commit(wiki, "one")
    (ws / "notes/bad.md").unlink()
    assert memorize.commit(wiki, "one").created == ["memory/a.md"]


def test_retrieve_finds_what_a_run_committed(tmp_path):
    from memwiki.index.indexer import Index

    wiki = make_wiki(tmp_path, {"skill/release-billing-service.md": SKILL})
    quiet = Index(wiki, notify=lambda _: None)
    quiet.update(need_vectors=False)
    prepared = memorize.prepare(wiki, [EXAMPLES / "session-flaky-test.json"])
    subprocess.run(
        [sys.executable, str(EXAMPLES / "executor.py"), prepared.executor_prompt], check=True
    )
    memorize.commit(wiki, prepared.run_id, reindex=lambda: quiet.update(need_vectors=False))
    found = wiki.retrieve("pytest-randomly fixtures global state", mode="bm25", k=3)
    assert found.paths()[0] == "memory/billing-service-tests.md"


def test_a_file_written_during_the_merge_is_never_overwritten(tmp_path):
    """The save makes the checkout refuse; it is committed and the merge made again."""
    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/notes.md", NOTES.replace("line two", "line two (run)"))
    saves = []

    def obsidian_saves(name: str) -> None:
        if name == "merge-made" and not saves:  # a person saves the file before the checkout
            write(wiki.root, "memory/notes.md", NOTES.replace("tail", "tail (hand)"))
            saves.append(name)

    result = memorize.commit(wiki, "one", _checkpoint=obsidian_saves)
    text = (wiki.root / "memory/notes.md").read_text()
    assert saves and "tail (hand)" in text and "line two (run)" in text
    assert result.conflicts == [] and not result.already_committed
    assert len(merges(wiki.root)) == 1 and clean_status(wiki.root) == ""


def test_an_editor_saving_at_every_try_ends_the_commit_with_nothing_lost(tmp_path):
    from memwiki.git import update

    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES})
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/notes.md", NOTES.replace("line two", "line two (run)"))
    saves = []

    def obsidian_saves(name: str) -> None:
        if name == "merge-made":
            saves.append(name)
            write(wiki.root, "memory/notes.md", NOTES.replace("tail", f"tail (hand {len(saves)})"))

    with pytest.raises(update.CheckoutRefused, match="run commit again"):
        memorize.commit(wiki, "one", _checkpoint=obsidian_saves)
    assert len(saves) == update.MAX_EDIT_RETRIES + 1  # bounded
    assert f"tail (hand {len(saves)})" in (wiki.root / "memory/notes.md").read_text()
    result = memorize.commit(wiki, "one")  # run again: the last save and the run both land
    text = (wiki.root / "memory/notes.md").read_text()
    assert f"tail (hand {len(saves)})" in text and "line two (run)" in text
    assert result.conflicts == [] and clean_status(wiki.root) == ""


def test_symlinks_are_refused(tmp_path):
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    (Path(run.workspace) / "memory" / "link.md").symlink_to("/etc/hostname")
    with pytest.raises(RunInvalid, match="memory/link.md:1: symbolic links are refused"):
        memorize.commit(wiki, "one")


def test_two_commits_racing_in_two_processes_both_land(tmp_path):
    wiki = make_wiki(tmp_path, {"memory/notes.md": NOTES})
    for rid in ("one", "two"):
        run = memorize.prepare(wiki, [payload(tmp_path, f"{rid}.json", [rid])], run_id=rid)
        write(Path(run.workspace), f"memory/{rid}.md", recall(rid, f"From run {rid}.\n"))
    script = (
        "import sys; from pathlib import Path; from memwiki import memorize; "
        "from memwiki.wiki import Wiki; "
        "print(memorize.commit(Wiki.open(Path(sys.argv[1])), sys.argv[2]).commit)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(wiki.root), rid], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for rid in ("one", "two")
    ]  # fmt: skip
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert (wiki.root / "memory/one.md").is_file() and (wiki.root / "memory/two.md").is_file()
    assert len(merges(wiki.root)) == 2 and clean_status(wiki.root) == ""
    assert [s.state for s in memorize.status(wiki)] == ["committed", "committed"]


def test_a_secret_the_executor_writes_is_refused_and_a_hand_put_one_kept(tmp_path):
    # Transcripts are scrubbed, but an executor can read a key elsewhere and write it down;
    # commit used to put it into git, where every clone keeps it.
    wifi = recall("wifi", "The office wifi password is Kaffee2024!xyz\n")
    wiki = make_wiki(tmp_path, {"memory/wifi.md": wifi})
    prepared = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["set up CI"])])
    ws = Path(prepared.workspace)
    key, secret = "AKIAZ7QW3ERT5YUI9OPL", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEYq"
    leaky = recall("aws-ci", f"CI uses {key}.\n\naws_secret_access_key = {secret}\n")
    write(ws, "memory/aws-ci.md", leaky)
    write(ws, "memory/wifi.md", wifi + "\nGuest network: guest.\n")
    head = git(wiki.root, "rev-parse", "HEAD")
    with pytest.raises(RunInvalid) as err:
        memorize.commit(wiki, prepared.run_id)
    found = [(p.path, p.line, p.message.split(":")[0]) for p in err.value.problems]
    assert found == [
        ("memory/aws-ci.md", 5, "looks like a secret (aws-access-key)"),
        ("memory/aws-ci.md", 7, "looks like a secret (secret-assignment)"),
    ]
    assert key not in err.value.message and secret not in err.value.message
    assert git(wiki.root, "rev-parse", "HEAD") == head
    assert key not in git(wiki.root, "log", "--all", "-p")
    # Not even as an unreferenced object: every copy of .git would carry it for weeks.
    assert pygit2.hash(leaky.encode()) not in wiki.repo.odb
    write(ws, "memory/aws-ci.md", recall("aws-ci", "CI uses [REDACTED:aws-access-key].\n"))
    result = memorize.commit(wiki, prepared.run_id)
    assert result.created == ["memory/aws-ci.md"] and result.updated == ["memory/wifi.md"]
    assert "Kaffee2024!xyz" in (wiki.root / "memory" / "wifi.md").read_text(encoding="utf-8")


def test_a_new_note_named_as_a_windows_device_is_refused(tmp_path):
    """Git for Windows cannot check out memory/con.md: the run names it and stays open."""
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    write(Path(run.workspace), "memory/con.md", recall("con", "Console notes.\n"))
    with pytest.raises(RunInvalid, match="memory/con.md:1: name 'con' is a device name Windows"):
        memorize.commit(wiki, "one")
    assert not (wiki.root / "memory/con.md").exists()


def test_each_changed_note_is_scanned_for_secrets_once(tmp_path, monkeypatch):
    # The scan before staging (workspace_secrets) and check() after it both scanned every
    # note the executor left in the work tree: 100 scans for 50 notes, most of a commit's
    # validation time. A note the executor committed itself is only seen by check().
    from memwiki.memorize import validate

    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "1.json", ["one"])], run_id="one")
    ws = Path(run.workspace)
    key = "AKIAZ7QW3ERT5YUI9OPL"
    write(ws, "memory/committed.md", recall("committed", f"CI uses {key}.\n"))
    git(ws, "add", "-A")
    git(ws, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "executor commit")
    write(ws, "memory/a.md", recall("a", "Alpha.\n"))
    write(ws, "memory/b.md", recall("b", "Beta.\n"))
    scanned: list[str] = []
    real = validate.find_spans
    monkeypatch.setattr(
        validate, "find_spans", lambda text, *a, **k: scanned.append(text) or real(text, *a, **k)
    )
    with pytest.raises(RunInvalid, match=r"memory/committed.md:5: looks like a secret"):
        memorize.commit(wiki, "one")
    assert sorted(t.split("\n")[1] for t in scanned) == [
        "name: a", "name: b", "name: committed",
    ]  # fmt: skip
    write(ws, "memory/committed.md", recall("committed", "CI uses [REDACTED:aws-access-key].\n"))
    scanned.clear()
    assert memorize.commit(wiki, "one").created == [
        "memory/a.md",
        "memory/b.md",
        "memory/committed.md",
    ]
    assert len(scanned) == 3
