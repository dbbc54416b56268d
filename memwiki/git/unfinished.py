"""What git operation a person left in progress (a merge, a rebase, a bisect, conflicts in
the index), and how to end it: memwiki never commits or moves the branch then."""

from __future__ import annotations

import pygit2

from ..errors import StateError

_R = pygit2.enums.RepositoryState
# What git is in the middle of, and how the user finishes it: memwiki never commits or
# moves the branch then (it used to commit a half-done merge as a one-parent commit,
# leaving MERGE_HEAD behind, or fail with libgit2's "not fully merged index").
_UNFINISHED = {
    _R.MERGE: ("a merge", "fix the files, `git add` them and `git commit`, or `git merge --abort`"),
    _R.REVERT: ("a revert", "`git revert --continue` or `git revert --abort`"),
    _R.REVERT_SEQUENCE: ("a revert", "`git revert --continue` or `git revert --abort`"),
    _R.CHERRYPICK: ("a cherry-pick", "`git cherry-pick --continue` or `git cherry-pick --abort`"),
    _R.CHERRYPICK_SEQUENCE: (
        "a cherry-pick",
        "`git cherry-pick --continue` or `git cherry-pick --abort`",
    ),
    _R.BISECT: ("a bisect", "`git bisect reset`"),
    _R.REBASE: ("a rebase", "`git rebase --continue` or `git rebase --abort`"),
    _R.REBASE_INTERACTIVE: ("a rebase", "`git rebase --continue` or `git rebase --abort`"),
    _R.REBASE_MERGE: ("a rebase", "`git rebase --continue` or `git rebase --abort`"),
    _R.APPLY_MAILBOX: ("a `git am`", "`git am --continue` or `git am --abort`"),
    _R.APPLY_MAILBOX_OR_REBASE: ("a rebase", "`git rebase --continue` or `git rebase --abort`"),
}


def unfinished(repo: pygit2.Repository, index: pygit2.Index | None = None) -> str | None:
    """What git operation the user left in progress (and how to end it), or None."""
    found = _UNFINISHED.get(_R(repo.state()))
    if found is not None:
        return f"git has {found[0]} in progress: {found[1]}"
    if index is None:
        from .repo import read_index  # repo stages through refuse_unfinished

        index = read_index(repo, force=False)
    if index.conflicts is not None:
        paths = sorted({e.path for entries in index.conflicts for e in entries if e is not None})
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        return f"unresolved git conflicts in {shown}: fix them and `git add` them"
    return None


def refuse_unfinished(repo: pygit2.Repository, index: pygit2.Index | None = None) -> None:
    """Raise StateError while git has an operation in progress (see unfinished)."""
    problem = unfinished(repo, index)
    if problem is not None:
        raise StateError(f"{problem}; then run the memwiki command again")
