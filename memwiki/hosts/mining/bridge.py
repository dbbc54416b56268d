"""`memwiki bridge prepare/commit --host H`: a host's new session slices as one memorize run.

The cursor lives in <wiki>/.memwiki/hosts/<host>/ (see cursors.py). prepare records the
bridging run's own session as claimed, slices what is new since the committed cursor,
opens a memorize run for the memorizable slices and saves the advanced cursor as
pending.json together with the run id. commit merges the run and only then promotes the
pending cursor, so a failed commit offers exactly the same content to the retry.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import memorize
from ...config import Config
from ...errors import InvalidInput, NotFound
from ...lock import FileLock
from ...memorize import runstate
from ...memorize.schema import MAX_PAYLOADS, Session, validate_payload
from ..executable import memwiki_command
from .base import SessionSlice, host_module
from .collect import collect_new_sessions, self_session_ids, self_session_warning
from .cursors import (
    CURSOR_FILE,
    PENDING_FILE,
    RUN_KEY,
    advance_cursor,
    claim_sessions,
    discard_pending,
    load_cursor,
    promote_pending,
    save_cursor,
)

if TYPE_CHECKING:
    from ...wiki import Wiki

BRIDGE_COMMIT = "memwiki bridge commit --host {host} --json"
OPEN_STATES = ("prepared", "edited")


@dataclass
class BridgePrepareResult:
    """What bridge prepare found and, unless nothing was new, the run it opened."""

    host: str
    nothing_new: bool
    run: dict[str, Any] | None = None  # the memorize prepare result (run_id, jobs, ...)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    resumed: bool = False  # the pending run of an earlier prepare, offered again
    advanced: int = 0  # streams that grew without a new message (cursor moved, no job)
    claimed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str | None:
        """The pending run's id, or None when nothing was new."""
        return self.run["run_id"] if self.run else None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the `bridge prepare --json` schema)."""
        run = self.run or {}
        return {
            "host": self.host,
            "nothing_new": self.nothing_new,
            "resumed": self.resumed,
            "run_id": self.run_id,
            "workspace": run.get("workspace"),
            "jobs": list(run.get("jobs", [])),
            "executor_prompt": run.get("executor_prompt"),
            "next_command": run.get("next_command"),
            # A run an older memwiki left pending has no project/touched: null, as for others.
            "transcripts": [
                {"project": None, "touched": None, **t} for t in run.get("transcripts", [])
            ],
            "redactions": dict(run.get("redactions", {})),
            "sessions": [dict(s) for s in self.sessions],
            "advanced": self.advanced,
            "claimed": list(self.claimed),
            "warnings": list(self.warnings),
        }


@dataclass
class BridgeCommitResult:
    """The memorize commit of the pending run, and whether the cursor moved forward."""

    host: str
    commit: memorize.RunCommitResult
    cursor_advanced: bool
    sessions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the memorize commit schema plus host, sessions and cursor_advanced."""
        return {
            "host": self.host,
            **self.commit.to_dict(),
            "sessions": [dict(s) for s in self.sessions],
            "cursor_advanced": self.cursor_advanced,
        }


def state_dir(wiki: Wiki, host: str) -> Path:
    """<wiki>/.memwiki/hosts/<host>/."""
    return wiki.sidecar / "hosts" / host


def _lock(directory: Path) -> FileLock:
    # One bridge step per host at a time: prepare and commit both rewrite the cursor files.
    return FileLock(directory / "bridge.lock", timeout=60)


