"""Host commands: hosts detect, install, uninstall, schedule, hook, docs, bridge (docs/hosts.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .context import config, open_wiki, reindex_for, wiki_option
from .options import HOST, JSON
from .output import (
    emit_json,
    print_changes,
    print_committed,
    print_prepared,
    print_run_invalid,
    warn,
)


def check_host(host: str) -> str:
    """host if memwiki knows it, else a one-line InvalidInput."""
    from ..hosts.mining.base import host_module

    host_module(host)
    return host


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def detect(
    path: Path = typer.Argument(
        None, help="Also check this directory of JSONL transcripts (generic reader)."
    ),
    as_json: bool = JSON,
) -> None:
    """Which agents are here, and whether memorization and retrieval work for each."""
    from ..hosts.integrate.detect import detect_hosts

    statuses = detect_hosts(config(), path)
    if as_json:
        emit_json({"hosts": [s.to_dict() for s in statuses]})
        return
    for s in statuses:
        if not s.found:
            print(f"{s.host:<12} not found")
            continue
        print(
            f"{s.host:<12} memorize: {_yes(s.memorize)} ({s.sessions} "
            f"session{'' if s.sessions == 1 else 's'} in "
            f"{s.session_location or '-'})"
        )
        if s.instruction_file:
            hook = "" if s.hook_installed is None else f", hook {_yes(s.hook_installed)}"
            print(
                f"{'':<12} retrieve: {_yes(s.retrieve)} ({s.instruction_file}, "
                f"block {_yes(s.installed)}{hook})"
            )
        if s.version:
            tested = "yes" if s.version_tested else "no"
            print(
                f"{'':<12} client: {s.version} (end-to-end tested: {tested}; passed with "
                f"{', '.join(s.tested_versions)})"
            )
        for note in s.notes:
            print(f"{'':<12} note: {note}")
        if s.next_command:
            print(f"{'':<12} next: {s.next_command}")


def install(
    host: str = HOST,
    path: Path = typer.Option(None, "--path", help="Patch this instruction file instead."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; write nothing."),
    force: bool = typer.Option(
        False, "--force", help="Replace the block even if you typed text inside it."
    ),
    as_json: bool = JSON,
) -> None:
    """Tell an agent to retrieve memory first (managed block; Claude Code: also a hook)."""
    from ..hosts.integrate.inject import install as do_install

    result = do_install(check_host(host), config(), path, dry_run=dry_run, force=force)
    if not dry_run:
        warn_if_temporary()
    if as_json:
        emit_json(result.to_dict())
        return
    print_changes(result)
    if host == "claude-code" and result.changed and not dry_run:
        print("restart Claude Code (or review the hook in /hooks) for the hook to take effect")


def warn_if_temporary() -> None:
    """One line on stderr when the memwiki written into agents' files lives in a cache."""
    from ..hosts.executable import memwiki_executable, temporary_install

    cache = temporary_install()
    if cache is not None:
        warn(
            f"{memwiki_executable()} runs from the cache {cache} (uvx, pipx run), which is "
            "emptied in time: the agents' files would then run a memwiki that is gone. "
            "Install memwiki (`uv tool install`, `pipx install`) and run this again with it"
        )


def uninstall(
    host: str = HOST,
    path: Path = typer.Option(None, "--path", help="The instruction file install patched."),
    force: bool = typer.Option(
        False, "--force", help="Remove the block even if you typed text inside it."
    ),
    as_json: bool = JSON,
) -> None:
    """Remove exactly what install and schedule added (block, hook, crontab entry)."""
    from ..hosts.integrate.inject import uninstall as do_uninstall
    from ..hosts.integrate.schedule import HEADLESS, uninstall_schedule

    cfg = config()
    result = do_uninstall(check_host(host), cfg, path, force=force)
    scheduled = uninstall_schedule(host, cfg) if host in HEADLESS else None
    if as_json:
        emit_json({**result.to_dict(), "schedule": scheduled.to_dict() if scheduled else None})
        return
    print_changes(result)
    if scheduled is not None:
        print(f"{'crontab':<11} {scheduled.action:<9} {scheduled.entry}")


