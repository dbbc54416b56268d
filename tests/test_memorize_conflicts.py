"""The conflict-copy scheme on hand-built merges (pygit2), checked with the git CLI."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from test_memorize_support import git

from memwiki.errors import InvalidInput
from memwiki.git.conflicts import (
    conflict_copy_text,
    copy_path,
    find_conflict_copies,
    resolve_conflicts,
)

SIG = pygit2.Signature("t", "t@example.invalid")


def commit(repo: pygit2.Repository, parent, files: dict[str, bytes | None]) -> pygit2.Commit:
    """A commit on top of parent with files set (bytes) or removed (None); no ref moves."""
    index = pygit2.Index()
    if parent is not None:
        index.read_tree(parent.tree)
    for path, data in files.items():
        if data is None:
            index.remove(path)
        else:
            index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB))
    tree = index.write_tree(repo)
    parents = [parent.id] if parent is not None else []
    return repo[repo.create_commit(None, SIG, SIG, "c", tree, parents)]


def merged(tmp_path: Path, base: dict, ours: dict, theirs: dict, label: str = "remote"):
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    b = commit(repo, None, base)
    o, t = commit(repo, b, ours), commit(repo, b, theirs)
    index = repo.merge_commits(o, t)
    tree_id, conflicts = resolve_conflicts(repo, index, label)
    tree = repo[tree_id]
    files = {}
    for entry in tree:
        if entry.type_str == "tree":
            for sub in repo[entry.id]:
                files[f"{entry.name}/{sub.name}"] = repo[sub.id].data
        else:
            files[entry.name] = repo[entry.id].data
    return repo, files, conflicts


DOC = b"---\nname: deploy\ndescription: How we deploy\naliases: [ship]  # kept as is\n---\n"


def test_both_modified_keeps_ours_and_copies_theirs(tmp_path):
    repo, files, conflicts = merged(
        tmp_path,
        {"memory/deploy.md": DOC + b"step 1\n"},
        {"memory/deploy.md": DOC + b"step 1 (ours)\n"},
        {"memory/deploy.md": DOC + b"step 1 (theirs)\n"},
    )
    (c,) = conflicts
    assert (c.path, c.kind, c.kept) == ("memory/deploy.md", "both-modified", "ours")
    theirs_blob = repo.create_blob(DOC + b"step 1 (theirs)\n")
    assert c.copy == f"memory/deploy.conflict-remote-{str(theirs_blob)[:7]}.md"
    assert files["memory/deploy.md"].endswith(b"step 1 (ours)\n")
    copy = files[c.copy].decode()
    stem = Path(c.copy).stem
    assert copy == (
        f"---\nname: {stem}\ndescription: How we deploy\naliases: [ship]  # kept as is\n"
        "conflict_of: memory/deploy\nconflict_label: remote\n---\nstep 1 (theirs)\n"
    )


def test_both_added_keeps_both(tmp_path):
    _, files, conflicts = merged(
        tmp_path, {"a.txt": b"a"}, {"skill/x.md": DOC + b"ours\n"}, {"skill/x.md": DOC + b"th\n"}
    )
    (c,) = conflicts
    assert c.kind == "both-added" and files["skill/x.md"].endswith(b"ours\n")
    assert files[c.copy].endswith(b"th\n")


@pytest.mark.parametrize("deleting", ["ours", "theirs"])
def test_delete_versus_modify_keeps_the_modified_version(tmp_path, deleting):
    change = {"memory/a.md": DOC + b"changed\n"}
    gone = {"memory/a.md": None}
    ours, theirs = (gone, change) if deleting == "ours" else (change, gone)
    _, files, conflicts = merged(tmp_path, {"memory/a.md": DOC + b"x\n"}, ours, theirs)
    (c,) = conflicts
    assert c.kind == f"deleted-by-{deleting}" and c.copy is None
    assert files["memory/a.md"].endswith(b"changed\n")


@pytest.mark.parametrize(
    ("ours", "theirs", "later"),
    [
        ("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "theirs"),
        # Bug: compared as text, ours (10:00 in UTC+1, 09:00 UTC) won over 09:30 UTC.
        ("2026-03-01T10:00:00+01:00", "2026-03-01T09:30:00Z", "theirs"),
        ("2026-03-01", "2026-03-01T08:00:00Z", "theirs"),  # a date is its midnight
        ("2026-03-01 23:00:00-05:00", "2026-03-02T01:00:00Z", "ours"),
        ("yesterday", "2026-03-01T00:00:00Z", "ours"),  # not a date: compared as text
    ],
)
def test_timestamp_only_conflicts_merge_with_the_later_stamp(tmp_path, ours, theirs, later):
    """Both sides stamped `updated:` and changed different lines: a clean merge keeping
    the later stamp, compared as instants."""

    def doc(stamp: str, body: str) -> bytes:
        return f"---\nname: n\ndescription: d\nupdated: {stamp}\n---\n{body}".encode()

    base_body = "a\nb\nc\nd\ne\nf\n"
    _, files, conflicts = merged(
        tmp_path,
        {"memory/n.md": doc("2026-01-01T00:00:00Z", base_body)},
        {"memory/n.md": doc(ours, base_body.replace("a", "A"))},
        {"memory/n.md": doc(theirs, base_body.replace("f", "F"))},
    )
    assert conflicts == []
    kept = ours if later == "ours" else theirs
    assert files["memory/n.md"] == doc(kept, "A\nb\nc\nd\ne\nF\n")


def test_binary_conflict_copy_keeps_bytes(tmp_path):
    _, files, conflicts = merged(
        tmp_path, {"img/p.png": b"\x89PNG0"}, {"img/p.png": b"\x89PNG1"}, {"img/p.png": b"\x89P2"}
    )
    (c,) = conflicts
    assert c.copy.startswith("img/p.conflict-remote-") and c.copy.endswith(".png")
    assert files[c.copy] == b"\x89P2" and files["img/p.png"] == b"\x89PNG1"


def test_copy_without_frontmatter_gets_one():
    out = conflict_copy_text(b"# Title\n", "t.conflict-remote-abc1234", "memory/t", "remote")
    assert out.decode() == (
        "---\nname: t.conflict-remote-abc1234\nconflict_of: memory/t\n"
        "conflict_label: remote\n---\n# Title\n"
    )


def test_labels_must_be_slugs(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "r"))
    with pytest.raises(InvalidInput):
        resolve_conflicts(repo, pygit2.Index(), "../x")


def test_find_conflict_copies_finds_them_anywhere_but_git_and_the_sidecar(tmp_path):
    for rel in [
        "memory/a.conflict-remote-abcdef1.md",
        "skill/b.conflict-run-20261102-101400-a1b2c3-0123456789ab.md",
        ".obsidian/c.conflict-remote-abcdef1.md",
        ".git/e.conflict-remote-abcdef1.md",
        ".memwiki/f.conflict-remote-abcdef1.md",
        "README.conflict-remote-abcdef1.md",
        "memory/plain.md",
        "memory/d.conflict-notalabel.md",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    found = [p.relative_to(tmp_path).as_posix() for p in find_conflict_copies(tmp_path)]
    assert found == [
        ".obsidian/c.conflict-remote-abcdef1.md",
        "README.conflict-remote-abcdef1.md",
        "memory/a.conflict-remote-abcdef1.md",
        "skill/b.conflict-run-20261102-101400-a1b2c3-0123456789ab.md",
    ]


def test_copy_path_shape():
    assert (
        copy_path("memory/x.md", "run-7", "0123456789abcdef")
        == "memory/x.conflict-run-7-0123456.md"
    )


def test_the_git_cli_reads_the_resolved_merge(tmp_path):
    repo, files, conflicts = merged(
        tmp_path,
        {"memory/deploy.md": DOC + b"1\n"},
        {"memory/deploy.md": DOC + b"2\n"},
        {"memory/deploy.md": DOC + b"3\n"},
    )
    assert git(tmp_path / "repo", "fsck", "--no-dangling") == ""
    assert len(conflicts) == 1 and len(files) == 2
