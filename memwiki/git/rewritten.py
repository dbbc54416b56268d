"""A remote branch whose history was rewritten (force-pushed): this device's own work replayed
on the new history, never the old history merged back into it.

A teammate removes a leaked secret from every commit (`git filter-repo`), amends or squashes
pushed commits, or resets the branch to an older commit, and force-pushes. A plain merge
of this device's branch (which still holds the old history) with the new one, and the push
of that merge, put every removed commit and file back on the remote: the secret included.

What this device had synced last is the newest value of the remote-tracking branch (before
this sync's fetch, else its reflog: a `git fetch` run by hand, or a sync that stopped after
its fetch) that the local branch contains. When the new remote branch does not contain it,
the remote dropped commits this device had: the changes made here since then (base -> ours)
are merged into the remote's tree, and committed on top of the remote's branch alone, with
the messages' `Memwiki-` trailers (which sessions were memorized) carried over. What the
remote removed stays removed unless this device edited it since; the old commits stay in
the local reflog, never pushed.
"""

from __future__ import annotations

from collections import deque

import pygit2

from ..errors import StorageError
from . import repo as gitstore
from .changes import merge_message
from .conflicts import Conflict, resolve_conflicts

# How many reflog entries of the tracking branch are read for what was synced last.
_REFLOG_LIMIT = 200
# How many replayed commits the message names one by one.
_NAMED = 20


def tracking_values(repo: pygit2.Repository, remote: str) -> dict[str, pygit2.Oid]:
    """{ref name: commit} of every remote-tracking branch of remote, before a fetch moves them."""
    prefix = f"refs/remotes/{remote}/"
    found = {}
    for name in repo.references:
        if name.startswith(prefix) and not name.endswith("/HEAD"):
            ref = repo.references.get(name)
            if ref is not None and isinstance(ref.target, pygit2.Oid):
                found[name] = ref.target
    return found


def _contains(repo: pygit2.Repository, commit: pygit2.Oid, other: pygit2.Oid) -> bool:
    return commit == other or repo.descendant_of(commit, other)


def last_synced(
    repo: pygit2.Repository, tracking: str, before: pygit2.Oid | None, ours: pygit2.Oid
) -> pygit2.Oid | None:
    """The newest value the remote branch had, as far as this device knows, that ours contains."""
    candidates = [before] if before is not None else []
    ref = repo.references.get(tracking)
    if ref is not None:
        try:
            for n, entry in enumerate(ref.log()):
                if n >= _REFLOG_LIMIT:
                    break
                candidates += [entry.oid_new, entry.oid_old]
        except (pygit2.GitError, KeyError, OSError):
            pass  # no reflog: the value before the fetch is all there is
    for oid in candidates:
        if oid is None or oid == pygit2.Oid(hex="0" * 40) or repo.get(oid) is None:
            continue
        try:
            if _contains(repo, ours, oid):
                return oid
        except pygit2.GitError:
            continue
    return None


def dropped(repo: pygit2.Repository, theirs: pygit2.Oid, base: pygit2.Oid | None) -> bool:
    """Whether the remote branch (theirs) no longer holds base, which this device synced."""
    return base is not None and not _contains(repo, theirs, base)


def _root(repo: pygit2.Repository, oid: pygit2.Oid) -> pygit2.Commit:
    """The first commit along first parents (only read when two histories share none)."""
    walker = repo.walk(oid)
    walker.simplify_first_parent()
    return deque(walker, maxlen=1)[0]


def _identity(commit: pygit2.Commit) -> tuple:
    return (commit.author.email, commit.author.time, commit.message)


def rewritten_from(repo: pygit2.Repository, theirs: pygit2.Oid, base: pygit2.Oid) -> bool:
    """Whether theirs is base's history rewritten rather than another repository's.

    A rewrite keeps a commit in common, or at least the first commit's author, time and
    message (`git filter-repo` and `git rebase --root` rewrite it but keep those); a
    remote replaced by an unrelated repository has neither. Merging that into this wiki,
    or replaying this device's work on it, would mix two wikis (or a code project into
    the wiki), so the caller refuses instead.
    """
    if repo.merge_base(theirs, base) is not None:
        return True
    return _identity(_root(repo, theirs)) == _identity(_root(repo, base))


def replay(
    repo: pygit2.Repository,
    ours: pygit2.Commit,
    theirs: pygit2.Commit,
    base: pygit2.Commit,
    label: str,
    where: str,
) -> tuple[pygit2.Oid, list[Conflict], int]:
    """This device's changes since base, on top of theirs: (commit, conflicts, commits replayed).

    theirs itself when nothing changed here since base.
    """
    walker = repo.walk(ours.id)
    walker.hide(base.id)
    mine = list(walker)
    if ours.tree.id == base.tree.id:
        return theirs.id, [], len(mine)
    index = repo.merge_trees(base.tree, ours.tree, theirs.tree)
    if index.conflicts is not None:
        tree, conflicts = resolve_conflicts(repo, index, label)
    else:
        tree, conflicts = index.write_tree(repo), []
    title = (
        f"memwiki sync: {where} was rewritten; this device's changes since "
        f"{str(base.id)[:12]} applied on top"
    )
    named = [f"- {c.message.splitlines()[0] if c.message else ''}" for c in mine[:_NAMED]]
    if len(mine) > _NAMED:
        named.append(f"- and {len(mine) - _NAMED} more")
    trailers = [
        line
        for c in reversed(mine)
        for line in (c.message or "").splitlines()
        if line.startswith("Memwiki-")
    ]
    body = "Replayed:\n" + "\n".join(named) + "\n"
    message = merge_message(title, [c.to_dict() for c in conflicts], body)
    if trailers:
        message = message.rstrip("\n") + "\n\n" + "\n".join(trailers) + "\n"
    sig = gitstore.signature(repo)
    try:
        oid = repo.create_commit(None, sig, sig, message, tree, [theirs.id])
    except (pygit2.GitError, OSError) as exc:
        raise StorageError(f"git commit failed: {exc}") from None
    return oid, conflicts, len(mine)
