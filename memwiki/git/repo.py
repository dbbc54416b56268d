"""The git store: pygit2 helpers for committing, describing and reading wiki history."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2

from ..errors import StorageError, libgit2_refused
from ..fsutil import drop_stale_temp, is_temp_name
from ..owners import refused_text
from .changes import Change, Changes, classify, commit_message
from .gitlocks import MOVED, GitBusy, HeadMoved, retry_moved, wait_for_git
from .identity import signature
from .index_format import SPLIT_INDEX, split_index_problem, unreadable
from .shared import as_git_shares
from .unfinished import refuse_unfinished

SIDECAR_PREFIX = ".memwiki/"  # the sidecar: never committed, whatever .gitignore says


def open_repo(path: Path) -> pygit2.Repository:
    """Open the repository whose work tree is path."""
    try:
        return as_git_shares(pygit2.Repository(str(path)))
    except pygit2.GitError as exc:
        problem = unreadable(path, exc)
        raise StorageError(problem or f"{path}: not a git repository ({exc})") from None


def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """The commit HEAD points at, or None in an empty repository."""
    try:
        if repo.head_is_unborn:
            return None
        return repo.head.peel(pygit2.Commit)
    except pygit2.GitError as exc:
        # A damaged repository is a git failure (exit 5), not a bug in memwiki (exit 70).
        raise StorageError(f"{repo.workdir.rstrip('/')}: cannot read HEAD: {exc}") from None


def read_index(repo: pygit2.Repository, force: bool = True) -> pygit2.Index:
    """The repository's index as on disk; without force, read again only if the file changed
    (libgit2 compares its stamp and checksum) rather than parsed again (20,000 entries: 12 ms)."""
    try:
        index = repo.index
        index.read(force)
    except pygit2.GitError as exc:
        root = repo.workdir.rstrip("/")
        if SPLIT_INDEX in str(exc):
            raise StorageError(split_index_problem(repo)) from None
        raise StorageError(f"{root}: cannot read the git index: {exc}") from None
    return index


RENAME_SIMILARITY = 0.5  # git's own default for calling a delete and an add a rename


def similarity(old: pygit2.Blob, new: bytes) -> float:
    """The share of old's lines that new keeps (1.0: the same bytes), as renames are judged."""
    if old.data == new:
        return 1.0
    lines = old.data.count(b"\n") + (0 if old.data.endswith(b"\n") else 1)
    _, _, deleted = old.diff_to_buffer(new).line_stats
    return max(0, lines - deleted) / max(lines, new.count(b"\n") + 1)


def write_index(repo: pygit2.Repository, index: pygit2.Index) -> None:
    """index.write(), a failure (a full disk) as one line rather than an internal error."""
    try:
        index.write()
    except (pygit2.GitError, OSError) as exc:
        said = libgit2_refused(_one_line(exc))  # "failed to create locked file": refused
        if "locked" in said and "Permission denied" not in said:  # a git took index.lock
            raise GitBusy(said) from None
        raise StorageError(
            f"{repo.workdir.rstrip('/')}: cannot write the git index ({said}): "
            "the files are saved, not committed"
        ) from None


def is_private(path: str) -> bool:
    """Never committed: the sidecar, and the temporary file of a write killed before its
    rename (`memwiki commit` and sync committed it, half a file, as if a person made it)."""
    if path == SIDECAR_PREFIX.rstrip("/") or path.startswith(SIDECAR_PREFIX):
        return True
    return is_temp_name(path.rsplit("/", 1)[-1])


# A temporary file of atomic_write this old belongs to a write that was killed (a live one
# renames it within milliseconds): the next commit deletes it. Younger ones are left alone,
# since another process's write may be in flight (doctor names them meanwhile). abs: one
# dated in the future (a clock set back) stayed for ever.
def _drop_private(index: pygit2.Index) -> None:
    """Untrack anything under .memwiki/ that an old tool or a plain `git add -A` staged."""
    for path in [e.path for e in index if is_private(e.path)]:
        index.remove(path)


