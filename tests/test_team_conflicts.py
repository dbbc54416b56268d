"""Two teammates' conflicting changes to one note, each through `memwiki sync`: nothing is
lost, the copies are named, and the merge commit's message says what happened."""

from __future__ import annotations

from test_sync import clone_to, gitcli, read, recall, seeded_remote, write

from memwiki.config import load
from memwiki.git import sync as syncmod


def test_rename_rename_modify_delete_and_add_add_in_one_sync(tmp_path):
    remote, _ = seeded_remote(
        tmp_path,
        {
            "memory/r.md": recall("r", "Rename me.\n"),
            "memory/d.md": recall("d", "Delete or edit me.\n"),
        },
    )
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    (a.root / "memory/r.md").unlink()
    write(a.root, "memory/ra.md", recall("ra", "Rename me.\n"))
    (b.root / "memory/r.md").unlink()
    write(b.root, "memory/rb.md", recall("rb", "Rename me.\n"))
    (a.root / "memory/d.md").unlink()
    write(b.root, "memory/d.md", recall("d", "Edited by B.\n"))
    write(a.root, "memory/n.md", recall("n", "A's new note.\n"))
    write(b.root, "memory/n.md", recall("n", "B's new note.\n"))
    syncmod.sync(a, load())
    result = syncmod.sync(b, load())
    kinds = {c.path: (c.kind, c.kept, c.copy) for c in result.conflicts}
    assert kinds["memory/d.md"][:2] == ("deleted-by-theirs", "ours")
    assert kinds["memory/n.md"][0] == "both-added"
    assert kinds["memory/rb.md"][0] == "renamed-differently"
    rename_copy, add_copy = kinds["memory/rb.md"][2], kinds["memory/n.md"][2]
    syncmod.sync(a, load())
    for root in (a.root, b.root):
        assert read(root, "memory/d.md").endswith("Edited by B.\n")
        assert read(root, "memory/n.md").endswith("B's new note.\n")
        assert read(root, add_copy).endswith("A's new note.\n")
        assert (root / "memory/rb.md").is_file() and (root / rename_copy).is_file()
    message = gitcli(b.root, "log", "-1", "--format=%B")
    assert "- memory/d.md (deleted-by-theirs, kept ours)" in message
    assert f"- memory/n.md -> {add_copy}\n" in message
    named = "theirs named it memory/ra.md"
    assert f"- memory/rb.md -> {rename_copy} (renamed-differently; {named})" in message
    assert [c.other_name for c in result.conflicts if c.path == "memory/rb.md"] == ["memory/ra.md"]
    assert {c.other_name for c in result.conflicts if c.path != "memory/rb.md"} == {None}
