"""Printers shared by commands: JSON, warnings, errors, and the human form of shared results.

No Typer here: the fast `retrieve` path prints through this module too.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any


def emit_json(data: Any) -> None:
    """Print data as JSON on stdout (all ASCII, escaped, when stdout is not UTF-8)."""
    from ..process import writes_utf8

    ascii_only = not writes_utf8(sys.stdout)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=ascii_only) + "\n")


def warn(message: str) -> None:
    """One line on stderr (a file name's line break or escape sequence shown escaped)."""
    from ..recallfile import printable

    print(f"memwiki: {printable(message)}", file=sys.stderr)


def error_document(message: str, exit_code: int) -> dict[str, Any]:
    """The JSON form of an error: what a --json command prints on stdout when it fails."""
    return {"error": {"message": message, "exit_code": exit_code}}


def print_error(message: str, exit_code: int, as_json: bool, internal: bool = False) -> None:
    """The one stderr line of a failed command (and, under --json, the error document)."""
    if as_json:
        # When nobody reads stdout any more, the stderr line still goes out.
        with contextlib.suppress(OSError):
            emit_json(error_document(message, exit_code))
    if internal:
        print(f"memwiki: internal error: {message} (run with --debug for details)", file=sys.stderr)
    else:
        print(f"memwiki: error: {message}", file=sys.stderr)


def print_changes(result) -> None:
    """Human output of install/uninstall: one line per file or setting touched."""
    verb = "would be " if result.dry_run else ""
    for c in result.changes:
        print(f"{c.kind:<11} {verb}{c.action:<9} {c.path}")


def print_commit(result, as_json: bool) -> None:
    """Output of a wiki commit (put, add, rm, commit)."""
    if as_json:
        emit_json(result.to_dict())
        return
    if result.commit is None:
        print("Nothing to commit")
        return
    from ..recallfile import printable  # a pulled or pasted file's name is one line, no escapes

    for status in ("created", "updated", "deleted"):
        for path in getattr(result, status):
            print(f"{status:8} {printable(path)}")
    print(f"commit {result.commit[:12]}")


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
    from ..recallfile import printable

    for status in ("created", "updated", "deleted"):
        for path in getattr(result, status):
            print(f"  {status:8} {printable(path)}")
    for c in result.conflicts:
        if c.get("copy"):
            print(f"  conflict copy created {c['copy']} ({c['kind']}: {c['path']} unchanged)")
        else:
            print(f"  conflict {c['path']} ({c['kind']}) (kept {c.get('kept')})")
    if result.conflicts:
        print(
            "conflict copies hold the run's version: merge them by hand (`memwiki lint` lists them)"
        )
    for message in result.warnings:
        warn(f"warning: {message}")


def print_run_invalid(exc, run_id: str, as_json: bool) -> None:
    """Report a refused commit: the summary then every problem on stderr (the caller exits 2)."""
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
                **error_document(summary, exc.exit_code),
                "problems": [p.to_dict() for p in problems],
            }
        )
    print(f"memwiki: error: {summary}", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)


def print_hooks_setup(setup, as_json: bool, name_wiki: bool = False) -> None:
    """Tell the user what hook set-up did: a warning on stderr when pre-commit is missing."""
    if not setup.installed:
        from pathlib import Path

        from .context import configured_wiki

        message = setup.message
        if Path(setup.wiki) != configured_wiki():
            # The hint's bare `memwiki hooks install` would set up the configured wiki, not
            # this one (commands never go by the current directory).
            message = message.replace(
                "`memwiki hooks install`", f"`memwiki --wiki {setup.wiki} hooks install`"
            )
        warn(message)
    elif not as_json:
        # `hooks install` acts on the configured wiki, not the current directory: run inside
        # another wiki it would otherwise report success without saying where it went.
        where = f" in {setup.wiki}" if name_wiki else ""
        print(f"pre-commit hooks installed{where}: memwiki-lint, memwiki-reindex")


def print_sync(result) -> None:
    """Human output of a sync: one line per step, then the conflicts and the commit."""
    upstream = f"{result.remote}/{result.upstream or result.branch}"
    if result.upstream_gone:
        print(
            f"upstream  {result.remote}/{result.upstream_gone} is gone: now syncing with "
            f"{upstream}, which holds its commits"
        )
    if result.committed:
        print(f"committed {result.committed[:12]}  (hand edits)")
    if result.fetched:
        plural = "s" if result.fetched != 1 else ""
        print(f"fetched   {result.fetched} commit{plural} from {upstream}")
    merged = {
        "none": "nothing new from the remote",
        "merge": "merge commit",
        "rewritten": "the remote's history was rewritten: this device's changes applied on top",
    }
    print(f"merged    {merged.get(result.merged, result.merged)}")
    to = result.remote if (result.upstream or result.branch) == result.branch else upstream
    print(f"pushed    {result.branch} to {to}" if result.pushed else "pushed    nothing")
    if result.retries:
        print(f"retried   {result.retries} (another device pushed first)")
    for c in result.changes:
        if c.status == "renamed":
            print(f"renamed   {c.old_path} -> {c.path}")
    for p in result.not_committed:
        print(f"not committed  {p['path']}: {p['problem']}")
    for path in result.left_out:
        print(f"left out  {path} (a path git refuses to check out: removed from the branch)")
    for line in result.messages:
        print(f"remote:   {line}")
    for c in result.conflicts:
        where = f" -> {c.copy}" if c.copy else f" ({c.kind}, kept {c.kept})"
        if c.kind == "file-and-folder":
            where += f" (a file here, a folder on the other side: {c.kept}' folder stays)"
        if c.other_name:
            where += f" (renamed differently: theirs named it {c.other_name})"
        print(f"conflict  {c.path}{where}")
    new = {c.copy for c in result.conflicts} | {p["path"] for p in result.not_committed}
    for copy in result.conflict_copies:
        if copy not in new:
            print(f"unresolved {copy} (a conflict copy of {result.copy_of[copy]})")
    print(f"commit    {result.commit[:12] if result.commit else '-'}")
