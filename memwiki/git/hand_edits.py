"""Hand edits, committed before a sync merges: every valid one, none that would be refused.

What is held back (another tool's copy, a nested repository, an invalid RecallFile, a file
the wiki's pre-commit hooks refuse, and the deleted half of a rename into one of these)
stays in the work tree, named with why, for a person to fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pygit2

from . import precommit, staged
from . import repo as gitstore
from .changes import Change
from .copies import held_back


@dataclass
class HandEdits:
    """What commit_hand_edits did."""

    held: list[dict] = field(default_factory=list)  # [{path, problem}]: not committed
    skip: set[str] = field(default_factory=set)  # held, and the deleted halves of renames
    committed: str | None = None  # the commit made, if any
    changes: list[Change] = field(default_factory=list)
    committed_invalid: list[dict] = field(default_factory=list)  # staged by hand; lint refuses


def commit_hand_edits(wiki, config) -> HandEdits:
    """Commit every valid hand edit of the work tree; say what is held back and why."""
    repo = wiki.repo
    # Hand edits become a commit that takes part in the merge: the checkout after it can
    # then never be refused by (or overwrite) them. Invalid RecallFiles stay out of it.
    # One read of the work tree serves every step (20,000 files: ~40 ms a read; there were
    # four): what is held back, checked, given to the hooks and staged is what it showed.
    # A file first changed after it waits for the next sync (nothing checked it), and the
    # SAFE checkout never overwrites it.
    status = gitstore.read_status(repo)
    pending = gitstore.pending_paths(repo, status)
    refused = held_back(repo, status)
    skip = {p["path"] for p in refused}
    invalid = invalid_notes(wiki.root, [p for p in pending if p not in skip])
    refused += [{"path": p, "problem": why} for p, why in invalid.items()]
    skip |= invalid.keys()
    # In a wiki with pre-commit installed, its hooks check what sync commits, as for `git commit`.
    others = [p for p in pending if p not in skip]
    refused += precommit.refused_by_hooks(wiki.root, others, config.child_env)
    held = {p["path"] for p in refused}
    out = HandEdits(held=refused, skip=held | renamed_from(repo, pending, held).keys())
    committed, changes = gitstore.commit_all(repo, None, skip=out.skip, status=status)
    if committed:
        out.committed, out.changes = committed, list(changes)
        # Invalid work-tree edits were held back above: an invalid file committed now is
        # one a person staged with `git add` (kept as staged, and said).
        out.committed_invalid = staged.rejected(
            repo, committed, [c.path for c in changes if c.status != "deleted"]
        )
    return out


def invalid_notes(root: Path, pending: Iterable[str]) -> dict[str, str]:
    """{path: its problems} for the changed RecallFiles memwiki's checks (lint, the
    pre-commit hook) would refuse."""
    from .. import recallfile as rfmod
    from ..layout import app_folders

    found = {}
    apps = app_folders(root)  # Obsidian's templates and daily notes: not RecallFiles
    for rel in pending:
        path = root / rel
        if not staged.is_note(root, rel, apps) or not path.is_file():
            continue
        _, problems = rfmod.try_read(path, PurePosixPath(rel).parts[0], rel)
        if problems:
            found[rel] = rfmod.problems_text(problems)
    return found


def renamed_from(repo: pygit2.Repository, pending: Iterable[str], held: Iterable[str]) -> dict:
    """{deleted path: the held-back file it looks renamed to (with or without edits, as git
    would see a rename)}: the other half of the rename stays uncommitted too.

    Bug it prevents: a file renamed into an invalid name *and edited* was matched by exact
    content only, so sync pushed the deletion of the old name and the other devices lost
    the note while the new file stayed uncommitted here.
    """
    head = gitstore.head_commit(repo)
    if head is None:
        return {}
    contents = {}
    for rel in held:
        try:
            contents[rel] = (Path(repo.workdir) / rel).read_bytes()
        except OSError:
            continue
    out = {}
    for rel in pending if contents else ():
        if (Path(repo.workdir) / rel).exists():
            continue
        try:
            old = repo[head.tree[rel].id]
        except KeyError:
            continue
        if not isinstance(old, pygit2.Blob):
            continue
        for new, data in contents.items():
            if gitstore.similarity(old, data) >= gitstore.RENAME_SIMILARITY:
                out[rel] = new
                break
    return out
