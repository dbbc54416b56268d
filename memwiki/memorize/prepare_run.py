"""memorize prepare: validate sessions, open a run (branch + worktree), write transcripts and jobs."""

from __future__ import annotations

import contextlib
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import recallfile as rfmod
from ..errors import InvalidInput, StateError
from ..fsutil import atomic_write_text
from ..git.merge import current_branch_head
from ..lock import FileLock
from . import runstate, templates, transcripts, worktrees
from .runstate import PREPARED, PREPARING, WORKSPACE, RunState
from .schema import MAX_PAYLOADS, Session, load_sessions
from .scrub import ScrubbedSession, scrub_session
from .touched import RESOURCES_DIR, write_touched_log

if TYPE_CHECKING:
    from ..wiki import Wiki

Checkpoint = Callable[[str], None]
COMMIT_COMMAND = "memwiki memorize commit {run_id} --json"
VERIFY_COMMAND = "memorize verify-resources {run_id}"
# A job lists at most this many existing files; beyond that the executor reads the folder.
MAX_LISTED = 300
# One prepare at a time opens runs (not the wiki's write lock: agents' writes never wait
# for scrubbing); long enough for ten large sessions to be scrubbed and written.
PREPARE_LOCK = "prepare.lock"
PREPARE_LOCK_TIMEOUT_S = 120


@dataclass
class PrepareResult:
    """What prepare made: where the executor works and what it has to do."""

    run_id: str
    workspace: str
    transcripts: list[dict[str, str | None]]
    jobs: list[str]
    executor_prompt: str
    next_command: str
    redactions: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the `memorize prepare --json` schema)."""
        return {
            "run_id": self.run_id,
            "workspace": self.workspace,
            "transcripts": [dict(t) for t in self.transcripts],
            "jobs": list(self.jobs),
            "executor_prompt": self.executor_prompt,
            "next_command": self.next_command,
            "redactions": dict(self.redactions),
        }


def _noop(_: str) -> None:
    pass


def existing_files(workspace: Path, track: str) -> str:
    """The markdown list of a track's RecallFiles (name, path, description) for a job."""
    folder = workspace / track
    paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
    if not paths:
        return "(none yet)"
    lines = []
    for path in paths[:MAX_LISTED]:
        rel = f"{track}/{path.name}"
        try:
            rf = rfmod.read(path, track, rel)
            lines.append(f"- `{rf.name}` ({rel}): {rf.description}")
        except (rfmod.InvalidRecallFile, OSError):
            lines.append(f"- `{path.stem}` ({rel}): (not a valid RecallFile; leave it alone)")
    if len(paths) > MAX_LISTED:
        lines.append(f"- … and {len(paths) - MAX_LISTED} more: list `{folder}` to see them all")
    return "\n".join(lines)


def verify_command_for(commit_command: str, run_id: str) -> str:
    """The verify-resources command, naming the wiki the way the commit command does."""
    import shlex

    try:
        words = shlex.split(commit_command)
    except ValueError:
        words = []
    prefix = words[:3] if words[1:2] == ["--wiki"] else words[:1] or ["memwiki"]
    return f"{shlex.join(prefix)} {VERIFY_COMMAND.format(run_id=run_id)}"


def _project_notes(project: dict[str, Any] | None, touched_log: Path | None) -> tuple[str, str]:
    """The project paragraph of both jobs and the skill job's touched-files paragraph."""
    if not project:
        return templates.render("project_none.md"), ""
    note = templates.render("project_session.md", project=project["project"])
    touched = templates.render(
        "skill_touched.md", project=project["project"], touched_log=touched_log
    )
    return note, touched


