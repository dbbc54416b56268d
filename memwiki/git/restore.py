"""`memwiki restore`: bring a RecallFile back as it was at a revision, as a new commit."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from ..errors import InvalidInput, NotFound, StateError
from ..fsutil import atomic_write_bytes
from . import history
from . import repo as gitstore

_MAX_RENAMES = 20  # how many renames restore follows back
_MAX_LOG = 2000  # commits that changed the file it looks at


@dataclass
class RestoreResult:
    """What a restore wrote."""

    path: str
    rev: str  # the commit whose version of the file was brought back
    commit: str | None  # the new commit; None when the file already was that version
    saved: str | None = None  # a commit of the file's uncommitted edit, made first

    def to_dict(self) -> dict:
        """JSON form (the `memwiki restore --json` schema)."""
        return {"path": self.path, "rev": self.rev, "commit": self.commit, "saved": self.saved}


def _resolve(repo: pygit2.Repository, rev: str) -> pygit2.Commit:
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise NotFound(f"no revision {rev!r} in the wiki") from None


def _blob_at(commit: pygit2.Commit, rel: str) -> pygit2.Blob | None:
    try:
        obj = commit.tree[rel]
    except KeyError:
        return None
    return obj if isinstance(obj, pygit2.Blob) else None


def _source(repo: pygit2.Repository, rel: str, ref: str, rev: str | None):
    """(commit, blob) of the version to bring back."""
    if rev is not None:
        commit = _resolve(repo, rev)
        blob = _blob_at(commit, rel)
        if blob is None:
            short = str(commit.id)[:12]
            hint = f"pick a revision from `memwiki log {ref}`"
            parents = commit.parents
            if parents and _blob_at(parents[0], rel) is not None:
                hint = f"{short} deleted it: use --rev {short}^ for the version before"
            raise NotFound(f"{rel} does not exist at {short}: {hint}")
        return commit, blob
    return _before_last_change(repo, rel, ref)


def _before_last_change(repo: pygit2.Repository, rel: str, ref: str):
    """The version before the last change of rel's content, following renames back.

    The history is read lazily, newest first, and only until that version is found: a file
    changed yesterday costs a few commits, not the whole history.
    """
    head = gitstore.head_commit(repo)
    current = _blob_at(head, rel) if head is not None else None
    current_id = current.id if current is not None else None
    seen = renames = 0
    for commit, name, changes in history.file_history(repo, rel):
        seen += 1
        change = changes[0]
        before = change.old_path if change.path == name and change.old_path else name
        blob = _blob_at(commit.parents[0], before) if commit.parents else None
        if blob is None and not commit.parents and repo.is_shallow:
            # A shallow clone's oldest commit only looks like the file's creation.
            raise StateError(
                f"{rel}: its history before {str(commit.id)[:12]} is not in this shallow "
                "clone: run `git fetch --unshallow` in the wiki, then restore again"
            )
        if blob is None:
            raise StateError(
                f"{rel} did not exist before {str(commit.id)[:12]}, which created it: "
                f"pass --rev with a revision from `memwiki log {ref}`"
            )
        if blob.id != current_id:
            return commit.parents[0], blob
        renames += before != name  # a rename that kept the content: on under the old name
        if renames >= _MAX_RENAMES or seen >= _MAX_LOG:
            break
    if seen == 0:
        raise NotFound(f"{rel} has no history: nothing to restore")
    raise StateError(f"{rel}: no earlier version differs from this one (looked at {seen} commits)")


def restore(
    wiki, track: str, name: str, rev: str | None = None, rel: str | None = None
) -> RestoreResult:
    """Bring track/name back as it was at rev (default: before its last change) and commit.

    rel: the note's path in a subfolder of the track (TRACK/FOLDERS/NAME.md), for a note
    deleted from there (its name alone would look for it at the top of the track).
    """
    path = wiki.path_of(track, name)
    if rel is not None and not path.is_file():
        from ..fsutil import safe_join

        parts = rel.split("/")
        if parts[0] != track or parts[-1] != f"{name}.md":
            raise InvalidInput(f"refused path {rel!r}: it is not {track}/.../{name}.md")
        path = safe_join(wiki.root, *parts)
    rel = path.relative_to(wiki.root).as_posix()
    repo = wiki.repo
    with wiki.write_lock():
        if gitstore.head_commit(repo) is None:
            raise NotFound("the wiki has no history yet: nothing to restore")
        source, blob = _source(repo, rel, f"{track}/{name}", rev)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise InvalidInput(f"refused to restore {rel}: it is not a regular file")
        # An uncommitted edit of this file is committed first, so the restore cannot lose it.
        saved, _ = gitstore.commit_paths(
            repo, [rel], f"memwiki: save the edit of {track}/{name} before restoring it\n"
        )
        current = path.read_bytes() if path.is_file() else None
        result = RestoreResult(rel, str(source.id), None, saved)
        data = _as_checked_out(blob, rel)
        if current == data:
            return result
        # The exact bytes of that version: restoring is not rewriting, so no stamp changes.
        atomic_write_bytes(path, data)
        message = (
            f"memwiki: restore {track}/{name} as of {str(source.id)[:12]}\n\n"
            f"Restored-From: {source.id}\n"
        )
        result.commit, _ = gitstore.commit_paths(repo, [rel], message)
    return result


def _as_checked_out(blob: pygit2.Blob, rel: str) -> bytes:
    """The blob as git would write it at rel: core.autocrlf, `eol` in .gitattributes.

    Bug it prevents: restore wrote the stored bytes (LF) into a wiki whose git config
    checks files out with CRLF; the note's line endings changed, unlike every other file.
    """
    try:
        with pygit2.BlobIO(blob, as_path=rel) as stream:
            return stream.read()
    except (pygit2.GitError, OSError, ValueError):  # a filter libgit2 cannot run
        return blob.data
