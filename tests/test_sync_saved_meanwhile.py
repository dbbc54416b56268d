"""A person's editor saving a note while `memwiki sync` merges: the sync goes on.

The wiki lock keeps memwiki's own writers out, not an editor's autosave. A note saved
after sync read the work tree, on a path the remote changed too, made the SAFE checkout
refuse and the sync fail with exit 5 (the stress test of scheduled jobs and a person
saving notes found it on CI). Now that edit is committed and the merge made again.
"""

from __future__ import annotations

import pytest
from test_sync import clone_to, gitcli, read, recall, seeded_remote, write

from memwiki.config import load
from memwiki.errors import StorageError
from memwiki.git import sync as syncmod
from memwiki.git import update

SHARED = "memory/shared.md"


NOTES = [SHARED] + [f"memory/n{i}.md" for i in range(6)]


def _diverged(tmp_path):
    """Devices a and b of one remote; b has pushed edits of NOTES that a lacks."""
    remote, _ = seeded_remote(tmp_path, {p: recall(p[7:-3], "Seed.\n") for p in NOTES})
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    for rel in NOTES:
        write(b.root, rel, recall(rel[7:-3], "B's edit.\n"))
    assert syncmod.sync(b, load()).pushed
    return remote, a


def _saving(root, rels, text):
    """A checkpoint that saves the next of rels each time sync has committed hand edits."""
    saved: list[str] = []

    def checkpoint(step):
        if step == "committed" and len(saved) < len(rels):
            rel = rels[len(saved)]
            write(root, rel, recall(rel[7:-3], text))
            saved.append(rel)

    return checkpoint, saved


def test_a_note_saved_before_the_checkout_is_committed_and_merged(tmp_path):
    remote, a = _diverged(tmp_path)
    checkpoint, saved = _saving(a.root, [SHARED], "A person's save, mid-sync.\n")
    result = syncmod.sync(a, load(), _checkpoint=checkpoint)
    assert saved and result.pushed and result.merged == "merge"
    assert [c.path for c in result.changes] == [SHARED]  # the save, committed on the retry
    # Both edits are kept: one in the file, the other in a conflict copy, and both pushed.
    pushed = gitcli(remote, "ls-tree", "-r", "--name-only", "main").split()
    texts = [gitcli(remote, "show", f"main:{p}") for p in pushed if p.startswith("memory/shared")]
    assert any("A person's save" in t for t in texts) and any("B's edit" in t for t in texts)
    assert gitcli(a.root, "status", "--porcelain", "--", "memory") == ""


def test_an_editor_that_never_stops_saving_ends_the_sync_with_nothing_lost(tmp_path):
    _, a = _diverged(tmp_path)
    before = gitcli(a.root, "rev-parse", "HEAD")
    # Each try, the editor saves another note the remote changed: the sync gives up.
    checkpoint, saved = _saving(a.root, NOTES, "Saved again.\n")
    with pytest.raises(update.CheckoutRefused, match="kept being edited"):
        syncmod.sync(a, load(), _checkpoint=checkpoint)
    assert len(saved) == update.MAX_EDIT_RETRIES + 1  # bounded
    assert gitcli(a.root, "rev-parse", "HEAD") != before  # saves before the last: committed
    assert all("Saved again" in read(a.root, rel) for rel in saved)
    assert not (a.sidecar / update.JOURNAL).exists()
    result = syncmod.sync(a, load())  # the next sync finishes: every save kept
    assert result.pushed and gitcli(a.root, "status", "--porcelain", "--", "memory") == ""
    for rel in saved:
        texts = [
            read(a.root, p)
            for p in gitcli(a.root, "ls-files", "memory").split()
            if p.startswith(rel[:-3])
        ]
        assert any("Saved again" in t for t in texts), rel


def test_a_held_back_note_the_remote_changed_is_named_and_nothing_else(tmp_path):
    """Bug: every held-back file (an invalid note, a Dropbox copy) was named as the cause."""
    _, a = _diverged(tmp_path)
    write(a.root, SHARED, "---\nname: shared\n---\nNo description.\n")  # invalid here
    write(a.root, "memory/p (conflicted copy).md", recall("p", "Dropbox's.\n"))
    with pytest.raises(StorageError) as caught:
        syncmod.sync(a, load())
    message = str(caught.value)
    assert SHARED in message and "conflicted copy" not in message
    assert "No description" in read(a.root, SHARED)  # untouched
