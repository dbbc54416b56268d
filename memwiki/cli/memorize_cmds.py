"""`memwiki memorize prepare|commit|discard|status`: runs that turn sessions into RecallFiles."""

from __future__ import annotations

import os
import shlex
import sys

import typer

from .app import app, config, emit_json, open_wiki, state, warn

memorize_app = typer.Typer(
    help="Turn finished sessions into memory and skills through prepared jobs (docs/memorize.md).",
    no_args_is_help=True,
)
app.add_typer(memorize_app, name="memorize")

JSON = typer.Option(False, "--json", help="Print JSON (schema in docs/reference.md).")


def wiki_option() -> str | None:
    """The --wiki PATH of this invocation, absolute and shell-quoted, for next commands."""
    return shlex.quote(os.path.abspath(state.wiki)) if state.wiki else None


def reindex_for(wiki):
    """The reindex hook a commit calls once the merge is in (the index is only a cache)."""

    def reindex() -> None:
        from ..index.indexer import Index

        Index(wiki, config()).update()

    return reindex


def print_prepared(data: dict, sessions: int) -> None:
    """Human output of a prepared run: id, workspace, jobs, and what to run next."""
    jobs = data["jobs"]
    print(f"run {data['run_id']} prepared: {sessions} session(s), {len(jobs)} job(s)")
    print(f"workspace:       {data['workspace']}")
    print(f"executor prompt: {data['executor_prompt']}")
    print("jobs (process them in this order):")
    for number, job in enumerate(jobs, start=1):
        print(f"  {number}. {job}")
    if data.get("redactions"):
        counts = ", ".join(f"{kind} x{n}" for kind, n in sorted(data["redactions"].items()))
        print(f"redacted secrets: {counts}")
    print(f"next: {data['next_command']}")


def print_committed(result) -> None:
    """Human output of a run commit: the merge, the files, the conflicts."""
    rid = result.run_id
    if result.commit is None:
        print(f"run {rid}: nothing to commit (the executor changed no file); run cleaned up")
        return
    how = "was already committed" if result.already_committed else "committed"
    print(f"run {rid} {how}: merge {result.commit[:12]}")
    for status in ("created", "updated", "deleted"):
        for path in getattr(result, status):
            print(f"  {status:8} {path}")
    for c in result.conflicts:
        where = f" -> {c['copy']}" if c.get("copy") else f" (kept {c.get('kept')})"
        print(f"  conflict {c['path']} ({c['kind']}){where}")
    if result.conflicts:
        print(
            "conflict copies hold the run's version: merge them by hand (`memwiki lint` lists them)"
        )
    for message in result.warnings:
        warn(f"warning: {message}")