def schedule(
    host: str = HOST,
    install_: bool = typer.Option(False, "--install", help="Add (or refresh) the crontab entry."),
    uninstall_: bool = typer.Option(False, "--uninstall", help="Remove the crontab entry."),
    as_json: bool = JSON,
) -> None:
    """Print, install or remove the hourly crontab entry of a host's bridging run."""
    import shutil

    from ..errors import InvalidInput, NotFound
    from ..hosts.integrate import schedule as sched

    if install_ and uninstall_:
        raise InvalidInput("--install and --uninstall exclude each other")
    cfg = config()
    check_host(host)
    if install_:
        try:
            result = sched.install_schedule(host, cfg)
        except NotFound as exc:
            if shutil.which("crontab") is not None:
                raise
            # The library names what is missing; a person also needs what to do about it.
            raise NotFound(
                f"{exc.message}: install cron (`apt install cron`, `dnf install cronie`), or "
                f"run `memwiki bridge prepare --host {host}`, the jobs and `memwiki bridge "
                f"commit --host {host}` yourself (docs/hosts.md)"
            ) from None
        warn_if_temporary()
        client = sched.CLIENT[host]
        if shutil.which(client, path=cfg.host_env.get("PATH")) is None:
            # The entry is installed all the same (the agent may come later), but every
            # hourly run would fail in a log nobody reads.
            warn(
                f"{client} is not on PATH, so the hourly run cannot start it: install it (or "
                f"run this where `{client}` works), then `memwiki schedule --host {host} "
                "--install` again"
            )
    elif uninstall_:
        result = sched.uninstall_schedule(host, cfg)
    else:
        entry = sched.schedule_entry(host, cfg)
        if as_json:
            files = sched.bridge_files(host, cfg)
            emit_json(
                {"host": host, "entry": entry, "action": "shown",
                 "files": [str(files.wrapper), str(files.prompt)]}
            )  # fmt: skip
        else:
            print(entry)
        return
    if as_json:
        emit_json(result.to_dict())
        return
    print(f"crontab {result.action}: {result.entry}")
    for f in result.files:
        print(f"  {'wrote' if install_ else 'removed'} {f}")


def hook_claude_code() -> None:
    """UserPromptSubmit hook: add relevant memory to the prompt (fails open, always exit 0)."""
    from ..hosts.integrate.prompt_hook import run_hook_process
    from . import process_started

    # Normally memwiki.cli.fast runs the hook without Typer; this path serves the Typer app.
    run_hook_process(config, process_started())


def docs_install(host: str = HOST) -> None:
    """Print the install guide for one agent (the same text as docs/hosts.md)."""
    from ..hosts.integrate.texts import install_guide

    sys.stdout.write(install_guide(check_host(host)))


def docs_task(host: str = HOST) -> None:
    """Print the task prompt a scheduled headless agent follows."""
    from ..hosts.integrate.texts import task_prompt

    sys.stdout.write(task_prompt(check_host(host)))


def bridge_prepare(
    host: str = HOST,
    session_dir: Path = typer.Option(None, "--session-dir", help="Read sessions from here."),
    max_sessions: int = typer.Option(10, "--max-sessions", help="At most N sessions (1-10)."),
    as_json: bool = JSON,
) -> None:
    """Slice what is new in a host's sessions into one memorize run (exit 0 if nothing is new)."""
    from ..errors import InvalidInput, NotFound
    from ..hosts.mining.bridge import bridge_prepare as do_prepare

    check_host(host)
    # A typo here used to look like a clean run ("nothing new to memorize", exit 0).
    if session_dir is None and host == "generic":
        raise InvalidInput("bridge prepare --host generic needs --session-dir DIR")
    if session_dir is not None and not session_dir.exists():
        raise NotFound(f"--session-dir {session_dir}: no such file or directory")
    result = do_prepare(open_wiki(), host, config(), session_dir, max_sessions, wiki_option())
    for sid in result.claimed:
        warn(f"{host} session {sid} is this bridging run's own: it is never mined")
    for message in result.warnings:
        warn(message)
    if as_json:
        emit_json(result.to_dict())
        return
    if result.nothing_new:
        print(f"{host}: nothing new to memorize")
        return
    if result.resumed:
        print(f"{host}: the pending run is not committed yet; offering it again")
    data = result.to_dict()
    print_prepared(data, len(result.sessions))
    print("sessions:")
    for s in result.sessions:
        print(f"  {s['key']}: {s['counts'].get('message', 0)} new messages")


def bridge_commit(host: str = HOST, as_json: bool = JSON) -> None:
    """Commit a host's pending run, then move its cursor forward (a failure keeps both)."""
    from .. import memorize
    from ..hosts.mining.bridge import bridge_commit as do_commit
    from ..hosts.mining.bridge import pending_run_id

    check_host(host)
    wiki = open_wiki()
    try:
        result = do_commit(wiki, host, wiki.config, reindex=reindex_for(wiki))
    except memorize.RunInvalid as exc:
        print_run_invalid(exc, pending_run_id(wiki, host) or "?", as_json)
        raise typer.Exit(exc.exit_code) from None
    if as_json:
        emit_json(result.to_dict())
        return
    print_committed(result.commit)
    if result.cursor_advanced:
        print(f"{host}: cursor moved past {len(result.sessions)} session slice(s)")
