"""A repository git shares with a group (`git init --shared=group`): written as git would.

git gives what it writes in `.git/` the modes core.sharedRepository asks for, whatever the
umask; libgit2 ignores the setting. With the usual umask 022, a `memwiki add` by one member
of the group made `.git/objects/xx/` folders (0755) and `.git/logs/HEAD` (0644) the others
could not write, and their next commit failed.
"""

from __future__ import annotations

import os

import pygit2

from ..fsutil import current_umask
from ..owners import shared_umask


def as_git_shares(repo: pygit2.Repository) -> pygit2.Repository:
    """repo, with this process's umask opened as far as its core.sharedRepository asks.

    The process's, not a scoped one: libgit2 writes from many calls, and what else this
    process makes in the wiki (notes, the index) is shared with the same group anyway.
    """
    try:
        value = repo.config["core.sharedRepository"]
    except (KeyError, pygit2.GitError, ValueError):
        return repo  # the usual case: not shared
    os.umask(shared_umask(str(value), current_umask()))
    return repo
