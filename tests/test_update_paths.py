"""The checkouts of git/update.py name the changed paths exactly: a file name with glob
characters (`[draft] plan.md`, Obsidian users write such names) is a name, not a pattern."""

from __future__ import annotations

import pygit2
from test_sync import clone_to, gitcli, seeded_remote, write

from memwiki.config import load
from memwiki.git import sync as syncmod
from memwiki.git import update
from memwiki.wiki import Wiki

GLOB = "attachments/[draft] plan.txt"  # as a glob it also matches attachments/d plan.txt
OTHER = "attachments/d plan.txt"


def test_a_recovered_update_overwrites_only_its_own_files(tmp_path):
    """Bug: the recovery of a killed update checked out its paths with FORCE as glob
    patterns, so finishing an update of `[draft] plan.md` overwrote a person's uncommitted
    edit of `d plan.md`, a file the update never touched."""
    wiki, _ = Wiki.init(tmp_path / "w")
    write(wiki.root, GLOB, "draft one\n")
    write(wiki.root, OTHER, "kept\n")
    old = wiki.commit("old").commit
    write(wiki.root, GLOB, "draft two\n")
    new = wiki.commit("new").commit
    # A sync killed before its checkout wrote anything: the branch and the files are old.
    gitcli(wiki.root, "reset", "-q", "--hard", old)
    journal = update.journal_path(wiki.sidecar)
    update.record(journal, "refs/heads/main", pygit2.Oid(hex=old), pygit2.Oid(hex=new))
    write(wiki.root, OTHER, "a person's edit, not committed yet\n")
    assert update.recover(wiki.repo, journal)
    assert (wiki.root / GLOB).read_text() == "draft two\n"
    assert (wiki.root / OTHER).read_text() == "a person's edit, not committed yet\n"
    assert gitcli(wiki.root, "rev-parse", "HEAD").strip() == new


def test_a_pull_of_a_glob_named_note_updates_it_and_nothing_else(tmp_path):
    remote, seed = seeded_remote(tmp_path, {GLOB: "one\n", OTHER: "D.\n"})
    a = clone_to(remote, tmp_path / "a")
    write(seed.root, GLOB, "two\n")
    syncmod.sync(seed, load())
    result = syncmod.sync(a, load())
    assert result.merged == "fast-forward"
    assert (a.root / GLOB).read_text() == "two\n"
    assert (a.root / OTHER).read_text() == "D.\n"
    assert gitcli(a.root, "status", "--porcelain") == ""


def tree_of(repo: pygit2.Repository, files: dict[str, tuple[bytes, int]]) -> pygit2.Tree:
    index = pygit2.Index()
    for path, (data, mode) in files.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))
    return repo[index.write_tree(repo)]


def test_changed_files_lists_what_a_diff_of_the_two_trees_lists(tmp_path):
    """update.changed_files opens only folders that differ (libgit2's tree diff reads every
    entry: 12 ms at 20,000 files for one change, 0.7 ms this way); same paths as the diff,
    on random pairs of trees with edits, new and deleted folders, mode changes, links, and
    files replaced by folders and back."""
    import random

    repo = pygit2.init_repository(str(tmp_path / "r"))
    rng = random.Random(3)
    modes = [
        pygit2.GIT_FILEMODE_BLOB,
        pygit2.GIT_FILEMODE_BLOB_EXECUTABLE,
        pygit2.GIT_FILEMODE_LINK,
    ]
    names = ["a", "b", "c.md", "d e.md", "x"]

    def random_files() -> dict[str, tuple[bytes, int]]:
        files: dict[str, tuple[bytes, int]] = {}
        for _ in range(rng.randint(0, 12)):
            path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
            if any(
                p == path or p.startswith(path + "/") or path.startswith(p + "/") for p in files
            ):
                continue  # a path is a file or a folder, not both
            files[path] = (rng.choice([b"one", b"two"]), rng.choice(modes))
        return files

    compared = 0
    for _ in range(300):
        old_files = random_files()
        new_files = dict(old_files) if rng.random() < 0.7 else random_files()
        for path in list(new_files)[: rng.randint(0, 3)]:
            new_files[path] = (b"changed", new_files[path][1])
        old, new = tree_of(repo, old_files), tree_of(repo, new_files)
        deltas = list(repo.diff(old, new).deltas)
        listed = {p for d in deltas for p in (d.old_file.path, d.new_file.path)}
        deleted = {d.old_file.path for d in deltas if d.status_char() == "D"} - {
            d.new_file.path for d in deltas if d.status_char() == "A"
        }
        found = update.changed_files(repo, old, new)
        assert set(found) == listed, (old_files, new_files)
        assert {p for p, how in found.items() if how == "D"} == deleted
        compared += bool(listed)
    assert compared > 100
