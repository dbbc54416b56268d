"""memwiki sync (and the commands that commit) against what people do with plain git.

Each test is a situation found by running two devices against a real bare remote: a
file on one device where the other has a folder, a merge or rebase the user left half
done, a rename into an invalid file with an edit. Real repositories, the real git CLI.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.errors import StateError
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki

from test_sync import clone_to, gitcli, read, recall, seeded_remote, write


def _devices(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[Path, Wiki, Wiki]:
    remote, _ = seeded_remote(tmp_path, files or {"memory/cats.md": recall("cats", "Purr.\n")})
    return remote, clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")


@pytest.mark.parametrize("file_side", ["syncs-second", "syncs-first"])
def test_a_file_where_the_other_device_has_a_folder_is_kept_as_a_copy(tmp_path, file_side):
    """Bug: the file was dropped from the merge (and from disk) as "deleted-by-theirs"."""
    _, a, b = _devices(tmp_path)
    with_file, with_folder = (b, a) if file_side == "syncs-second" else (a, b)
    write(with_file.root, "notes", "the file's own text\n")
    write(with_folder.root, "notes/inner.txt", "inside the folder\n")
    first, second = (a, b)
    syncmod.sync(first, load())
    result = syncmod.sync(second, load())
    (conflict,) = result.conflicts
    assert conflict.kind == "file-and-folder" and conflict.path == "notes"
    assert conflict.copy is not None and conflict.copy.startswith("notes.conflict-remote-")
    syncmod.sync(first, load())
    for w in (a, b):
        assert read(w.root, "notes/inner.txt") == "inside the folder\n"
        assert read(w.root, conflict.copy) == "the file's own text\n"
        assert gitcli(w.root, "status", "--porcelain") == ""
    assert conflict.copy in syncmod.sync(b, load()).conflict_copies