Status = dict[str, int]  # repo.status(): {path: GIT_STATUS_* flags}

_WT_CHANGED = (
    pygit2.GIT_STATUS_WT_NEW | pygit2.GIT_STATUS_WT_MODIFIED | pygit2.GIT_STATUS_WT_TYPECHANGE
)


def read_status(repo: pygit2.Repository, wait: bool = True) -> Status:
    """The work tree's status, read once (after any git command holding the index is done,
    unless not wait: a report such as doctor's never waits).

    A full scan of the work tree (20,000 files: about 40 ms); a caller that needs it for
    several steps passes this one read down instead of reading it again.
    """
    from .excludes import has_personal_excludes, notes_only_you_ignore

    if wait:
        wait_for_git(repo)
    personal = has_personal_excludes(repo)
    try:
        status = repo.status(ignored=personal)  # as fast: ignored folders are not entered
    except pygit2.GitError as exc:
        if SPLIT_INDEX in str(exc):
            raise StorageError(split_index_problem(repo)) from None
        raise
    if personal:  # notes only the developer's own excludes file ignores: new files too
        found = notes_only_you_ignore(repo, status)
        status.update(dict.fromkeys(found, pygit2.GIT_STATUS_WT_NEW))
    return status


def _changed(status: Status) -> list[str]:
    return [p for p, f in status.items() if not f & pygit2.GIT_STATUS_IGNORED]


def _sidecar_in_head(repo: pygit2.Repository) -> bool:
    head = head_commit(repo)
    return head is not None and SIDECAR_PREFIX.rstrip("/") in head.tree


def _nothing_to_stage(repo: pygit2.Repository, status: Status | None) -> bool:
    """True when status (the caller's read) shows no change at all, staged or not, and HEAD
    holds no sidecar: the index already is HEAD's tree, so staging would only rewrite it."""
    return status is not None and not _changed(status) and not _sidecar_in_head(repo)


def _may_hold_private(repo: pygit2.Repository, status: Status | None) -> bool:
    """Whether the index may hold a path that is never committed, so that all of it must be
    looked at (20,000 entries: ~50 ms): always without the caller's read; with it, only if
    HEAD has a sidecar or the read shows such a path (staged, or committed and changed).

    (A killed write's temporary file that an older memwiki committed, unchanged since, is
    then left to `memwiki commit` and `memwiki untrack-ignored`, which doctor names.)
    """
    if status is None or _sidecar_in_head(repo):
        return True
    return any(is_private(p) for p in _changed(status))


def stage_all(
    repo: pygit2.Repository,
    skip: set[str] | frozenset[str] = frozenset(),
    hand_edits: bool = False,
    status: Status | None = None,
) -> dict[str, str]:
    """Stage every change in the work tree (new, modified, deleted), respecting .gitignore.

    Paths in skip stay as they are in the index; .memwiki/ is never staged; with
    hand_edits, neither is a new file another sync tool made as a conflict copy: returns
    those, {path: what it is} (read from this status walk, not a second one). status is
    the caller's read_status (read here when None): a file first changed after that read
    is left for the next commit, since the caller checked only what the read showed.
    """
    from .copies import never_staged, other_tools_copy  # recallfile: only when needed

    wait_for_git(repo)
    if _nothing_to_stage(repo, status):
        refuse_unfinished(repo)
        return {}
    index = read_index(repo)
    refuse_unfinished(repo, index)
    workdir = Path(repo.workdir)
    held: dict[str, str] = {}
    for path, flags in (read_status(repo) if status is None else status).items():
        if flags & pygit2.GIT_STATUS_IGNORED or path in skip or is_private(path):
            if flags & pygit2.GIT_STATUS_WT_NEW and is_temp_name(path.rsplit("/", 1)[-1]):
                drop_stale_temp(workdir / path)
            continue
        new = flags & pygit2.GIT_STATUS_WT_NEW
        if new and (never := never_staged(path)) is not None:
            held[path] = never
            continue
        if hand_edits and new and (copy := other_tools_copy(workdir, path)):
            held[path] = copy[1]
            continue
        # Staged as the file is now: one deleted since the read is removed (index.add
        # failed on it), one deleted at the read and back since is left for the next commit.
        gone = not os.path.lexists(workdir / path)
        if gone and flags & (pygit2.GIT_STATUS_WT_DELETED | _WT_CHANGED):
            if path in index:
                index.remove(path)
        elif flags & _WT_CHANGED:
            _add(index, workdir, path)
    if _may_hold_private(repo, status):
        _drop_private(index)
    write_index(repo, index)
    return dict(sorted(held.items()))


