"""memorize commit: validate the executor's edits, commit them on the run branch, merge, clean up.

Every step records its outcome in run.json before the next one starts, so a process
killed anywhere can run `commit` again: it finishes the job without committing twice.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from ..errors import StateError
from ..git import merge, update
from ..git import repo as gitstore
from ..git.changes import Changes, commit_message
from ..git.changes import merge_message as build_merge_message
from . import hand_edits, resources, runstate, worktrees
from .runstate import COMMITTED, COMMITTING, MERGING, PREPARED, WORKSPACE, RunState
from .touched import RESOURCES_DIR
from .validate import RunInvalid, check, stage_changes, stamp, unstage, workspace_secrets

if TYPE_CHECKING:
    from ..wiki import Wiki

Checkpoint = Callable[[str], None]
Reindex = Callable[[], None]


@dataclass
class RunCommitResult:
    """What a run's commit did to the wiki."""

    run_id: str
    commit: str | None  # the merge commit on the wiki's branch; None when nothing changed
    created: list[str]
    updated: list[str]
    deleted: list[str]
    conflicts: list[dict[str, Any]]
    run_commit: str | None = None
    already_committed: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the `memorize commit --json` schema)."""
        return {
            "run_id": self.run_id,
            "commit": self.commit,
            "created": list(self.created),
            "updated": list(self.updated),
            "deleted": list(self.deleted),
            "conflicts": [dict(c) for c in self.conflicts],
            "run_commit": self.run_commit,
            "already_committed": self.already_committed,
            "warnings": list(self.warnings),
        }


def _noop(_: str) -> None:
    pass


def _trailers(state: RunState) -> str:
    sessions = ", ".join(state.source_ids) or "none"
    return f"Memwiki-Run: {state.run_id}\n{runstate.SESSIONS_TRAILER}{sessions}\n"


def run_commit_message(state: RunState, changes: Changes) -> str:
    """Subject naming what changed, a body listing every path, then the trailers."""
    prefix = f"memorize run {state.run_id}"
    return commit_message(prefix, changes, list_always=True, trailers=_trailers(state))


def merge_message(state: RunState, conflicts: list[dict[str, Any]]) -> str:
    """The merge commit's message: what it merges, the conflict copies it made, the trailers."""
    return build_merge_message(f"memorize: merge run {state.run_id}", conflicts, _trailers(state))


def _result(state: RunState, already: bool = False) -> RunCommitResult:
    # A path whose run version went to a conflict copy was not created or updated in the
    # wiki: only the copy was (reported under conflicts), so do not say "updated" for it.
    copied = {c["path"] for c in state.conflicts if c.get("copy")}
    return RunCommitResult(
        run_id=state.run_id,
        commit=state.merge_commit,
        created=[p for p in state.created_files if p not in copied],
        updated=[p for p in state.updated_files if p not in copied],
        deleted=list(state.deleted_files),
        conflicts=[dict(c) for c in state.conflicts],
        run_commit=state.run_commit,
        already_committed=already,
    )


def cleanup(repo: pygit2.Repository, run_id: str, directory: Path) -> None:
    """Remove the worktree, the branch and the run's files; run.json stays as the record."""
    worktrees.remove(repo, run_id, directory / WORKSPACE)
    # resources/: the touched-file lists and the descriptions merged into project/<slug>.md
    # (a few KB a run, kept for good before, one folder a day for a daily run)
    for name in ("transcripts", "jobs", RESOURCES_DIR):
        shutil.rmtree(directory / name, ignore_errors=True)
    (directory / "EXECUTOR.md").unlink(missing_ok=True)


def _finish(
    repo: pygit2.Repository, state: RunState, directory: Path, checkpoint: Checkpoint
) -> None:
    state.phase = COMMITTED
    runstate.save_state(directory, state)
    checkpoint("recorded")
    cleanup(repo, state.run_id, directory)


def _recover(
    repo: pygit2.Repository, ref_name: str, state: RunState, directory: Path
) -> RunCommitResult | None:
    """Finish a run whose merge already happened (a crash, a retry); None if it has not."""
    head = repo.references[ref_name].target
    if state.run_commit is None or not worktrees.is_merged(repo, state.run_commit, head):
        return None
    if not (state.merge_commit and worktrees.is_merged(repo, state.merge_commit, head)):
        # Merged some other way (by hand, or our merge commit was lost): find the merge.
        state.merge_commit = merge.find_merge_of(repo, state.run_commit, head) or state.run_commit
        state.conflicts = []
    _finish(repo, state, directory, _noop)
    return _result(state, already=True)


