"""What libgit2 cannot read or refuses to open because of a developer's git set-up, said in
one line with what to run: a split index (core.splitIndex, also kept from coming back), a
repository another user owns (safe.directory), reftable refs or SHA-256 objects."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2

# The extension git writes when core.splitIndex is true (`git status` with it in
# ~/.gitconfig); libgit2 cannot read such an index and names the extension.
SPLIT_INDEX = "'link'"


def keep_index_readable(repo: pygit2.Repository) -> bool:
    """Set core.splitIndex = false in the wiki's own config when the developer's git config
    turns it on (libgit2 cannot read a split index); True if it was set."""
    try:
        if not repo.config.get_bool("core.splitIndex"):
            return False
        repo.config["core.splitIndex"] = False  # the repository's .git/config
    except (pygit2.GitError, KeyError, OSError):
        return False
    return True


def split_index_problem(repo: pygit2.Repository) -> str:
    """The one line for a git index in split form: what it is, what memwiki did, what to run."""
    root = repo.workdir.rstrip("/")
    keep_index_readable(repo)  # so git does not split it again once joined
    return (
        f"{root}: the git index is split (git's core.splitIndex), which memwiki's git library "
        f"cannot read; the wiki's .git/config now says core.splitIndex = false: run "
        f"`git -C {root} update-index --no-split-index` once, then the memwiki command again"
    )


def unreadable(path: Path, exc: Exception) -> str | None:
    """The line for a repository libgit2 refuses to open because of how git was set up, or
    None: it used to read "not a git repository", of a wiki that plainly is one."""
    said = str(exc)
    if "not owned by current user" in said:  # git's safe.directory (CVE-2022-24765)
        return (
            f"{path}: git refuses a repository another user owns; if it is yours to use: "
            f"`git config --global --add safe.directory {path}`"
        )
    if "extensions.refstorage" in said:  # init.defaultRefFormat = reftable (git 2.45+)
        return (
            f"{path}: its refs are in git's reftable format, which memwiki's git library "
            f"cannot read: `git -C {path} refs migrate --ref-format=files` converts them"
        )
    if "object format" in said:  # extensions.objectFormat = sha256
        return (
            f"{path}: it names objects with SHA-256, which memwiki's git library cannot "
            "read: a wiki needs a SHA-1 repository"
        )
    found = re.search(r"unsupported extension name (\S+)", said)
    if found:
        return f"{path}: it uses git's {found.group(1)}, which memwiki's git library cannot read"
    return None
