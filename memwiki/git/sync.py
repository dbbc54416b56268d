"""`memwiki sync`: fetch, commit hand edits, merge (conflict copies), push; never lose an edit.

Crash safety, step by step (a kill -9 can land anywhere):

- fetch runs first and only moves refs/remotes/*: an unreachable remote or a wrong key
  stops the sync with the wiki untouched;
- hand edits are then committed, so the merge works on committed history only; a merge
  commit is written before anything points at it;
- before the work tree is touched, .memwiki/sync.json records (branch, old, new); the
  files are updated with a SAFE checkout (it never overwrites an edit made meanwhile) and
  only then is the branch moved. The next sync finds the record and finishes the job
  when every file it touches holds its old or its new version; otherwise (a person
  edited one since) the files are committed as hand edits and merged again: either way
  nothing is lost;
- git lock files left by the killed sync (only those created while it ran) are removed;
  a remote on this machine (libgit2 pushes to those in-process) gets its ref lock
  cleared by the next push of any device, which holds memwiki's push lock there.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pygit2
from pygit2.enums import CheckoutStrategy

from ..errors import MemwikiError, StateError, StorageError
from ..fsutil import atomic_write_text
from ..lock import FileLock
from . import repo as gitstore
from .conflicts import Conflict
from .credentials import Callbacks, is_push_race, redact, transport
from .merge import current_branch_head, make_merge_commit
from .remotes import (  # noqa: F401 (the devices API in one place)
    DEFAULT_REMOTE,
    add_remote,
    clone,
    fetch,
    get_remote,
    lookup,
    normalize_url,
    remote_info,
    set_upstream,
    upstream_branch,
)

LABEL = "remote"  # conflict copies are <stem>.conflict-remote-<sha>.md
MAX_PUSH_RETRIES = 3
JOURNAL = "sync.json"

Checkpoint = Callable[[str], None]


@dataclass
class SyncResult:
    """What one sync did."""

    remote: str
    branch: str
    commit: str | None = None  # the branch after the sync
    committed: str | None = None  # the commit of hand edits made before syncing, if any
    fetched: int = 0  # commits that came from the remote
    merged: str = "none"  # none | fast-forward | merge
    pushed: bool = False
    conflicts: list[Conflict] = field(default_factory=list)
    retries: int = 0  # pushes refused because another device pushed first

    def to_dict(self) -> dict:
        """JSON form (the `memwiki sync --json` schema)."""
        return {
            "remote": self.remote,
            "branch": self.branch,
            "commit": self.commit,
            "committed": self.committed,
            "fetched": self.fetched,
            "merged": self.merged,
            "pushed": self.pushed,
            "conflicts": [c.to_dict() for c in self.conflicts],
            "retries": self.retries,
        }


def _noop(_: str) -> None:
    pass


# ---------------------------------------------------------------- the journal


def _journal_path(wiki) -> Path:
    return wiki.sidecar / JOURNAL


def _write_journal(wiki, data: dict) -> None:
    atomic_write_text(_journal_path(wiki), json.dumps(data) + "\n")


def _note(wiki, key: str, value: dict) -> None:
    """Add one step to the journal before doing it."""
    journal = _read_journal(wiki) or {"started": time.time()}
    journal[key] = value
    _write_journal(wiki, journal)


def _read_journal(wiki) -> dict | None:
    try:
        data = json.loads(_journal_path(wiki).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _remove_stale_git_locks(repo: pygit2.Repository, since: float) -> list[str]:
    """Delete git lock files a killed sync left behind (created after it started)."""
    gitdir = Path(repo.path)
    removed = []
    candidates = [p for p in gitdir.glob("*.lock") if p.is_file()]
    for sub in ("refs", "logs"):
        candidates += [p for p in (gitdir / sub).rglob("*.lock") if p.is_file()]
    for path in candidates:
        try:
            if path.stat().st_mtime >= since - 1:
                path.unlink()
                removed.append(str(path.relative_to(gitdir)))
        except OSError:
            continue
    return removed


def _local_remote_gitdir(url: str) -> str | None:
    """The git directory of a remote on this machine (file:// or a path), else None."""
    if transport(url) != "local":
        return None
    path = unquote(urlsplit(url).path) if url.startswith("file://") else url
    try:
        return pygit2.Repository(path).path
    except (pygit2.GitError, KeyError, ValueError):
        return None


def _finish_update(repo: pygit2.Repository, ref, old: pygit2.Commit, new: pygit2.Commit) -> bool:
    """Complete an interrupted checkout of new over old, then move the branch.

    Only if every file the update touches holds exactly its old or its new version: any
    other content is a person's edit (or a half-written file), which must not be
    overwritten; the normal flow then commits it as a hand edit and merges again.
    """
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
        have = str(pygit2.hashfile(str(file))) if file.is_file() else None
        if have not in allowed:
            return False
    try:
        if paths:
            # FORCE, but only on those paths, each already checked to be old or new.
            repo.checkout_tree(new, strategy=CheckoutStrategy.FORCE, paths=sorted(paths))
        ref.set_target(new.id, "memwiki sync: finish an interrupted update")
    except (pygit2.GitError, OSError):
        return False
    return True


def _recover(wiki) -> None:
    """Finish what a killed sync left half done (called holding both locks)."""
    data = _read_journal(wiki)
    if data is None:
        return
    repo = wiki.repo
    if isinstance(data.get("started"), int | float):
        _remove_stale_git_locks(repo, float(data["started"]))
    step = data.get("update")
    if isinstance(step, dict):
        try:
            ref = repo.references.get(str(step["ref"]))
            old, new = pygit2.Oid(hex=step["old"]), pygit2.Oid(hex=step["new"])
        except (KeyError, TypeError, ValueError):
            ref = None
        if ref is not None and ref.target == old and new in repo:
            _finish_update(repo, ref, repo[old].peel(pygit2.Commit), repo[new])
    _journal_path(wiki).unlink(missing_ok=True)


# ---------------------------------------------------------------- network


_LOCK_FAILURE = re.compile(r"failed to lock file '([^']+\.lock)'")


def _push_once(remote: pygit2.Remote, ref_name: str, upstream: str, config) -> bool | str:
    """True pushed, False refused because the remote moved, or the text of another refusal."""
    callbacks = Callbacks(remote.url, config)
    try:
        remote.push([f"{ref_name}:refs/heads/{upstream}"], callbacks=callbacks)
    except pygit2.GitError as exc:
        if is_push_race(exc):
            return False
        if _LOCK_FAILURE.search(str(exc)):
            return str(exc)
        raise callbacks.error(exc, "push to") from None
    if callbacks.rejected:
        return False if callbacks.push_raced() else "; ".join(callbacks.rejected.values())
    return True


def _push(remote: pygit2.Remote, ref_name: str, upstream: str, config) -> bool:
    """Push the branch; False when refused because the remote moved (fetch and retry)."""
    gitdir = _local_remote_gitdir(remote.url)
    if gitdir is None:
        outcome = _push_once(remote, ref_name, upstream, config)
    else:
        # libgit2 pushes to a remote on this machine (or a shared disk) inside this process,
        # so a killed sync leaves the remote's ref lock behind and blocks every device. Local
        # pushes take this lock; whoever holds it knows that a leftover ref lock is stale.
        with FileLock(Path(gitdir) / "memwiki-push.lock", timeout=60):
            outcome = _push_once(remote, ref_name, upstream, config)
            stale = _LOCK_FAILURE.search(outcome) if isinstance(outcome, str) else None
            if stale and Path(stale.group(1)).resolve().is_relative_to(Path(gitdir).resolve()):
                Path(stale.group(1)).unlink(missing_ok=True)
                outcome = _push_once(remote, ref_name, upstream, config)
    if isinstance(outcome, str):
        raise StorageError(f"{redact(remote.url)} refused the push of {upstream}: {outcome}")
    return outcome


# ---------------------------------------------------------------- sync


def _merge_message(remote: str, upstream: str, conflicts: list[Conflict]) -> str:
    lines = [f"memwiki sync: merge {remote}/{upstream}", ""]
    if conflicts:
        lines.append("Conflicts (both versions kept):")
        for c in conflicts:
            lines.append(f"- {c.path} -> {c.copy}" if c.copy else f"- {c.path} ({c.kind})")
        lines.append("")
    return "\n".join(lines)


def _integrate(wiki, result: SyncResult, tracking: str, upstream: str, checkpoint) -> None:
    """Bring the remote's commits into the branch (fast-forward or merge); hold the lock."""
    repo = wiki.repo
    # Hand edits become a commit that takes part in the merge: the checkout below can then
    # never be refused by (or overwrite) them.
    committed, _ = gitstore.commit_all(repo, None)
    result.committed = result.committed or committed
    checkpoint("committed")
    ref_name, ours = current_branch_head(repo)
    theirs = lookup(repo, tracking)
    if theirs is None or theirs.id == ours.id or repo.descendant_of(ours.id, theirs.id):
        return
    walker = repo.walk(theirs.id)
    walker.hide(ours.id)
    result.fetched += sum(1 for _ in walker)
    if repo.descendant_of(theirs.id, ours.id):
        conflicts: list
        target, kind, conflicts = theirs.id, "fast-forward", []
    else:
        target, conflicts = make_merge_commit(
            repo, ours, theirs, LABEL, lambda found: _merge_message(result.remote, upstream, found)
        )
        kind = "merge"
    checkpoint("merge-made")
    _note(wiki, "update", {"ref": ref_name, "old": str(ours.id), "new": str(target)})
    try:
        # SAFE: a file someone changed after our hand-edit commit is never overwritten.
        repo.checkout_tree(repo[target], strategy=CheckoutStrategy.SAFE)
    except pygit2.GitError as exc:
        raise StorageError(
            f"a wiki file was edited while sync was updating the files ({exc}); nothing was "
            "lost: run `memwiki sync` again"
        ) from None
    checkpoint("checked-out")
    repo.references[ref_name].set_target(target, f"memwiki sync: {kind} {tracking}")
    checkpoint("ref-moved")
    result.merged = "merge" if "merge" in (kind, result.merged) else kind
    result.conflicts.extend(conflicts)


def sync(
    wiki,
    config,
    remote: str = DEFAULT_REMOTE,
    *,
    _before_push: Callable[[], None] | None = None,
    _checkpoint: Checkpoint | None = None,
) -> SyncResult:
    """Fetch, commit hand edits, fast-forward or merge (conflict copies), push; retry a race."""
    checkpoint = _checkpoint or _noop
    repo = wiki.repo
    handle = get_remote(repo, remote)
    # One sync at a time; the wiki lock itself is only held while local files and refs
    # change, so a slow network never blocks the agents' own writes.
    with FileLock(wiki.sidecar / "sync.lock", timeout=120):
        try:
            with wiki.write_lock():
                _recover(wiki)
                _write_journal(wiki, {"started": time.time(), "pid": os.getpid()})
                ref_name, _ = current_branch_head(repo)
            branch = ref_name.removeprefix("refs/heads/")
            result = SyncResult(remote, branch)
            upstream = upstream_branch(repo, branch, remote)
            tracking = f"refs/remotes/{remote}/{upstream}"
            # The network first: a remote that cannot be reached (or a wrong key) stops the
            # sync before anything in the wiki changes; hand edits are committed right after.
            fetch(handle, config)
            checkpoint("fetched")
            while True:
                with wiki.write_lock():
                    _integrate(wiki, result, tracking, upstream, checkpoint)
                theirs = lookup(repo, tracking)
                if theirs is not None and theirs.id == repo.references[ref_name].target:
                    break
                if _before_push is not None:
                    _before_push()
                if _push(handle, ref_name, upstream, config):
                    result.pushed = True
                    checkpoint("pushed")
                    break
                if result.retries >= MAX_PUSH_RETRIES:
                    raise StateError(
                        f"{remote} kept moving: the push was refused {result.retries + 1} "
                        "times because other devices pushed first; run `memwiki sync` again"
                    )
                result.retries += 1
                fetch(handle, config)
            with wiki.write_lock():
                set_upstream(repo, branch, remote, upstream)
            result.commit = str(repo.references[ref_name].target)
        except MemwikiError:
            # A handled failure leaves the wiki consistent: nothing for the next sync to finish.
            _journal_path(wiki).unlink(missing_ok=True)
            raise
        # Anything else (Ctrl-C between checkout and ref update, a bug) keeps the journal,
        # exactly like a kill, so that the next sync finishes the job.
    _journal_path(wiki).unlink(missing_ok=True)
    return result