def _add(index: pygit2.Index, workdir: Path, path: str, tries: int = 6) -> None:
    """index.add(path), read again while the file changes under it.

    libgit2 stats a file, then reads that many bytes: an editor or `git checkout` rewriting
    it in place meanwhile fails the read ("failed to read file into stream"; 8% of adds
    beside a process rewriting a file). `memwiki commit`, sync and the stress test of a
    person's `git commit` (pre-commit stashes and restores files) failed with exit 5 on it.
    A file deleted meanwhile is removed, as stage_all does.
    """
    for attempt in range(tries):
        try:
            index.add(path)
            return
        except pygit2.GitError:
            if not os.path.lexists(workdir / path):
                if path in index:
                    index.remove(path)
                return
            if attempt == tries - 1:
                raise
            time.sleep(0.002 * 2**attempt)  # about 0.1 s in all


def pending_paths(repo: pygit2.Repository, status: Status | None = None) -> list[str]:
    """Work-tree paths that stage_all would stage (not ignored, not the sidecar); status:
    the caller's read_status, read here when None."""
    wt = _WT_CHANGED | pygit2.GIT_STATUS_WT_DELETED
    return sorted(
        p
        for p, f in (read_status(repo) if status is None else status).items()
        if f & wt and not f & pygit2.GIT_STATUS_IGNORED and not is_private(p)
    )


def stage_paths(repo: pygit2.Repository, paths: list[str]) -> None:
    """Stage exactly these work-tree paths (added, modified or deleted) and nothing else."""
    wait_for_git(repo)
    index = read_index(repo)
    refuse_unfinished(repo, index)
    workdir = Path(repo.workdir)
    for path in paths:
        if is_private(path):
            continue
        if (workdir / path).is_file():
            _add(index, workdir, path)
        elif path in index:
            index.remove(path)
    if _sidecar_in_head(repo):  # else every entry looked at for nothing (10,000: ~40 ms)
        _drop_private(index)
    write_index(repo, index)


def staged_changes(repo: pygit2.Repository) -> Changes:
    """What the index would commit, relative to HEAD (renames detected)."""
    head = head_commit(repo)
    index = repo.index
    if head is None:
        return _all_created(index)
    return classify(head.tree.diff_to_index(index))


def _all_created(index: pygit2.Index) -> Changes:
    """What the first commit of an index creates: all of it."""
    return Changes([Change("created", e.path) for e in index])


def describe(changes: Changes) -> str:
    """A commit message naming the RecallFiles created, updated, deleted and renamed."""
    return commit_message("memwiki", changes)