def _write_run_files(
    directory: Path,
    run_id: str,
    scrubbed: list[ScrubbedSession],
    command: str,
    projects: list[dict[str, Any] | None],
) -> tuple[list[dict[str, str | None]], list[str], str]:
    workspace = directory / WORKSPACE
    written: list[dict[str, str | None]] = []
    logs: list[Path | None] = []
    for number, clean in enumerate(scrubbed, start=1):
        session = clean.session
        md = directory / "transcripts" / f"session-{number:02d}-messages.md"
        full = directory / "transcripts" / f"session-{number:02d}-full.jsonl"
        atomic_write_text(md, transcripts.messages_markdown(clean, number))
        atomic_write_text(full, transcripts.full_jsonl(clean))
        project = projects[number - 1]
        log = None
        if project:
            log = write_touched_log(directory, number, session.items, project.get("cwd"))
        # project and touched are null without a project, never missing: agents index them.
        written.append(
            {"session": session.label, "source_id": session.source_id, "messages": str(md),
             "full": str(full), "project": project["project"] if project else None,
             "touched": str(log) if log else None}
        )  # fmt: skip
        logs.append(log)
    slugs = sorted({p["project"] for p in projects if p})
    total = 2 * len(scrubbed) + (1 if slugs else 0)
    listings = {t: existing_files(workspace, t) for t in ("memory", "skill")}
    jobs: list[Path] = []
    for kind, track, key in (("memory", "memory", "messages"), ("skill", "skill", "full")):
        for number, clean in enumerate(scrubbed, start=1):
            n = len(jobs) + 1
            path = directory / "jobs" / f"{n:02d}-{kind}-session-{number:02d}.md"
            note, touched = _project_notes(projects[number - 1], logs[number - 1])
            text = templates.render(
                f"{kind}_job.md",
                job_number=n,
                job_total=total,
                session_number=number,
                run_id=run_id,
                workspace=workspace,
                track_dir=workspace / track,
                transcript=written[number - 1][key],
                source_id=clean.session.source_id,
                existing_files=listings[track],
                project_note=note,
                **({"touched_note": touched} if kind == "skill" else {}),
            )
            atomic_write_text(path, text)
            jobs.append(path)
    if slugs:
        n = len(jobs) + 1
        path = directory / "jobs" / f"{n:02d}-resource-projects.md"
        lists = "\n".join(
            f"       - `{directory / RESOURCES_DIR / f'{slug}.md'}` ({slug})" for slug in slugs
        )
        text = templates.render(
            "resource_job.md",
            job_number=n,
            job_total=total,
            run_id=run_id,
            projects=", ".join(slugs),
            verify_command=verify_command_for(command, run_id),
            lists=lists,
        )
        atomic_write_text(path, text)
        jobs.append(path)
    job_list = "\n".join(
        f"{i}. `{p}` ({p.stem.split('-')[1]} job)" for i, p in enumerate(jobs, start=1)
    )
    prompt = directory / "EXECUTOR.md"
    atomic_write_text(
        prompt,
        templates.render(
            "executor.md",
            run_id=run_id,
            job_total=total,
            session_count=len(scrubbed),
            workspace=workspace,
            job_list=job_list,
            next_command=command,
        ),
    )
    return written, [str(p) for p in jobs], str(prompt)


def prepare_sessions(
    wiki: Wiki,
    sessions: Sequence[Session],
    *,
    run_id: str | None = None,
    commit_command: str = COMMIT_COMMAND,
    projects: Sequence[dict[str, Any] | None] | None = None,
    _checkpoint: Checkpoint | None = None,
) -> PrepareResult:
    """Open a run for already-validated sessions (host adapters call this directly).

    projects, one per session, is None or {"project": slug, "root": repository on this
    device or None, "cwd": the session's directory or None}.
    """
    with prepare_lock(wiki):
        _remember(wiki)
        return _open_run(wiki, sessions, run_id, commit_command, projects, _checkpoint)


def _remember(wiki: Wiki) -> None:
    """Bring memorized.json up to date without checking the sessions against it (bridge
    prepare, --again): `memorize status` reads committed runs from it. Bug it prevents:
    only a checking prepare wrote it, so a wiki fed by the scheduled bridge had status open
    every run record on every call (~120 ms at 3,000)."""
    from .memorized import memorized_sessions

    with contextlib.suppress(Exception):  # a cache: without it, status reads the records
        memorized_sessions(wiki)


def prepare_lock(wiki: Wiki) -> FileLock:
    """The lock that makes checking a run's sessions and opening it one step.

    Bug it prevents: a second `memorize prepare` of a session whose run was still being
    opened passed the memorized check (a run that is not prepared yet counts for nothing)
    and opened a second run of it: the session memorized twice, duplicate notes.
    """
    return FileLock(wiki.sidecar / PREPARE_LOCK, timeout=PREPARE_LOCK_TIMEOUT_S)


