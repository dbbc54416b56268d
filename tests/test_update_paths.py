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