def commit_index(
    repo: pygit2.Repository,
    message: str,
    parents: list | None = None,
    index: pygit2.Index | None = None,
) -> str:
    """Write the index (the repository's, or an in-memory one) as a tree and commit it on
    HEAD; returns the commit id."""
    head = head_commit(repo)
    if parents is None:
        parents = [head.id] if head is not None else []
    sig = signature(repo)
    # A tracked path that is not UTF-8 (git's bytes, surrogate-escaped) is named as \xff.
    message = message.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    try:
        tree = repo.index.write_tree() if index is None else index.write_tree(repo)
        oid = repo.create_commit("HEAD", sig, sig, message, tree, parents)
    except (pygit2.GitError, OSError) as exc:
        if MOVED in str(exc):
            raise HeadMoved(str(exc)) from None
        raise StorageError(
            f"git commit failed ({_one_line(exc)}): the files are saved, not committed"
        ) from None
    # On a full disk libgit2 can fail to write the commit object and still return its
    # id (pygit2 1.21, libgit2 1.9): an agent was told its memory was committed when
    # nothing was. Believe the commit only once it is in the store and HEAD names it.
    after = head_commit(repo)
    if repo.get(oid) is None or after is None or after.id != oid:
        # Its folder may refuse this user (root's, after a `sudo memwiki`): libgit2 says
        # nothing of that either, and the disk was blamed.
        folder = os.path.join(repo.path, "objects", str(oid)[:2])
        what = refused_text(folder) or "the commit was not written: is the disk full?"
        raise StorageError(f"git commit failed ({what}): the files are saved, not committed")
    from .maintenance import after_commit

    after_commit(repo)  # libgit2 never packs: past git's own threshold, a detached gc
    return str(oid)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _commit_staged(repo: pygit2.Repository, message: str | None) -> tuple[str | None, Changes]:
    """Commit what is staged, described when no message is given; (None, empty) when nothing is."""
    head = head_commit(repo)
    changes = staged_changes(repo)
    if not changes:
        return None, changes
    parents = [head.id] if head is not None else []
    return commit_index(repo, message or describe(changes), parents), changes


def commit_all(
    repo: pygit2.Repository,
    message: str | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
    held: dict[str, str] | None = None,
    status: Status | None = None,
) -> tuple[str | None, Changes]:
    """Stage and commit everything that changed (but skip); (None, empty) when nothing did.

    Another sync tool's new conflict copy (Dropbox, Syncthing, iCloud) is never taken:
    bug it prevents, a scheduled `memorize commit`, sweeping the hand edits made while its
    run was open, committed them, and the next sync spread them to every device. held, when
    given, is filled with them ({path: what it is}). status: as for stage_all.
    """

    def attempt() -> tuple[str | None, Changes]:
        found = stage_all(repo, skip, hand_edits=True, status=status)
        if held is not None:
            held.clear()
            held.update(found)
        if _nothing_to_stage(repo, status):
            return None, Changes()  # what was staged since the caller's read waits too
        return _commit_staged(repo, message)

    return retry_moved(attempt)


def commit_paths(
    repo: pygit2.Repository, paths: list[str], message: str | None = None
) -> tuple[str | None, Changes]:
    """Stage and commit only these paths, leaving other work in progress (hand edits) alone.

    As `git commit -- PATHS`: the commit is HEAD's tree with these paths as the work tree
    has them, so what a person staged with `git add` stays staged and out of memwiki's
    commit (`init --force` on a project used to commit its staged work as "memwiki:
    complete the wiki layout", `add` as the agent's save).
    """
    return retry_moved(lambda: _commit_paths_once(repo, paths, message))


def _commit_paths_once(
    repo: pygit2.Repository, paths: list[str], message: str | None
) -> tuple[str | None, Changes]:
    stage_paths(repo, paths)
    staged = repo.index
    head = head_commit(repo)
    tree = pygit2.Index()  # in memory: the repository's index is not rewritten
    if head is not None:
        tree.read_tree(head.tree)
    # Only HEAD's sidecar is untracked here (a lookup); a killed write's temporary file an
    # older memwiki committed is left to `memwiki commit` and sync, as _may_hold_private
    # leaves it: looking at every entry twice took 180 of the 500 ms of `memwiki add` at
    # 10,000 files. What a person staged in the index stays theirs.
    if _sidecar_in_head(repo):
        _drop_private(tree)
    for path in paths:
        if path in staged and not is_private(path):
            tree.add(staged[path])
        elif path in tree:
            tree.remove(path)
    changes = classify(head.tree.diff_to_index(tree)) if head is not None else _all_created(tree)
    if not changes:
        return None, changes
    parents = [head.id] if head is not None else []  # the HEAD the tree was built from
    return commit_index(repo, message or describe(changes), parents, index=tree), changes
