"""Moving a branch to a new commit, crash-safe: record, check out, move the ref, recover.

The one protocol used by sync (fast-forward or merge) and memorize commit (a run's merge):

1. `record` writes .memwiki/update.json (ref, old, new) before the work tree is touched;
2. `apply` updates the files with a SAFE checkout (it never overwrites an edit made since
   the last commit) and only then moves the branch, then removes the record;
3. after a kill anywhere, `recover` (called under the wiki's write lock before any other
   change) finishes the job when every file the update touches holds exactly its old or
   its new version. Any other content is a person's edit (or a half-written file): the
   record is dropped, the branch stays, and the caller's normal flow commits the files as
   hand edits and merges again. Either way nothing is lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pygit2
from pygit2.enums import CheckoutStrategy

from ..errors import StateError, StorageError
from ..fsutil import atomic_write_text

JOURNAL = "update.json"
# How many times a caller commits a file saved meanwhile and tries the checkout again.
MAX_EDIT_RETRIES = 3

T = TypeVar("T")


def again_if_saved_meanwhile(attempt: Callable[[], T]) -> T:
    """attempt() (commit the hand edits, merge, apply), made again while apply's checkout
    is refused by a file saved since those hand edits were read: MAX_EDIT_RETRIES more
    times at most, then its CheckoutRefused stands.

    A person's editor does not take the wiki lock. The refused checkout wrote nothing, so
    the next attempt commits that save like any hand edit and merges again. Bug it
    prevents: an autosave during a sync or a memorize commit failed it with exit 5 (found
    by the stress test of scheduled jobs and a person saving notes).
    """
    for _ in range(MAX_EDIT_RETRIES):
        try:
            return attempt()
        except CheckoutRefused:
            pass
    return attempt()


def journal_path(sidecar: Path) -> Path:
    """Where the pending update of a wiki is recorded."""
    return Path(sidecar) / JOURNAL


def record(journal: Path, ref_name: str, old: pygit2.Oid, new: pygit2.Oid) -> None:
    """Write down the update about to happen (step 1)."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    data = {"ref": ref_name, "old": str(old), "new": str(new)}
    atomic_write_text(journal, json.dumps(data) + "\n")


class CheckoutRefused(StorageError):
    """The SAFE checkout found a file edited since the last commit in its way; it changed
    nothing, so the caller may commit that edit and try again."""


def apply(
    repo: pygit2.Repository,
    journal: Path,
    ref_name: str,
    new: pygit2.Oid,
    message: str,
    refused: str,
    checkpoint: Callable[[str], None] | None = None,
) -> None:
    """Check out new (SAFE), then move the branch to it (step 2); refused: the error text.

    StateError when the branch moved away from the recorded commit meanwhile (a person's
    `git commit`, which takes git's lock, not memwiki's). Bug it prevents: the branch was
    set to new regardless, dropping their commit, and the checkout, whose baseline was
    their commit, put their file back as it was before. Now nothing of theirs is touched
    (before the checkout), or the files of new stay as edits on top of their commit
    (after it), which the next run commits and merges again.
    """
    _refuse_moved(repo, journal, ref_name)
    try:
        repo.checkout_tree(
            repo[new], strategy=_EXACT | CheckoutStrategy.SAFE, **_changed(repo, new)
        )
    except pygit2.GitError as exc:
        journal.unlink(missing_ok=True)  # SAFE checks before it writes: nothing was changed
        raise CheckoutRefused(f"{refused} ({exc})") from None
    if checkpoint is not None:
        checkpoint("checked-out")
    _refuse_moved(repo, journal, ref_name)
    repo.references[ref_name].set_target(new, message)
    if checkpoint is not None:
        checkpoint("ref-moved")
    journal.unlink(missing_ok=True)


# Paths given to a checkout are names, not patterns: without this libgit2 reads them as
# globs, and `memory/[draft] plan.md` also names `memory/d plan.md` (found while limiting
# the checkout to the changed paths; a recovery's FORCE checkout overwrote a person's
# edit of such a file).
_EXACT = CheckoutStrategy.DISABLE_PATHSPEC_MATCH


def _changed(repo: pygit2.Repository, new: pygit2.Oid) -> dict:
    """paths= for a checkout from HEAD to new: only what differs between the two trees.

    The checkout compares HEAD, new and the work tree; on every other path all three are
    alike or only the work tree differs (left alone either way), so the result is the
    same, without scanning the whole work tree (20,000 files: 54 ms, 7 ms this way).
    """
    if repo.head_is_unborn:
        return {}
    head = repo.head.peel(pygit2.Commit)
    paths = changed_files(repo, head.tree, repo[new].peel(pygit2.Commit).tree)
    return {"paths": sorted(paths)} if paths else {}


