"""The Wiki library API against real files and a real git repository (pygit2 + git CLI)."""

from __future__ import annotations

import multiprocessing
import os
import re
import stat
import tempfile
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki.errors import InvalidInput, NotFound, StateError, StorageError
from memwiki.fsutil import atomic_write_bytes
from memwiki.recallfile import RecallFile, parse, render
from memwiki.wiki import Wiki

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def write_rf(root: Path, track: str, name: str, description: str = "d", sub: str = "") -> Path:
    """Write a valid RecallFile by hand, as a person or another tool would."""
    path = root / track / sub / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(RecallFile(track, name, description, body=f"# {name}\n")))
    return path


def head(wiki: Wiki) -> str:
    return str(wiki.repo.head.target)


def item(name: str, track: str = "memory", **more) -> dict:
    return {"track": track, "name": name, "description": f"About {name}", **more}


# ------------------------------------------------------------------ init


def test_init_creates_layout_and_first_commit(tmp_path, git) -> None:
    wiki, created = Wiki.init(tmp_path / "new" / "wiki")
    root = tmp_path / "new" / "wiki"
    assert created and wiki.root == root.resolve()
    assert (root / "memory").is_dir() and (root / "skill").is_dir()
    assert "/.memwiki/" in (root / ".gitignore").read_text().splitlines()
    assert (root / "README.md").read_text().startswith("# ")
    assert git(root, "log", "--format=%s").splitlines() == ["memwiki: initialise the wiki"]
    assert sorted(git(root, "ls-files").split()) == [
        ".gitignore",
        ".pre-commit-config.yaml",
        "README.md",
        "memory/.gitkeep",
        "skill/.gitkeep",
    ]
    assert git(root, "status", "--porcelain") == ""
    (root / ".memwiki" / "index").mkdir(parents=True)
    (root / ".memwiki" / "index" / "x").write_text("cache")
    assert git(root, "check-ignore", ".memwiki/index/x").strip() == ".memwiki/index/x"
    assert git(root, "status", "--porcelain") == ""