def fail_run_invalid(exc, run_id: str, as_json: bool) -> None:
    """Report a refused commit: the summary then every problem on stderr, exit 2."""
    problems = list(exc.problems)
    noun = "problem" if len(problems) == 1 else "problems"
    summary = (
        f"run {run_id}: {len(problems)} {noun} in the changed files, nothing committed "
        "(fix them in the workspace and commit again)"
    )
    if as_json:
        emit_json(
            {
                "ok": False,
                "run_id": run_id,
                "error": summary,
                "problems": [p.to_dict() for p in problems],
            }
        )
    print(f"memwiki: error: {summary}", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    raise typer.Exit(exc.exit_code)


@memorize_app.command("prepare")
def prepare(
    files: list[str] = typer.Argument(..., help="1 to 10 session payload files, or - for stdin."),
    as_json: bool = JSON,
    project: str = typer.Option(
        None, "--project", help="The sessions' code project: a slug, or auto (this directory's)."
    ),
    root: str = typer.Option(
        None, "--root", help="The project's repository here (default: this directory's)."
    ),
) -> None:
    """Validate sessions, scrub secrets, open a run and write its jobs for an executor."""
    from .. import memorize
    from ..memorize.prepare import COMMIT_COMMAND

    project, root = _session_project(project, root)

    wiki = open_wiki()
    command = COMMIT_COMMAND
    if state.wiki:
        # The executor may run in another directory: name this wiki explicitly.
        path = wiki_option().replace("{", "{{").replace("}", "}}")
        command = command.replace("memwiki ", f"memwiki --wiki {path} ", 1)
    stdin = sys.stdin.buffer if "-" in files else None
    result = memorize.prepare(
        wiki, files, stdin=stdin, commit_command=command, project=project, root=root
    )
    if as_json:
        emit_json(result.to_dict())
    else:
        print_prepared(result.to_dict(), len(result.transcripts))


def _session_project(project: str | None, root: str | None) -> tuple[str | None, str | None]:
    """--project/--root: `auto` is this directory's project; the root defaults to this
    directory's repository when it is that project."""
    from ..errors import InvalidInput
    from ..project import identify, parse_map

    if project is None:
        if root is not None:
            raise InvalidInput("--root needs --project")
        return None, None
    cfg = config()
    here = identify(root or os.getcwd(), parse_map(cfg.get("projects")), cfg.home)
    if project == "auto":
        if here is None:
            raise InvalidInput("--project auto: this directory is not inside a git repository")
        return here.slug, here.root
    if root is None and here is not None and here.slug == project:
        root = here.root
    return project, root


@memorize_app.command("verify-resources")
def verify_resources(
    run_id: str = typer.Argument(..., help="The run whose logged files to verify."),
    root: str = typer.Option(
        None, "--root", help="The project's repository on this device (one-project runs)."
    ),
    as_json: bool = JSON,
) -> None:
    """Keep the files a run's sessions touched that exist in the repository, for the resource job."""
    from .. import memorize

    found = memorize.verify_resources(open_wiki(), run_id, root)
    if as_json:
        emit_json({"run_id": run_id, "projects": [p.to_dict() for p in found]})
        return
    for p in found:
        print(f"{p.project}: {len(p.kept)} file(s) kept, {len(p.dropped)} dropped -> {p.file}")
        for d in p.dropped:
            print(f"  dropped {d['path']}: {d['reason']}")


@memorize_app.command("commit")
def commit(
    run_id: str = typer.Argument(..., help="The run id prepare printed."),
    as_json: bool = JSON,
) -> None:
    """Validate the executor's edits, commit and merge them into the wiki, reindex, clean up."""
    from .. import memorize

    wiki = open_wiki()
    try:
        result = memorize.commit(wiki, run_id, reindex=reindex_for(wiki))
    except memorize.RunInvalid as exc:
        fail_run_invalid(exc, run_id, as_json)
    if as_json:
        emit_json(result.to_dict())
    else:
        print_committed(result)


@memorize_app.command("discard")
def discard(
    run_id: str = typer.Argument(..., help="The run to throw away."),
    as_json: bool = JSON,
) -> None:
    """Throw a run away: its workspace, branch and files (the wiki is not touched)."""
    from .. import memorize

    result = memorize.discard(open_wiki(), run_id)
    if as_json:
        emit_json(result.to_dict())
    else:
        print(f"discarded run {result.run_id} (it was {result.state})")


@memorize_app.command("status")
def status(
    run_id: str = typer.Argument(None, help="Only this run."),
    as_json: bool = JSON,
) -> None:
    """Every run (or one) and its state: prepared, edited, committed or incomplete."""
    from .. import memorize

    runs = memorize.status(open_wiki(), run_id)
    if as_json:
        emit_json([r.to_dict() for r in runs])
        return
    if not runs:
        print("no memorize runs")
        return
    for r in runs:
        detail = f"  ({r.detail})" if r.detail else ""
        changed = f", {len(r.changed)} changed" if r.changed else ""
        print(f"{r.run_id}  {r.state:<10} {r.jobs} job(s){changed}{detail}")
        if run_id is not None:
            for path in r.changed:
                print(f"  changed  {path}")
            if r.workspace:
                print(f"  workspace: {r.workspace}")
