"""`memwiki sync`: fetch, commit hand edits, merge (conflict copies), push; never lose an edit.

Crash safety, step by step (a kill -9 can land anywhere):

- fetch runs first and only moves refs/remotes/*: an unreachable remote or a wrong key
  stops the sync with the wiki untouched;
- hand edits are then committed, so the merge works on committed history only; a merge
  commit is written before anything points at it;
- the branch is moved by update.py (record, SAFE checkout, move the ref, recover), the
  protocol memorize commit uses too: a half-done update is finished, or its files are
  committed as hand edits and merged again; either way nothing is lost;
- git lock files left by the killed sync (only those created while it ran, which
  .memwiki/sync.json records) are removed; a ref lock left in a remote on this machine is
  cleared by the next push of any device, which holds memwiki's push lock there.

Hand edits are validated before they are committed: an invalid RecallFile stays
uncommitted (named, with why, in the result) while every valid edit syncs.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pygit2

from ..errors import MemwikiError, StateError, StorageError
from ..fsutil import atomic_write_text
from ..lock import FileLock
from . import gitlocks, hand_edits, network, refused_paths, rewritten, update
from . import repo as gitstore
from .changes import Change, merge_message
from .conflicts import COPY_RE, Conflict
from .copies import copies_in
from .merge import current_branch_head, make_merge_commit
from .remotes import (  # noqa: F401 (the devices API in one place)
    DEFAULT_REMOTE,
    add_remote,
    clone,
    fetched_upstream,
    get_remote,
    lookup,
    normalize_url,
    remote_info,
    set_upstream,
    upstream_branch,
)

fetch = network.fetch  # the devices API in one place

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
    changes: list[Change] = field(default_factory=list)  # of the hand-edit commit
    not_committed: list[dict] = field(default_factory=list)  # [{path, problem}]
    committed_invalid: list[dict] = field(default_factory=list)  # staged, lint rejects
    conflict_copies: list[str] = field(default_factory=list)  # every one in the wiki now
    copy_of: dict[str, str] = field(default_factory=dict)  # {conflict copy: its original}
    messages: list[str] = field(default_factory=list)  # the server's `remote:` lines
    upstream: str | None = None  # the remote's branch it synced with
    upstream_gone: str | None = None  # the one it synced with before, deleted or renamed
    left_out: list[str] = field(default_factory=list)  # the remote's paths git refuses

    @property
    def other_tools_copies(self) -> list[str]:
        """The conflict copies that another sync tool made (Dropbox, Syncthing, iCloud)."""
        return [c for c in self.conflict_copies if not COPY_RE.match(PurePosixPath(c).name)]

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
            "changes": [c.to_dict() for c in self.changes],
            "not_committed": [dict(p) for p in self.not_committed],
            "committed_invalid": [dict(p) for p in self.committed_invalid],
            "conflict_copies": list(self.conflict_copies),
            "copy_of": dict(self.copy_of),
            "messages": list(self.messages),
            "upstream": self.upstream,
            "upstream_gone": self.upstream_gone,
            "left_out": list(self.left_out),
        }


def _noop(_: str) -> None:
    pass


# ---------------------------------------------------------------- the journal


def _journal_path(wiki) -> Path:
    return wiki.sidecar / JOURNAL


def _write_journal(wiki, data: dict) -> None:
    atomic_write_text(_journal_path(wiki), json.dumps(data) + "\n")


def _read_journal(wiki) -> dict | None:
    try:
        data = json.loads(_journal_path(wiki).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recover(wiki) -> None:
    """Finish what a killed sync left half done (called holding both locks)."""
    data = _read_journal(wiki)
    if data is not None and isinstance(data.get("started"), int | float):
        gitlocks.remove_stale(wiki.repo, float(data["started"]))
    update.recover(wiki.repo, update.journal_path(wiki.sidecar))
    _journal_path(wiki).unlink(missing_ok=True)


# ---------------------------------------------------------------- sync


def _merge_message(remote: str, upstream: str, conflicts: list[Conflict]) -> str:
    return merge_message(
        f"memwiki sync: merge {remote}/{upstream}", [c.to_dict() for c in conflicts]
    )


def _without_sidecar(repo, ours, theirs, target, where: str, parents=None):
    """target, or a merge like it without .memwiki/ when another device committed its sidecar.

    Checking such a tree out would overwrite this device's own sidecar (locks, journal).
    parents: of the new commit (ours and theirs unless given).
    """
    commit = repo[target].peel(pygit2.Commit)
    if gitstore.SIDECAR_PREFIX.rstrip("/") not in commit.tree:
        return target
    index = pygit2.Index()
    index.read_tree(commit.tree)
    for path in [e.path for e in index if e.path.startswith(gitstore.SIDECAR_PREFIX)]:
        index.remove(path)
    sig = gitstore.signature(repo)
    if target == theirs.id:  # was a fast-forward: now a merge, so the sidecar stays out
        message = merge_message(f"memwiki sync: merge {where}", [])
    else:
        message = commit.message
    message = message.rstrip("\n") + "\n\nLeft out: .memwiki/ (never committed)\n"
    tree = index.write_tree(repo)
    parents = parents if parents is not None else [ours.id, theirs.id]
    return repo.create_commit(None, sig, sig, message, tree, parents)


def _untracked_upstream(repo, ours, target) -> dict[str, bytes]:
    """Files the update deletes, as they are on disk: maybe another device untracked them."""
    kept = {}
    for rel, how in update.changed_files(repo, ours.tree, target.peel(pygit2.Commit).tree).items():
        if how == "D":
            path = Path(repo.workdir) / rel
            if path.is_file() and not path.is_symlink():
                kept[rel] = path.read_bytes()
    return kept


def _put_back(wiki, repo, kept: dict[str, bytes]) -> None:
    """A file another device stopped tracking (`memwiki untrack-ignored`) stays on this one."""
    from ..fsutil import atomic_write_bytes

    for rel, data in kept.items():
        path = wiki.root / rel
        if not path.exists() and repo.path_is_ignored(rel):
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)


def _integrate(wiki, config, result: SyncResult, tracking: str, upstream: str, checkpoint, before):
    """Commit hand edits, then bring the remote's commits in (fast-forward or merge); again
    when a file saved meanwhile refuses the checkout (update.again_if_saved_meanwhile).

    before: the remote branch as this sync found it before fetching (rewritten.py).
    """

    def attempt() -> None:
        edits = hand_edits.commit_hand_edits(wiki, config)
        result.not_committed = edits.held
        if edits.committed:
            result.committed = edits.committed  # the last one, when a save made a second
            result.changes += edits.changes
            result.committed_invalid += edits.committed_invalid
        checkpoint("committed")
        _merge_in(wiki, result, (tracking, before), upstream, edits.skip, checkpoint)

    update.again_if_saved_meanwhile(attempt)


def _refuse_held_back(result: SyncResult, skip: set[str], changed: dict[str, str]) -> None:
    """StorageError naming the held-back files the remote changed: a retry cannot help."""
    blocked = sorted(skip & changed.keys())
    if not blocked:
        return  # a file saved meanwhile: the caller commits it and tries again
    why = {p["path"]: p["problem"] for p in result.not_committed}
    names = ", ".join(f"{p} ({why.get(p, 'renamed')})" for p in blocked)
    it = "it" if len(blocked) == 1 else "them"
    raise StorageError(
        f"the remote changed {names}, held back here: fix {it} and run `memwiki sync` again"
    )


def _merge_in(wiki, result: SyncResult, remote_branch, upstream: str, skip: set[str], checkpoint):
    """Fast-forward or merge the branch to the remote's commits and check the files out;
    on a rewritten remote branch, this device's changes are replayed on it instead."""
    repo = wiki.repo
    tracking, before = remote_branch
    ref_name, ours = current_branch_head(repo)
    theirs = lookup(repo, tracking)
    if theirs is None:
        return
    where = f"{result.remote}/{upstream}"
    base = rewritten.last_synced(repo, tracking, before, ours.id)
    rewrite = rewritten.dropped(repo, theirs.id, base)
    if not rewrite and (theirs.id == ours.id or repo.descendant_of(ours.id, theirs.id)):
        return
    fetched_tip = theirs.id
    theirs, result.left_out = refused_paths.left_out(repo, ours, theirs)
    parents = None
    conflicts: list[Conflict] = []
    if rewrite:
        if not rewritten.rewritten_from(repo, theirs.id, base):
            raise StateError(
                f"{where} has no history in common with what this device synced last "
                "(was the remote replaced by another repository?): nothing was changed or "
                f"pushed; to merge the two on purpose run `git merge --allow-unrelated-histories "
                f"{where}` in the wiki, then `memwiki sync`, or `memwiki clone` the remote afresh"
            )
        # A merge would bring the commits the remote dropped back (a removed secret too).
        target, conflicts, _ = rewritten.replay(repo, ours, theirs, repo[base], LABEL, where)
        kind, parents = "rewritten", [theirs.id]
    elif repo.descendant_of(theirs.id, ours.id):
        target, kind = theirs.id, "fast-forward"
    else:
        target, conflicts = make_merge_commit(
            repo, ours, theirs, LABEL, lambda found: _merge_message(result.remote, upstream, found)
        )
        kind = "merge"
    cleaned = _without_sidecar(repo, ours, theirs, target, where, parents)
    if cleaned != target:
        target, kind = cleaned, kind if kind == "rewritten" else "merge"
    journal = update.journal_path(wiki.sidecar)
    update.record(journal, ref_name, ours.id, target)
    checkpoint("merge-made")
    in_the_way = (
        "wiki files kept being edited while sync was updating them; nothing was lost: "
        "run `memwiki sync` again"
    )
    kept = _untracked_upstream(repo, ours, repo[target])
    message = f"memwiki sync: {kind} {tracking}"
    try:
        update.apply(repo, journal, ref_name, target, message, in_the_way, checkpoint)
    except update.CheckoutRefused:
        _refuse_held_back(result, skip, update.changed_files(repo, ours.tree, repo[target].tree))
        raise
    _put_back(wiki, repo, kept)
    walker = repo.walk(fetched_tip)
    walker.hide(ours.id)
    result.fetched += sum(1 for _ in walker)
    result.merged = next(k for k in ("rewritten", "merge", kind) if k in (kind, result.merged))
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
    get_remote(repo, remote)
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
            # The network first: a remote that cannot be reached (or a wrong key) stops the
            # sync before anything in the wiki changes; hand edits are committed right after.
            known = rewritten.tracking_values(repo, remote)
            result.messages += network.fetch(repo, remote, config)
            was = upstream_branch(repo, branch, remote)
            had = f"refs/remotes/{remote}/{was}" in known
            with wiki.write_lock():  # may record a renamed upstream in .git/config
                upstream = fetched_upstream(
                    repo, branch, remote, known.get(f"refs/remotes/{remote}/{was}")
                )
            result.upstream = upstream
            if had and upstream != was:
                result.upstream_gone = was
            tracking = f"refs/remotes/{remote}/{upstream}"
            checkpoint("fetched")
            # What the sync reports is the commit it left on both sides, read before the
            # lock is let go: an agent's commit right after it is the next sync's. Bug it
            # prevents: the branch was read for the report after the push, so an `add` or
            # memorize commit landing meanwhile was reported as synced, though never pushed.
            while True:
                with wiki.write_lock():
                    before = known.get(tracking)
                    _integrate(wiki, config, result, tracking, upstream, checkpoint, before)
                    synced = repo.references[ref_name].target
                checkpoint("integrated")
                theirs = lookup(repo, tracking)
                if theirs is not None and theirs.id == synced:
                    break
                if _before_push is not None:
                    _before_push()
                # The push sends the branch as it is then: this commit or one after it.
                synced = repo.references[ref_name].target
                outcome = network.push(repo, remote, ref_name, upstream, config)
                result.messages += outcome.messages
                if outcome.pushed:
                    result.pushed = True
                    checkpoint("pushed")
                    break
                if result.retries >= MAX_PUSH_RETRIES:
                    raise StateError(
                        f"{remote} kept moving: the push was refused {result.retries + 1} "
                        "times because other devices pushed first; run `memwiki sync` again"
                    )
                result.retries += 1
                known = rewritten.tracking_values(repo, remote)
                result.messages += network.fetch(repo, remote, config)
            with wiki.write_lock():
                set_upstream(repo, branch, remote, upstream)
            result.commit = str(synced)
            # A copy git ignores (one moved to Obsidian's .trash/) is resolved, not pending.
            copies = copies_in(wiki.root)
            result.copy_of = {c: o for c, o in copies.items() if not repo.path_is_ignored(c)}
            result.conflict_copies = list(result.copy_of)
        except MemwikiError:
            # A handled failure leaves the wiki consistent: nothing for the next sync to finish.
            _journal_path(wiki).unlink(missing_ok=True)
            raise
        # Anything else (Ctrl-C between checkout and ref update, a bug) keeps the journal,
        # exactly like a kill, so that the next sync finishes the job.
    _journal_path(wiki).unlink(missing_ok=True)
    return result