def changed_files(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> dict[str, str]:
    """{path: "A", "D" or "M"} for each file that differs between two trees, as a diff of
    them lists it (a file replaced by a folder: the file deleted, the folder's files added).

    Folders whose trees are the same object are never opened: libgit2's tree diff reads
    every entry of both trees (20,000 files: 12 ms for one changed file; this, 0.7 ms).
    """
    out: dict[str, str] = {}
    _compare(repo, old, new, "", out)
    return out


def _compare(repo, old: pygit2.Tree | None, new: pygit2.Tree | None, prefix: str, out) -> None:
    if old is not None and new is not None and old.id == new.id:
        return
    before = {e.name: e for e in old} if old is not None else {}
    after = {e.name: e for e in new} if new is not None else {}
    for name in before.keys() | after.keys():
        a, b = before.get(name), after.get(name)
        if a is not None and b is not None and a.id == b.id and a.filemode == b.filemode:
            continue
        a_tree = repo[a.id] if a is not None and a.filemode == _TREE else None
        b_tree = repo[b.id] if b is not None and b.filemode == _TREE else None
        if a_tree is not None or b_tree is not None:
            _compare(repo, a_tree, b_tree, f"{prefix}{name}/", out)
        a_file, b_file = a is not None and a_tree is None, b is not None and b_tree is None
        if a_file or b_file:
            out[prefix + name] = "M" if a_file and b_file else "D" if a_file else "A"


_TREE = pygit2.GIT_FILEMODE_TREE


def _refuse_moved(repo: pygit2.Repository, journal: Path, ref_name: str) -> None:
    """StateError (and the record dropped) when ref_name is no longer at the recorded old."""
    try:
        old = json.loads(journal.read_text(encoding="utf-8"))["old"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # no record to hold the branch to
    ref = repo.references.get(ref_name)
    if ref is not None and str(ref.target) == old:
        return
    journal.unlink(missing_ok=True)
    raise StateError(
        "the branch moved while memwiki was updating the files (a `git commit` by hand?); "
        "nothing was lost: run the command again"
    )


def _half_written(repo: pygit2.Repository, new: pygit2.Commit, path: str, file: Path) -> bool:
    """True when file holds the start of its new version: the checkout was killed writing it.

    (libgit2 writes a file in place; a person's edit that is exactly a prefix of the new
    version loses nothing when the new version replaces it.)
    """
    try:
        blob = repo[new.tree[path].id]
        if not isinstance(blob, pygit2.Blob):
            return False
        data = blob.data
        size = file.stat().st_size
        if not file.is_file() or size >= len(data):
            return False
        return data.startswith(file.read_bytes())
    except (KeyError, OSError):
        return False


def _blob_id(repo: pygit2.Repository, path: str) -> str:
    """The blob id of a work-tree file as git would add it: through the repository's
    filters (core.autocrlf, eol attributes). Bug it prevents: raw bytes never matched under
    core.autocrlf = true (CRLF on disk, LF in the blobs), so a killed update was never
    finished and its files were committed again as hand edits."""
    try:
        return str(repo.hashfile(path))
    except (pygit2.GitError, OSError):  # core.safecrlf = true refusing mixed endings
        return str(pygit2.hashfile(str(Path(repo.workdir) / path)))


def _finish(repo: pygit2.Repository, ref, old: pygit2.Commit, new: pygit2.Commit) -> bool:
    workdir = Path(repo.workdir)
    paths: set[str] = set()
    for delta in repo.diff(old.tree, new.tree).deltas:
        paths.update((delta.old_file.path, delta.new_file.path))
    for path in paths:
        allowed: set[str | None] = set()
        for tree in (old.tree, new.tree):
            try:
                allowed.add(str(tree[path].id))
            except KeyError:
                allowed.add(None)
        file = workdir / path
        if file.is_symlink():
            return False
        have = _blob_id(repo, path) if file.is_file() else None
        if have not in allowed and not _half_written(repo, new, path, file):
            return False
    try:
        if paths:
            # FORCE, but only on those paths, each already checked to be old or new.
            repo.checkout_tree(new, strategy=_EXACT | CheckoutStrategy.FORCE, paths=sorted(paths))
        ref.set_target(new.id, "memwiki: finish an interrupted update")
    except (pygit2.GitError, OSError):
        return False
    return True


def recover(repo: pygit2.Repository, journal: Path) -> bool:
    """Finish an update a killed process left half done (step 3); True when it moved the ref."""
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        journal.unlink(missing_ok=True)
        return False
    done = False
    try:
        ref = repo.references.get(str(data["ref"]))
        old, new = pygit2.Oid(hex=data["old"]), pygit2.Oid(hex=data["new"])
    except (KeyError, TypeError, ValueError):
        ref = None
    if ref is not None and ref.target == old and new in repo:
        done = _finish(repo, ref, repo[old].peel(pygit2.Commit), repo[new].peel(pygit2.Commit))
    journal.unlink(missing_ok=True)
    return done
