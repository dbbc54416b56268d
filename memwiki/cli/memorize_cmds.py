"""`memwiki memorize prepare|commit|discard|status`: runs that turn sessions into RecallFiles."""

from __future__ import annotations

import sys

import typer

from .context import config, open_wiki, reindex_for, wiki_option
from .options import JSON
from .output import emit_json, print_committed, print_prepared, print_run_invalid


def prepare(
    files: list[str] = typer.Argument(..., help="1 to 10 session payload files, or - for stdin."),
    as_json: bool = JSON,
    project: str | None = typer.Option(
        None, "--project", help="The sessions' code project: a slug, or auto (this directory's)."
    ),
    root: str | None = typer.Option(
        None, "--root", help="The project's repository here (default: this directory's)."
    ),
    again: bool = typer.Option(
        False, "--again", help="Memorize sessions the wiki has memorized before once more."
    ),
) -> None:
    """Validate sessions, scrub secrets, open a run and write its jobs for an executor."""
    from .. import memorize
    from ..memorize.prepare_run import COMMIT_COMMAND

    project, root = _session_project(project, root)

    wiki = open_wiki()
    command = COMMIT_COMMAND
    quoted = wiki_option()
    if quoted is not None:
        # The executor may run in another directory: name this wiki explicitly.
        path = quoted.replace("{", "{{").replace("}", "}}")
        command = command.replace("memwiki ", f"memwiki --wiki {path} ", 1)
    stdin = sys.stdin.buffer if "-" in files else None
    result = memorize.prepare(
        wiki, files, stdin=stdin, commit_command=command, project=project, root=root,
        again=again,
    )  # fmt: skip
    if as_json:
        emit_json(result.to_dict())
    else:
        print_prepared(result.to_dict(), len(result.transcripts))


def _session_project(project: str | None, root: str | None) -> tuple[str | None, str | None]:
    """--project/--root: `auto` is this directory's project; the root defaults to this
    directory's repository when it is that project."""
    from ..errors import InvalidInput
    from ..project import identify, is_the_wiki, parse_map, working_directory

    if project is None:
        if root is not None:
            raise InvalidInput("--root needs --project")
        return None, None
    cfg = config()
    where = root or working_directory()
    mapping = parse_map(cfg.projects, strict=True)
    here = identify(where, mapping, cfg.home)
    if is_the_wiki(here, cfg.wiki_path):
        here = None  # the wiki's own folder is memory, not a code project
        if project == "auto":
            raise InvalidInput("--project auto: this directory is the wiki, not a code project")
    if project == "auto":
        if where is None:
            raise InvalidInput("--project auto: the current directory no longer exists")
        if here is None:
            raise InvalidInput("--project auto: this directory is not inside a git repository")
        return here.slug, here.root
    if root is None and here is not None and here.slug == project:
        root = here.root
    return project, root


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
        print_run_invalid(exc, run_id, as_json)
        raise typer.Exit(exc.exit_code) from None
    if as_json:
        emit_json(result.to_dict())
    else:
        print_committed(result)


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