def test_reinit_changes_nothing(wiki, git) -> None:
    before = head(wiki)
    files = {
        p: p.read_bytes() for p in wiki.root.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    again, created = Wiki.init(wiki.root)
    assert not created
    assert head(again) == before
    after = {
        p: p.read_bytes() for p in wiki.root.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    assert after == files


def test_reinit_restores_a_missing_track_and_commits_only_that(wiki, git) -> None:
    git(wiki.root, "rm", "-q", "-r", "skill")
    git(wiki.root, "commit", "-q", "-m", "drop the skill track")
    (wiki.root / "README.md").write_text("my own edit in progress\n")
    _, created = Wiki.init(wiki.root)
    assert created
    assert git(wiki.root, "show", "--name-only", "--format=", "HEAD").split() == ["skill/.gitkeep"]
    assert git(wiki.root, "status", "--porcelain") == " M README.md\n"


def test_init_inside_a_repository_is_refused_unless_forced(tmp_path, git) -> None:
    outer = tmp_path / "project"
    outer.mkdir()
    git(outer, "init", "-q")
    with pytest.raises(StateError, match="inside the git repository"):
        Wiki.init(outer / "notes" / "wiki")
    # Nothing is left behind (a refused init used to create notes/wiki/).
    assert not (outer / "notes").exists()
    wiki, created = Wiki.init(outer / "notes" / "wiki", force=True)
    assert created and (wiki.root / ".git").is_dir()


def test_init_on_a_non_wiki_repository_keeps_its_work_uncommitted(tmp_path, git) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q")
    (proj / "a.txt").write_text("one\n")
    git(proj, "add", "a.txt")
    git(proj, "commit", "-qm", "first")
    (proj / "a.txt").write_text("one\nwork in progress\n")
    (proj / "notes.txt").write_text("untracked\n")
    with pytest.raises(StateError, match="not a memwiki wiki"):
        Wiki.init(proj)
    assert git(proj, "log", "--format=%s").split("\n")[0] == "first"
    Wiki.init(proj, force=True)
    committed = git(proj, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == [
        ".gitignore",
        ".pre-commit-config.yaml",
        "README.md",
        "memory/.gitkeep",
        "skill/.gitkeep",
    ]
    assert git(proj, "status", "--porcelain") == " M a.txt\n?? notes.txt\n"


def test_init_on_a_file_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(StorageError, match="cannot create"):
        Wiki.init(tmp_path / "f")


def test_open_without_a_wiki_says_how_to_make_one(tmp_path) -> None:
    with pytest.raises(NotFound, match="memwiki init"):
        Wiki.open(tmp_path / "nothing")


# ------------------------------------------------------- get / put / delete


def test_put_get_delete(wiki) -> None:
    rf = RecallFile("memory", "billing", "How billing works", body="# Billing\n", tags=["b"])
    assert wiki.put(rf) is True
    got = wiki.get("memory", "billing")
    assert (got.description, got.body, got.tags) == ("How billing works", "# Billing\n", ["b"])
    assert ISO_Z.match(got.created) and got.updated == got.created
    got.description = "How billing really works"
    assert wiki.put(got) is False
    assert wiki.get("memory", "billing").description == "How billing really works"
    wiki.delete("memory", "billing")
    assert not (wiki.root / "memory" / "billing.md").exists()
    with pytest.raises(NotFound):
        wiki.get("memory", "billing")
    with pytest.raises(NotFound):
        wiki.delete("memory", "billing")


def test_stamps_created_kept_updated_bumped_only_on_change(wiki) -> None:
    path = wiki.root / "memory" / "x.md"
    path.write_text(
        "---\nname: x\ndescription: old\ncreated: 2020-01-01T00:00:00Z\n"
        "updated: 2020-01-02T00:00:00Z\n---\nbody\n"
    )
    rf = wiki.get("memory", "x")
    wiki.put(rf)  # identical content: nothing to stamp
    assert path.read_text().count("2020-01-02T00:00:00Z") == 1
    rf = wiki.get("memory", "x")
    rf.description = "new"
    wiki.put(rf)
    after = wiki.get("memory", "x")
    assert after.created == "2020-01-01T00:00:00Z"
    assert ISO_Z.match(after.updated) and after.updated > "2020-01-02T00:00:00Z"


def test_save_and_remove_commit(wiki, git) -> None:
    result = wiki.save(RecallFile("skill", "deploy", "Deploy the app", body="steps\n"))
    assert result.created == ["skill/deploy.md"] and result.commit == head(wiki)
    assert git(wiki.root, "ls-files", "skill").split() == ["skill/.gitkeep", "skill/deploy.md"]
    result = wiki.remove("skill", "deploy")
    assert result.deleted == ["skill/deploy.md"]
    assert git(wiki.root, "ls-files", "skill").split() == ["skill/.gitkeep"]
    assert git(wiki.root, "status", "--porcelain") == ""
    with pytest.raises(NotFound):
        wiki.remove("skill", "deploy")


def test_save_of_identical_content_makes_no_commit(wiki) -> None:
    wiki.save(RecallFile("memory", "a", "A"))
    before = head(wiki)
    result = wiki.save(wiki.get("memory", "a"))
    assert result.commit is None and head(wiki) == before


@pytest.mark.parametrize("name", ["../x", "/etc/x", "a/b", "..", "", "X", "a b", "x.md"])
def test_escaping_or_bad_names_are_refused(wiki, name) -> None:
    for call in (
        lambda: wiki.get("memory", name),
        lambda: wiki.put(RecallFile("memory", name, "d")),
        lambda: wiki.delete("memory", name),
        lambda: wiki.put(RecallFile(name, "ok", "d")),
    ):
        with pytest.raises(InvalidInput):
            call()
    assert not Path("/etc/x.md").exists()
    assert not (wiki.root.parent / "x.md").exists()


def test_symlinked_track_pointing_outside_is_refused_and_not_listed(wiki, tmp_path) -> None:
    outside = tmp_path / "outside"
    write_rf(outside, "t", "leak")
    (wiki.root / "linked").symlink_to(outside / "t")
    with pytest.raises(InvalidInput, match="outside the wiki"):
        wiki.get("linked", "leak")
    with pytest.raises(InvalidInput, match="outside the wiki"):
        wiki.put(RecallFile("linked", "new", "d"))
    assert not (outside / "t" / "new.md").exists()
    assert [e.name for e in wiki.list_recall_files().items] == []
    assert wiki.list_recall_files(track="linked").items == []


def test_symlinked_file_pointing_outside_is_refused(wiki, tmp_path) -> None:
    target = write_rf(tmp_path / "outside", "memory", "evil")
    before = target.read_bytes()
    (wiki.root / "memory" / "evil.md").symlink_to(target)
    with pytest.raises(InvalidInput, match="outside the wiki"):
        wiki.get("memory", "evil")
    with pytest.raises(InvalidInput, match="outside the wiki"):
        wiki.put(RecallFile("memory", "evil", "overwrite"))
    with pytest.raises(InvalidInput, match="outside the wiki"):
        wiki.delete("memory", "evil")
    assert target.read_bytes() == before
    assert wiki.list_recall_files().items == []


def test_symlink_inside_the_wiki_is_fine(wiki) -> None:
    write_rf(wiki.root, "memory", "real")
    (wiki.root / "alias").symlink_to(wiki.root / "memory")
    assert wiki.get("alias", "real").name == "real"


@pytest.mark.parametrize("track", ["../..", "/etc", ".git", "a/b"])
def test_list_refuses_a_track_that_is_not_a_folder_name(wiki, track) -> None:
    with pytest.raises(InvalidInput):
        wiki.list_recall_files(track=track)


# --------------------------------------------------------- commit_results


def test_commit_results_writes_all_and_makes_one_commit(wiki, git) -> None:
    before = git(wiki.root, "rev-list", "--count", "HEAD")
    result = wiki.commit_results(
        [item("alpha", content="# Alpha\nText"), item("beta", "skill", tags=["t"])],
        message="agent: learn two things\n",
    )
    assert result.created == ["memory/alpha.md", "skill/beta.md"]
    assert int(git(wiki.root, "rev-list", "--count", "HEAD")) == int(before) + 1
    assert git(wiki.root, "log", "-1", "--format=%s") == "agent: learn two things\n"
    assert git(wiki.root, "show", "--name-status", "--format=", "HEAD").split() == [
        "A",
        "memory/alpha.md",
        "A",
        "skill/beta.md",
    ]
    assert (wiki.root / "memory" / "alpha.md").read_text().endswith("---\n# Alpha\nText\n")
    assert git(wiki.root, "status", "--porcelain") == ""


def test_commit_results_default_message_names_the_files(wiki, git) -> None:
    wiki.commit_results([item("alpha")])
    wiki.commit_results([item("alpha", description="changed"), item("gamma")])
    assert git(wiki.root, "log", "-1", "--format=%s").strip() == (
        "memwiki: created memory/gamma; updated memory/alpha"
    )


BAD_ITEMS = [
    item("../x"),
    item("/etc/x"),
    item("a/b"),
    item("Bad"),
    item("ok", track="../.."),
    {"track": "memory", "name": "nodesc"},
    item("multi", description="one\ntwo"),
    item("extra", colour="red"),
    item("tags", tags="not-a-list"),
    item("content", content=5),
    item("stamp", created=5),  # found only when the rendered file is validated
    "not an object",
    item("first"),  # a duplicate of the valid item
]


@pytest.mark.parametrize("bad", BAD_ITEMS, ids=[str(i) for i in range(len(BAD_ITEMS))])
def test_commit_results_is_all_or_nothing(wiki, git, bad) -> None:
    before = head(wiki)
    with pytest.raises(InvalidInput, match=r"recall_files\[1\]|appears twice"):
        wiki.commit_results([item("first"), bad])
    assert head(wiki) == before
    assert not (wiki.root / "memory" / "first.md").exists()
    assert git(wiki.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_commit_results_leaves_hand_edits_out_of_its_commit(wiki, git) -> None:
    (wiki.root / "README.md").write_text("a person is still writing this\n")
    result = wiki.commit_results([item("alpha")])
    assert result.created == ["memory/alpha.md"] and result.updated == []
    assert git(wiki.root, "status", "--porcelain") == " M README.md\n"


def test_commit_results_needs_a_list(wiki) -> None:
    for bad in ([], None, {"name": "x"}):
        with pytest.raises(InvalidInput):
            wiki.commit_results(bad)


# --------------------------------------------------------------- listing


def test_list_pages_through_seven_files(wiki) -> None:
    names = [f"n{i}" for i in range(7)]
    for n in names[:4]:
        write_rf(wiki.root, "memory", n)
    for n in names[4:]:
        write_rf(wiki.root, "skill", n)
    seen, cursor, pages = [], None, 0
    while True:
        page = wiki.list_recall_files(cursor=cursor, limit=2)
        pages += 1
        seen += [(e.track, e.name) for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 4
    assert seen == [("memory", n) for n in names[:4]] + [("skill", n) for n in names[4:]]
    assert [e.name for e in wiki.list_recall_files(track="skill").items] == names[4:]


def test_list_keeps_files_with_one_stem_in_nested_folders_apart(wiki) -> None:
    write_rf(wiki.root, "memory", "x", sub="a")
    write_rf(wiki.root, "memory", "x", sub="b")
    paths, cursor = [], None
    for _ in range(3):
        page = wiki.list_recall_files(cursor=cursor, limit=1)
        paths += [e.path for e in page.items]
        cursor = page.next_cursor
        if not cursor:
            break
    assert paths == ["memory/a/x.md", "memory/b/x.md"]


def test_list_skips_and_reports_malformed_files(wiki) -> None:
    write_rf(wiki.root, "memory", "good")
    (wiki.root / "memory" / "broken.md").write_text("---\nname: broken\ndescription: [x\n---\n")
    (wiki.root / "memory" / "latin.md").write_bytes(
        b"---\nname: latin\ndescription: d\n---\ncaf\xe9\n"
    )
    page = wiki.list_recall_files()
    assert [e.name for e in page.items] == ["good"]
    assert sorted((p.path, p.line) for p in page.skipped) == [
        ("memory/broken.md", 3),
        ("memory/latin.md", 5),
    ]


def test_list_reports_each_malformed_file_once_across_pages(wiki) -> None:
    for n in ("a", "c", "e"):
        write_rf(wiki.root, "memory", n)
    for n in ("b", "d"):
        (wiki.root / "memory" / f"{n}.md").write_text("no frontmatter\n")
    skipped, names, cursor = [], [], None
    while True:
        page = wiki.list_recall_files(cursor=cursor, limit=1)
        names += [e.name for e in page.items]
        skipped += [p.path for p in page.skipped]
        if not (cursor := page.next_cursor):
            break
    assert names == ["a", "c", "e"]
    assert skipped == ["memory/b.md", "memory/d.md"]


def test_list_rejects_bad_cursor_and_limit(wiki) -> None:
    with pytest.raises(InvalidInput, match="invalid cursor"):
        wiki.list_recall_files(cursor="not-a-cursor")
    with pytest.raises(InvalidInput, match="limit"):
        wiki.list_recall_files(limit=0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    initial=st.sets(st.from_regex(r"[a-z]{1,3}", fullmatch=True), min_size=7, max_size=7),
    inserts=st.lists(
        st.lists(st.from_regex(r"[a-z]{1,3}", fullmatch=True), max_size=3), min_size=4, max_size=4
    ),
    limit=st.integers(1, 3),
)
def test_paging_has_no_gaps_or_repeats_while_files_are_added(initial, inserts, limit) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wiki, _ = Wiki.init(Path(tmp) / "w")
        for n in initial:
            write_rf(wiki.root, "memory", n)
        present = set(initial)
        must_see = set(initial)
        seen: list[str] = []
        cursor = None
        for step in range(50):
            page = wiki.list_recall_files(track="memory", cursor=cursor, limit=limit)
            assert len(page.items) <= limit
            seen += [e.name for e in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
            for n in inserts[step % len(inserts)] if step < len(inserts) else []:
                if n not in present:
                    write_rf(wiki.root, "memory", n)
                    present.add(n)
                    # A file added after the last name returned must still be reached.
                    if n > seen[-1]:
                        must_see.add(n)
        assert seen == sorted(set(seen)), "pages must be in order, without repeats"
        assert must_see <= set(seen) <= present


# ------------------------------------------------------------ commit / log


def test_commit_picks_up_hand_edits_and_names_them(wiki, git) -> None:
    wiki.commit_results([item("keep"), item("edit"), item("gone")])
    edited = wiki.root / "memory" / "edit.md"
    # An editor saves by writing a new file and renaming it over the old one.
    tmp = edited.with_name(".edit.md.swp")
    tmp.write_text(edited.read_text().replace("About edit", "Edited by hand"))
    os.replace(tmp, edited)
    (wiki.root / "memory" / "gone.md").unlink()
    write_rf(wiki.root, "skill", "fresh", sub="deep/er")
    result = wiki.commit()
    assert result.created == ["skill/deep/er/fresh.md"]
    assert result.updated == ["memory/edit.md"]
    assert result.deleted == ["memory/gone.md"]
    # The subject would pass 72 characters, so it counts and the body names every file.
    assert git(wiki.root, "log", "-1", "--format=%B").strip().splitlines() == [
        "memwiki: created 1, updated 1, deleted 1",
        "",
        "Created: skill/deep/er/fresh",
        "Updated: memory/edit",
        "Deleted: memory/gone",
    ]
    assert git(wiki.root, "status", "--porcelain") == ""
    assert wiki.commit().commit is None


def test_commit_with_a_message_and_a_long_default(wiki, git) -> None:
    for i in range(12):
        write_rf(wiki.root, "memory", f"a-rather-long-file-name-{i}")
    wiki.commit()
    body = git(wiki.root, "log", "-1", "--format=%B")
    assert body.splitlines()[0] == "memwiki: created 12"
    assert "Created: memory/a-rather-long-file-name-11" in body
    write_rf(wiki.root, "memory", "z")
    assert wiki.commit("by hand\n").commit == git(wiki.root, "rev-parse", "HEAD").strip()
    assert git(wiki.root, "log", "-1", "--format=%s") == "by hand\n"


def test_log_of_the_wiki_and_of_one_file(wiki, git) -> None:
    wiki.commit_results([item("a")])
    wiki.commit_results([item("b")])
    wiki.commit_results([item("a", description="again")])
    entries = wiki.log()
    assert [e.commit for e in entries] == git(wiki.root, "log", "--format=%H").split()
    assert entries[-1].message == "memwiki: initialise the wiki"
    assert {c.status for c in entries[-1].changes} == {"created"}
    only_a = wiki.log("memory", "a")
    assert [e.commit for e in only_a] == git(
        wiki.root, "log", "--format=%H", "--", "memory/a.md"
    ).split()
    assert [c.status for e in only_a for c in e.changes] == ["updated", "created"]
    assert len(wiki.log(limit=2)) == 2
    assert wiki.log("memory", "never") == []
    with pytest.raises(InvalidInput):
        wiki.log("memory", "../a")


# --------------------------------------------------------- atomic writes


def test_writes_leave_no_temp_files_and_keep_modes(wiki) -> None:
    for i in range(5):
        wiki.commit_results([item("a", description=f"v{i}"), item(f"b{i}")])
    leftovers = [p for p in wiki.root.rglob("*.tmp") if ".git" not in p.parts]
    assert leftovers == []
    umask = os.umask(0)
    os.umask(umask)
    path = wiki.root / "memory" / "a.md"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o640)
    wiki.commit_results([item("a", description="mode stays")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temp(tmp_path) -> None:
    path = tmp_path / "f.md"
    path.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.md"]


# ----------------------------------------------------------- concurrency


def _writer(root: str, prefix: str, barrier, rounds: int) -> None:
    wiki = Wiki.open(Path(root))
    barrier.wait()
    for i in range(rounds):
        wiki.commit_results(
            [item(f"{prefix}-{i}"), item("shared", description=f"{prefix} {i}")],
            message=f"{prefix} {i}\n",
        )


def test_two_processes_committing_at_once_both_land(wiki, git) -> None:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    rounds = 4
    procs = [ctx.Process(target=_writer, args=(str(wiki.root), p, barrier, rounds)) for p in "xy"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    subjects = git(wiki.root, "log", "--format=%s").splitlines()
    assert sorted(s for s in subjects if s[0] in "xy") == sorted(
        f"{p} {i}" for p in "xy" for i in range(rounds)
    )
    assert git(wiki.root, "status", "--porcelain") == ""
    git(wiki.root, "fsck", "--strict")
    for p in "xy":
        for i in range(rounds):
            parse((wiki.root / "memory" / f"{p}-{i}.md").read_bytes(), "memory", f"{p}-{i}")
    assert len(pygit2.Repository(str(wiki.root)).head.peel().parents) == 1


# --------------------------------------------------------- iter_paths

_names = st.sampled_from(
    ["a", "a.md", "b.md", ".hid", ".hid.md", "a-b.md", "a b.md", "Z.md", "é.md"]
)


def _rglob_paths(wiki: Wiki) -> list[tuple[str, Path]]:
    """The behaviour iter_paths had with Path.rglob, kept as the reference."""
    out = []
    root_real = wiki.root.resolve()
    for top in sorted(p.name for p in wiki.root.iterdir() if p.is_dir()):
        if top.startswith("."):
            continue
        if not (wiki.root / top).resolve().is_relative_to(root_real):
            continue
        for path in sorted((wiki.root / top).rglob("*.md")):
            rel = path.relative_to(wiki.root)
            if any(part.startswith(".") for part in rel.parts) or path.is_dir():
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(root_real):
                continue
            out.append((top, path))
    return out


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tree=st.lists(
        st.tuples(
            st.lists(_names, min_size=1, max_size=3), st.sampled_from(["file", "dir", "in", "out"])
        ),
        max_size=12,
    )
)
def test_iter_paths_lists_what_rglob_listed_in_the_same_order(tmp_path_factory, tree) -> None:
    # Files, folders named like notes, dot entries and symlinks (inside and outside the
    # wiki), nested: the scandir walk yields exactly rglob's files, in sorted() order.
    base = tmp_path_factory.mktemp("iter")
    wiki, _ = Wiki.init(base / "w")
    outside = base / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("x")
    for parts, kind in tree:
        path = wiki.root / "memory" / Path(*parts)
        if path.exists() or path.is_symlink() or any(p.is_file() for p in path.parents):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            path.write_text("x")
        elif kind == "dir":
            path.mkdir()
        elif kind == "in":
            path.symlink_to(wiki.root / "README.md")
        else:
            path.symlink_to(outside / "x.md")
    assert list(wiki.iter_paths()) == _rglob_paths(wiki)


def test_a_note_in_a_subfolder_of_its_track_is_found_by_its_name(tmp_path, cli) -> None:
    """Bug: a note moved into a subfolder was listed and retrieved, but `show`, `rm`,
    `links` and `log` said it did not exist, and `add` of its name made a duplicate at
    the top of the track (which lint then reported)."""
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory/sub").mkdir()
    note = wiki.root / "memory/sub/sibling.md"
    note.write_text("---\nname: sibling\ndescription: d\n---\nbody\n")
    wiki.commit()
    code, out, err = cli("--wiki", wiki.root, "show", "memory/sibling")
    assert code == 0 and "body" in out, err
    assert cli("--wiki", wiki.root, "links", "memory/sibling")[0] == 0
    code, out, _ = cli("--wiki", wiki.root, "log", "memory/sibling")
    assert code == 0 and out.strip()
    code, _, err = cli("--wiki", wiki.root, "add", "memory", "sibling", "-d", "new", stdin="x\n")
    assert code == 0, err
    assert not (wiki.root / "memory/sibling.md").exists()
    assert "description: new" in note.read_text()
    assert cli("--wiki", wiki.root, "lint")[0] == 0
    assert cli("--wiki", wiki.root, "rm", "memory/sibling")[0] == 0
    assert not note.exists()