def to_session(host: str, sl: SessionSlice) -> Session:
    """A validated memorize Session for one memorizable slice."""
    label = sl.source_path
    items = validate_payload(sl.session, label)
    digest = hashlib.sha256(
        json.dumps(sl.session, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    return Session(label=label, source_id=f"{host}:{sl.session_id}", sha256=digest, items=items)


def _summary(sl: SessionSlice, project: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "session_id": sl.session_id,
        "key": sl.key,
        "source_path": sl.source_path,
        "counts": dict(sl.counts),
        "project": project["project"] if project else None,
    }


def session_project(
    sl: SessionSlice, config: Config, wiki_root: Path | None = None
) -> dict[str, Any] | None:
    """The project a slice's session worked in, from its working directory (or None).

    A session in the wiki itself (editing memory) worked in no code project.
    """
    from ...project import code_project, parse_map

    if not sl.cwd or not os.path.isabs(sl.cwd):
        # A relative path (`.`, a Windows `C:\\work\\shop` in a synced log) would be read
        # against this process's directory and name the project bridge runs in.
        return None
    found = code_project(sl.cwd, parse_map(config.projects), config.home, wiki_root)
    return {"project": found.slug, "root": found.root, "cwd": sl.cwd} if found else None


def commit_command(host: str, wiki_option: str | None = None) -> str:
    """The command the executor prompt names as the next step (braces escaped for format).

    memwiki is named by its absolute path: a scheduled agent runs it (and the resource
    job's verify-resources, derived from it) in a login shell whose PATH lacks a venv.
    """
    command = BRIDGE_COMMIT.format(host=host).replace("memwiki ", f"{memwiki_command()} ", 1)
    if wiki_option:
        command = command.replace(" bridge ", f" --wiki {wiki_option} bridge ", 1)
    return command.replace("{", "{{").replace("}", "}}")


def pending_run_id(wiki: Wiki, host: str) -> str | None:
    """The run id the host's pending cursor waits for, or None."""
    path = state_dir(wiki, host) / PENDING_FILE
    record = load_cursor(path).get(RUN_KEY) if path.is_file() else None
    return (record or {}).get("run_id")


def _settle_pending(wiki: Wiki, host: str, directory: Path) -> BridgePrepareResult | None:
    """Deal with a run an earlier prepare left: offer it again, or clear it when it is over."""
    pending = (
        load_cursor(directory / PENDING_FILE) if (directory / PENDING_FILE).is_file() else None
    )
    if pending is None:
        return None
    record = pending.get(RUN_KEY) or {}
    run_id = record.get("run_id")
    if not run_id:
        discard_pending(directory)
        return None
    try:
        [status] = memorize.status(wiki, run_id)
    except NotFound:  # discarded with `memwiki memorize discard`: offer the sessions anew
        discard_pending(directory)
        return None
    if status.state in OPEN_STATES and record.get("workspace"):
        return BridgePrepareResult(
            host, False, run=record, sessions=record.get("sessions", []), resumed=True
        )
    if status.state == "committed":
        # Committed by hand (`memorize commit`) or by a commit that died before the cursor
        # moved: finish the run's cleanup and take the cursor forward.
        memorize.commit(wiki, run_id)
        promote_pending(directory)
        return None
    memorize.discard(wiki, run_id)  # a prepare killed half-way: nothing to keep
    discard_pending(directory)
    return None


def bridge_prepare(
    wiki: Wiki,
    host: str,
    config: Config,
    session_dir: Path | None = None,
    max_sessions: int = MAX_PAYLOADS,
    wiki_option: str | None = None,
) -> BridgePrepareResult:
    """Slice the host's new sessions into one memorize run (or report that nothing is new)."""
    host_module(host)
    if not 1 <= max_sessions <= MAX_PAYLOADS:
        raise InvalidInput(f"--max-sessions must be 1 to {MAX_PAYLOADS}, got {max_sessions}")
    directory = state_dir(wiki, host)
    warnings = [w for w in [self_session_warning(config, host)] if w]
    with _lock(directory):
        self_ids = sorted(self_session_ids(config, host))
        state = load_cursor(directory / CURSOR_FILE)
        if self_ids:
            # Claims persist at once, even if this run fails: its session must never be mined.
            state = claim_sessions(state, self_ids)
            save_cursor(directory / CURSOR_FILE, state)
        resumed = _settle_pending(wiki, host, directory)
        if resumed is not None:
            resumed.claimed, resumed.warnings = self_ids, warnings
            return resumed
        state = load_cursor(directory / CURSOR_FILE)
        slices = collect_new_sessions(
            host,
            config,
            state,
            session_dir,
            max_sessions,
            skip_session_ids=self_ids,
            warnings=warnings,
        )
        chosen = [sl for sl in slices if sl.memorizable][:max_sessions]
        advanced = len(slices) - len(chosen)
        if not chosen:
            if slices:
                # Only tool activity or dropped records are new: nothing to memorize, but the
                # cursor may move now so that they are not read again.
                save_cursor(directory / CURSOR_FILE, advance_cursor(state, slices))
            return BridgePrepareResult(
                host, True, advanced=advanced, claimed=self_ids, warnings=warnings
            )
        sessions = [to_session(host, sl) for sl in chosen]
        projects = [session_project(sl, config, wiki.root) for sl in chosen]
        summaries = [_summary(sl, p) for sl, p in zip(chosen, projects, strict=True)]
        run_id = runstate.new_run_id()
        pending = advance_cursor(state, slices)
        # The run id is saved before the run exists: a prepare killed in between leaves a
        # pending record without a run, which the next prepare recognises and clears.
        pending[RUN_KEY] = {"run_id": run_id, "sessions": summaries}
        save_cursor(directory / PENDING_FILE, pending)
        try:
            prepared = memorize.prepare_sessions(
                wiki,
                sessions,
                run_id=run_id,
                commit_command=commit_command(host, wiki_option),
                projects=projects,
            )
        except BaseException:
            discard_pending(directory)
            raise
        pending[RUN_KEY] = {**prepared.to_dict(), "sessions": summaries}
        save_cursor(directory / PENDING_FILE, pending)
    return BridgePrepareResult(
        host,
        False,
        run=pending[RUN_KEY],
        sessions=summaries,
        advanced=advanced,
        claimed=self_ids,
        warnings=warnings,
    )


def bridge_commit(
    wiki: Wiki, host: str, config: Config, reindex: Callable[[], None] | None = None
) -> BridgeCommitResult:
    """Commit the host's pending run, then promote its cursor (a failure keeps both)."""
    host_module(host)
    directory = state_dir(wiki, host)
    with _lock(directory):
        run_id = pending_run_id(wiki, host)
        if not run_id:
            discard_pending(directory)
            raise NotFound(
                f"no pending bridge run for {host}: run `memwiki bridge prepare --host {host}`"
            )
        sessions = load_cursor(directory / PENDING_FILE)[RUN_KEY].get("sessions", [])
        try:
            result = memorize.commit(wiki, run_id, reindex=reindex)
        except NotFound:
            discard_pending(directory)
            raise NotFound(
                f"the pending run {run_id} of {host} was discarded; the next "
                f"`memwiki bridge prepare --host {host}` offers its sessions again"
            ) from None
        advanced = promote_pending(directory)
    return BridgeCommitResult(host, result, advanced, sessions=sessions)
