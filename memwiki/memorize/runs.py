"""Runs as a whole: their status, and discarding them (prepare and commit have modules of their own).

The public lifecycle is `memwiki.memorize.prepare/commit/discard/status` (defined in
prepare_run, commit_run and here); see docs/memorize.md for the run layout, the states
and recovery.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from ..errors import MemwikiError, NotFound
from . import memorized, runstate, worktrees
from .runstate import WORKSPACE

if TYPE_CHECKING:
    from ..wiki import Wiki

__all__ = ["DiscardResult", "RunStatus", "discard", "status"]

PREPARED = "prepared"
EDITED = "edited"
COMMITTED = "committed"
INCOMPLETE = "incomplete"


@dataclass
class RunStatus:
    """One run as `memorize status` shows it."""

    run_id: str
    state: str  # prepared | edited | committed | incomplete
    detail: str = ""
    created: str | None = None
    updated: str | None = None
    workspace: str | None = None
    sessions: list[str] = field(default_factory=list)
    jobs: int = 0
    changed: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the `memorize status --json` schema: a list of these)."""
        return {
            "run_id": self.run_id,
            "state": self.state,
            "detail": self.detail,
            "created": self.created,
            "updated": self.updated,
            "workspace": self.workspace,
            "sessions": list(self.sessions),
            "jobs": self.jobs,
            "changed": list(self.changed),
            "commit": self.commit,
        }


@dataclass
class DiscardResult:
    """What discard removed."""

    run_id: str
    state: str  # the state the run was in

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"run_id": self.run_id, "discarded": True, "state": self.state}


def _workspace_changes(workspace: Path, base: str | None) -> list[str]:
    """Paths the executor changed so far (read-only: nothing is staged)."""
    wrepo = worktrees.open_workspace(workspace)
    changed = {
        path for path, flags in wrepo.status().items() if not flags & pygit2.GIT_STATUS_IGNORED
    }
    if base is not None and not wrepo.head_is_unborn and str(wrepo.head.target) != base:
        # The executor committed in the workspace itself; those changes count too.
        diff = wrepo.diff(base, str(wrepo.head.target))
        changed.update(d.new_file.path for d in diff.deltas)
    return sorted(changed)


def _status_of(wiki: Wiki, run_id: str, directory: Path | None = None) -> RunStatus:
    directory = directory or runstate.run_dir(wiki.sidecar, run_id)
    try:
        state = runstate.load_state(directory) if directory.is_dir() else None
    except runstate.DamagedRun as exc:
        # Listed, and discard still removes it: a damaged run.json used to stop `status`
        # for every run and left discard unable to remove the run.
        return RunStatus(run_id, INCOMPLETE, f"{exc.why}: discard it")
    if state is None:
        detail = "prepare did not finish" if directory.is_dir() else "branch without a run"
        return RunStatus(run_id, INCOMPLETE, detail)
    out = RunStatus(
        run_id,
        PREPARED,
        created=state.created,
        updated=state.updated,
        workspace=str(directory / WORKSPACE),
        sessions=state.source_ids,
        jobs=len(state.jobs),
        commit=state.merge_commit,
    )
    if state.phase == runstate.PREPARING:
        out.state, out.detail = INCOMPLETE, "prepare did not finish"
        return out
    if state.phase == runstate.COMMITTED:
        out.state, out.workspace = COMMITTED, None
        out.changed = sorted(state.created_files + state.updated_files + state.deleted_files)
        out.detail = "nothing to commit" if state.merge_commit is None else ""
        return out
    if state.phase in (runstate.COMMITTING, runstate.MERGING):
        out.state = EDITED
        out.changed = sorted(state.created_files + state.updated_files + state.deleted_files)
        head = wiki.repo.head.target if not wiki.repo.head_is_unborn else None
        if head is not None and worktrees.is_merged(wiki.repo, state.run_commit or "", head):
            out.state, out.detail = COMMITTED, "merged; run commit again to clean up"
        else:
            out.detail = "interrupted commit: run commit again to finish"
        return out
    workspace = directory / WORKSPACE
    if not workspace.is_dir():
        out.state, out.detail = INCOMPLETE, "workspace is missing"
        return out
    try:
        out.changed = _workspace_changes(workspace, state.base_commit)
    except MemwikiError as exc:
        out.state, out.detail = INCOMPLETE, f"workspace is broken: {exc.message}"
        return out
    if out.changed:
        out.state = EDITED
    return out


def status(wiki: Wiki, run_id: str | None = None) -> list[RunStatus]:
    """Every run (or one) with its state: prepared, edited, committed or incomplete."""
    if run_id is not None:
        directory = runstate.run_dir(wiki.sidecar, run_id)
        known = directory.is_dir() or run_id in worktrees.run_ids_with_branches(wiki.repo)
        if not known:
            raise NotFound(f"no memorize run {run_id!r} (see `memwiki memorize status`)")
        return [_status_of(wiki, run_id)]
    # Listed here, so a run's folder needs no check that its id leads into runs/ (half of
    # the time at 3,000 records); a symbolic link there is no run's folder. Plain strings,
    # not Paths: pathlib's joins cost more than the stats.
    folders: dict[str, str | None] = dict.fromkeys(worktrees.run_ids_with_branches(wiki.repo))
    with contextlib.suppress(OSError):
        for e in os.scandir(runstate.runs_root(wiki.sidecar)):
            if e.is_dir(follow_symlinks=False) and runstate.RUN_ID_RE.match(e.name):
                folders[e.name] = e.path
    # A committed record is read from the summary prepare keeps (memorized.py) while it is
    # still the same file: status read every record on every call (~280 ms at 3,000).
    cached = memorized.committed_records(wiki.sidecar)
    out = []
    for rid, folder in sorted(folders.items()):
        entry = cached.get(rid)
        if entry is not None and folder is not None and memorized.unchanged(folder, entry):
            out.append(_committed(rid, entry))
        else:
            out.append(_status_of(wiki, rid, Path(folder) if folder else None))
    return out


def _committed(run_id: str, entry: dict[str, Any]) -> RunStatus:
    """A committed run's status from its cached summary (the same as its record gives)."""
    return RunStatus(
        run_id,
        COMMITTED,
        "nothing to commit" if entry["commit"] is None else "",
        created=entry["created"],
        updated=entry["updated"],
        sessions=list(entry["sessions"]),
        jobs=entry["jobs"],
        changed=list(entry["files"]),
        commit=entry["commit"],
    )


def discard(wiki: Wiki, run_id: str) -> DiscardResult:
    """Throw a run away: its worktree, branch and files (also an incomplete or committed one)."""
    directory = runstate.run_dir(wiki.sidecar, run_id)
    repo = wiki.repo
    has_git = run_id in worktrees.run_ids_with_branches(repo) or run_id in repo.list_worktrees()
    if not directory.is_dir() and not has_git:
        raise NotFound(f"no memorize run {run_id!r} (see `memwiki memorize status`)")
    with wiki.write_lock():
        before = _status_of(wiki, run_id).state
        worktrees.remove(repo, run_id, directory / WORKSPACE)
        shutil.rmtree(directory, ignore_errors=True)
    return DiscardResult(run_id, before)