def _commit_run_branch(
    wiki: Wiki, state: RunState, directory: Path, checkpoint: Checkpoint
) -> bool:
    """Validate and commit the workspace on the run branch; False when nothing changed."""
    workspace = directory / WORKSPACE
    if not workspace.is_dir():
        raise StateError(
            f"run {state.run_id} has lost its workspace: discard it with "
            f"`memwiki memorize discard {state.run_id}`"
        )
    wrepo = worktrees.open_workspace(workspace)
    if wrepo.head_is_detached or wrepo.head.name != f"refs/heads/{state.branch}":
        raise StateError(f"run {state.run_id}: the workspace is no longer on {state.branch}")
    try:
        base = wiki.repo[state.base_commit].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise StateError(
            f"run {state.run_id}: its base commit {state.base_commit} is no longer in the wiki"
        ) from None
    # The resource job's described files go into project/<slug>.md first (resources.py).
    resources.merge_run(directory, workspace)
    secrets, scanned = workspace_secrets(wrepo, base)
    if secrets:  # before staging: a refused secret is never written into .git/objects
        raise RunInvalid(state.run_id, secrets)
    changes = stage_changes(wrepo, base)
    problems = check(wrepo, changes, base, scanned)
    if problems:
        unstage(wrepo)
        raise RunInvalid(state.run_id, problems)
    if not changes:
        return False
    stamp(wrepo, changes, runstate.now_iso())
    gitstore.stage_all(wrepo)
    state.created_files, state.updated_files = changes.created, changes.updated
    state.deleted_files = changes.deleted
    state.run_commit = gitstore.commit_index(wrepo, run_commit_message(state, changes))
    state.phase = COMMITTING
    runstate.save_state(directory, state)
    checkpoint("run-committed")
    return True


def _commit_locked(
    wiki: Wiki, run_id: str, directory: Path, checkpoint: Checkpoint
) -> RunCommitResult:
    state = runstate.load_state(directory)
    if state is None or state.phase == runstate.PREPARING:
        raise StateError(
            f"run {run_id} is incomplete (its prepare did not finish): "
            f"discard it with `memwiki memorize discard {run_id}`"
        )
    repo = wiki.repo
    if state.phase == COMMITTED:
        cleanup(repo, run_id, directory)
        return _result(state, already=True)
    journal = update.journal_path(wiki.sidecar)
    update.recover(repo, journal)  # a merge killed between checkout and ref update
    ref_name, _ = merge.current_branch_head(repo)
    recovered = _recover(repo, ref_name, state, directory)
    if recovered is not None:
        return recovered
    if state.phase == PREPARED and not _commit_run_branch(wiki, state, directory, checkpoint):
        state.merge_commit = None
        _finish(repo, state, directory, checkpoint)
        return _result(state)
    # A note saved between the hand-edit commit and the checkout: committed, merged again.
    return update.again_if_saved_meanwhile(
        lambda: _merge_run(wiki, state, directory, journal, checkpoint)
    )


def _merge_run(
    wiki: Wiki, state: RunState, directory: Path, journal: Path, checkpoint: Checkpoint
) -> RunCommitResult:
    """Commit the wiki's hand edits, merge the run branch into the wiki's, check it out."""
    repo, run_id = wiki.repo, state.run_id
    # Hand edits made in the wiki while the run was open are committed first, so the
    # merge below sees them; what a person staged, or lint rejects, stays as it is.
    left, pending = hand_edits.left_alone(repo)
    assert state.run_commit is not None
    hand_edits.refuse_overlap(repo, run_id, state.base_commit, state.run_commit, left)
    hand_edits.commit(repo, pending)
    warnings = hand_edits.warnings(left)
    checkpoint("hand-edits-committed")
    ref_name, head = merge.current_branch_head(repo)
    if worktrees.is_merged(repo, state.run_commit, head.id):
        recovered = _recover(repo, ref_name, state, directory)
        assert recovered is not None
        return recovered
    theirs = repo[state.run_commit].peel(pygit2.Commit)
    oid, conflicts = merge.make_merge_commit(
        repo,
        head,
        theirs,
        f"run-{run_id}",
        lambda found: merge_message(state, [c.to_dict() for c in found]),
    )
    state.conflicts = [c.to_dict() for c in conflicts]
    state.merge_commit = str(oid)
    state.phase = MERGING
    runstate.save_state(directory, state)
    update.record(journal, ref_name, head.id, oid)
    checkpoint("merge-made")
    refused = f"wiki files kept changing while run {run_id} was merging; run commit again"
    update.apply(repo, journal, ref_name, oid, f"memwiki: merge run {run_id}", refused)
    checkpoint("merged")
    _finish(repo, state, directory, checkpoint)
    result = _result(state)
    result.warnings.extend(warnings)
    return result


def commit(
    wiki: Wiki,
    run_id: str,
    reindex: Reindex | None = None,
    *,
    _checkpoint: Checkpoint | None = None,
) -> RunCommitResult:
    """Validate, commit and merge a run into the wiki's branch, then reindex and clean up."""
    checkpoint = _checkpoint or _noop
    directory = runstate.require_run_dir(wiki.sidecar, run_id)
    with wiki.write_lock():
        result = _commit_locked(wiki, run_id, directory, checkpoint)
    if reindex is not None and result.commit is not None:
        try:
            reindex()
        except Exception as exc:  # the index is a cache: the next retrieve repairs it
            result.warnings.append(f"reindex failed ({exc}); the next retrieve will catch up")
    return result
