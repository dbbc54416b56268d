"""Paths in a teammate's commit that this device's git refuses to check out, left out.

git and libgit2 refuse a path with a `.git` component in any case or spelling (`.GIT/config`,
`.git./x`, `GIT~1/x`: each would write into the repository's own folder on some file
system) and `..` components. A commit holding one can still be made and pushed by other
tools (a script that writes trees, an old server). Found by the team audit: such a commit
on the remote made every later `memwiki sync` on every device fail with `git failed:
invalid path: '.GIT/config'` (exit 5), for good, because the merge could not even be
computed. The remote's commit is now merged through a commit of its own that removes
those paths (its message names them), so the branch, once pushed, is one every device
can check out; the removed files stay in the remote's history.
"""

from __future__ import annotations

import pygit2
from pygit2.enums import FileMode

from . import repo as gitstore
from .update import changed_files


def refused(repo: pygit2.Repository, ours: pygit2.Tree, theirs: pygit2.Tree) -> list[str]:
    """The paths theirs adds or changes (against ours) that libgit2 will not put in an index."""
    probe = pygit2.Index()
    found = []
    for path, how in changed_files(repo, ours, theirs).items():
        if how == "D":
            continue
        try:
            probe.add(pygit2.IndexEntry(path, theirs[path].id, FileMode.BLOB))
        except (pygit2.GitError, ValueError):
            found.append(path)
    return sorted(found)


def _without(repo: pygit2.Repository, tree: pygit2.Tree, parts: list[str]) -> pygit2.Oid:
    builder = repo.TreeBuilder(tree)
    name = parts[0]
    if name in tree:
        if len(parts) == 1:
            builder.remove(name)
        else:
            sub = _without(repo, repo[tree[name].id].peel(pygit2.Tree), parts[1:])
            if len(repo[sub].peel(pygit2.Tree)) == 0:
                builder.remove(name)
            else:
                builder.insert(name, sub, FileMode.TREE)
    return builder.write()


def left_out(
    repo: pygit2.Repository, ours: pygit2.Commit, theirs: pygit2.Commit
) -> tuple[pygit2.Commit, list[str]]:
    """theirs, or a commit on top of it without the paths this device cannot check out."""
    bad = refused(repo, ours.tree, theirs.tree)
    if not bad:
        return theirs, []
    tree = theirs.tree
    for path in bad:
        tree = repo[_without(repo, tree, path.split("/"))].peel(pygit2.Tree)
    sig = gitstore.signature(repo)
    message = "memwiki sync: leave out paths git refuses to check out\n\n" + "".join(
        f"Left out: {p}\n" for p in bad
    )
    oid = repo.create_commit(None, sig, sig, message, tree.id, [theirs.id])
    return repo[oid].peel(pygit2.Commit), bad