def _open_run(
    wiki: Wiki,
    sessions: Sequence[Session],
    run_id: str | None,
    commit_command: str,
    projects: Sequence[dict[str, Any] | None] | None,
    _checkpoint: Checkpoint | None,
) -> PrepareResult:
    checkpoint = _checkpoint or _noop
    if not 1 <= len(sessions) <= MAX_PAYLOADS:
        raise InvalidInput(f"a run takes 1 to {MAX_PAYLOADS} sessions, got {len(sessions)}")
    projects = list(projects) if projects is not None else [None] * len(sessions)
    if len(projects) != len(sessions):
        raise InvalidInput("prepare: one project entry per session")
    counts: Counter[str] = Counter()
    clean = [scrub_session(s, counts) for s in sessions]
    repo = wiki.repo
    _, head = current_branch_head(repo)
    probe = (runstate.runs_root(wiki.sidecar) / "x").relative_to(wiki.root)
    if not repo.path_is_ignored(probe.as_posix()):
        # Otherwise the run's worktree would show up as an untracked folder in the wiki.
        raise StateError(
            "'.memwiki/' is not git-ignored in this wiki: add '/.memwiki/' to .gitignore"
        )
    run_id = runstate.check_run_id(run_id) if run_id is not None else runstate.new_run_id()
    directory = runstate.run_dir(wiki.sidecar, run_id)
    if directory.exists() or repo.branches.local.get(runstate.branch_name(run_id)) is not None:
        raise StateError(f"a memorize run {run_id!r} already exists")
    directory.mkdir(parents=True)
    now = runstate.now_iso()
    state = RunState(
        run_id=run_id,
        phase=PREPARING,
        created=now,
        updated=now,
        base_commit=str(head.id),
        sessions=[
            {
                "label": s.label,
                "source_id": s.source_id,
                "sha256": s.sha256,
                "items": len(s.items),
                "messages": len(s.messages),
                **({k: p.get(k) for k in ("project", "root", "cwd")} if p else {}),
            }
            for s, p in zip((c.session for c in clean), projects, strict=True)
        ],  # fmt: skip
        redactions=dict(sorted(counts.items())),
    )
    runstate.save_state(directory, state)
    checkpoint("state-written")
    workspace = directory / WORKSPACE
    command = commit_command.format(run_id=run_id)
    try:
        worktrees.create(repo, run_id, workspace, head)
        checkpoint("worktree-created")
        written, jobs, prompt = _write_run_files(directory, run_id, clean, command, projects)
        checkpoint("files-written")
        state.phase = PREPARED
        state.transcripts, state.jobs, state.executor_prompt = written, jobs, prompt
        runstate.save_state(directory, state)
    except BaseException:
        # A failure we can see is undone at once; only a killed process leaves "incomplete".
        # The first error is the one to report (a full disk), not the undoing's.
        with contextlib.suppress(Exception):
            worktrees.remove(repo, run_id, workspace)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return PrepareResult(
        run_id=run_id,
        workspace=str(workspace),
        transcripts=written,
        jobs=jobs,
        executor_prompt=prompt,
        next_command=command,
        redactions=state.redactions,
    )


def _refuse_memorized(wiki: Wiki, sessions: Sequence[Session]) -> None:
    """A payload memorized before would be memorized twice: duplicate notes, repeated facts."""
    from .memorized import memorized_sessions

    done = memorized_sessions(wiki)
    for session in sessions:
        where = done.get(session.source_id)
        if where is not None:
            raise StateError(
                f"{session.label}: session {session.source_id} was already memorized ({where});"
                " pass --again to memorize it once more"
            )


def prepare(
    wiki: Wiki,
    inputs: Sequence[str | Path],
    *,
    stdin: BinaryIO | None = None,
    run_id: str | None = None,
    commit_command: str = COMMIT_COMMAND,
    project: str | None = None,
    root: str | Path | None = None,
    again: bool = False,
    _checkpoint: Checkpoint | None = None,
) -> PrepareResult:
    """Validate 1-10 payload files (or '-' with stdin) and open a run for them.

    project (a slug) marks every session as work in that project; root is its repository
    on this device, where verify-resources checks the files the sessions touched. A payload
    already memorized (in the wiki's history or an open run) is refused unless again.
    """
    sessions = load_sessions(inputs, stdin=stdin)
    entry = None
    if project is not None:
        rfmod.check_slug(project, "project")
        entry = {"project": project, "root": str(Path(root).resolve()) if root else None}
    with prepare_lock(wiki):  # the check and the run it allows, one step
        if not again:
            _refuse_memorized(wiki, sessions)
        else:
            _remember(wiki)
        return _open_run(
            wiki, sessions, run_id, commit_command, [entry] * len(sessions), _checkpoint
        )
