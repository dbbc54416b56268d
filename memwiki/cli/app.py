"""The Typer application: the root options and every command, registered here and only here.

Command modules define plain functions (parse, call the library, print) and import
nothing from this module, so there is no import cycle; `memwiki --help` reads this table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from . import (
    hosts_cmds,
    index_cmds,
    links_cmds,
    memorize_cmds,
    project_cmds,
    sync_cmds,
    wiki_cmds,
)
from .coercion import fill
from .context import state
from .options import DEBUG, WIKI


def _in_context(parse: Callable[..., list[str]], ctx: Any, args: list[str]) -> list[str]:
    fill(
        ctx.command.get_params(ctx)
    )  # before any value is converted: no pydantic (cli/coercion.py)
    # Click's option parser raises "Option '-n' requires an argument." and "... does not
    # take a value." without the command's context, so they were printed without the usage
    # line every other argument error has (docs/reference.md, "Exit codes").
    try:
        return parse(ctx, args)
    except typer.TyperException as exc:
        if hasattr(exc, "ctx") and exc.ctx is None:
            exc.ctx = ctx
        raise


class Interrupted(Exception):
    """Ctrl-C inside a command, carried past Typer to memwiki.cli.main (see UsageCommand.invoke)."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__("interrupted")
        self.interrupt = interrupt


class UsageCommand(typer.core.TyperCommand):
    """A command whose every argument error is printed with its usage line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse as Click does; an error without a context gets this command's."""
        return _in_context(super().parse_args, ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; Ctrl-C leaves as Interrupted.

        Typer turns a KeyboardInterrupt into a bare exit 130: no "interrupted" line, and
        no traceback under --debug.
        """
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise Interrupted(exc) from None


class UsageGroup(typer.core.TyperGroup):
    """A command group whose every argument error is printed with its usage line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse as Click does; an error without a context gets this group's."""
        return _in_context(super().parse_args, ctx, args)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"memwiki {__version__}")
        raise typer.Exit()


def _root(
    wiki: Path = WIKI,
    debug: bool = DEBUG,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    state.wiki = str(wiki) if wiki else None
    state.debug = debug


Command = tuple[str, Callable[..., None]]

# Top-level commands, in the order `memwiki --help` lists them.
COMMANDS: list[Command] = [
    ("init", wiki_cmds.init),
    ("put", wiki_cmds.put),
    ("add", wiki_cmds.add),
    ("list", wiki_cmds.list_),
    ("show", wiki_cmds.show),
    ("rm", wiki_cmds.rm),
    ("commit", wiki_cmds.commit),
    ("log", wiki_cmds.log),
    ("lint", wiki_cmds.lint),
    ("retrieve", index_cmds.retrieve),
    ("reindex", index_cmds.reindex),
    ("doctor", index_cmds.doctor),
    ("eval", index_cmds.eval_),
    ("links", links_cmds.links),
    ("sync", sync_cmds.sync),
    ("clone", sync_cmds.clone),
    ("restore", sync_cmds.restore),
    ("untrack-ignored", sync_cmds.untrack_ignored),
    ("install", hosts_cmds.install),
    ("uninstall", hosts_cmds.uninstall),
    ("schedule", hosts_cmds.schedule),
    ("project", project_cmds.project),
]

# Command groups: (name, help, subcommands).
GROUPS: list[tuple[str, str, list[Command]]] = [
    ("config", "Show the resolved configuration.", [("show", wiki_cmds.config_show)]),
    (
        "memorize",
        "Turn finished sessions into memory and skills through prepared jobs (docs/memorize.md).",
        [
            ("prepare", memorize_cmds.prepare),
            ("commit", memorize_cmds.commit),
            ("discard", memorize_cmds.discard),
            ("status", memorize_cmds.status),
            ("verify-resources", memorize_cmds.verify_resources),
        ],
    ),
    (
        "hooks",
        "Turn on the wiki's pre-commit hooks (lint and reindex).",
        [("install", links_cmds.hooks_install)],
    ),
    (
        "remote",
        "Show or set the remote the wiki syncs with.",
        [("add", sync_cmds.remote_add), ("show", sync_cmds.remote_show)],
    ),
    ("hosts", "Find the coding agents on this machine.", [("detect", hosts_cmds.detect)]),
    (
        "bridge",
        "Memorize a host's own session logs: prepare a run, then commit it.",
        [("prepare", hosts_cmds.bridge_prepare), ("commit", hosts_cmds.bridge_commit)],
    ),
    (
        "hook",
        "Hooks that agents call (they always exit 0).",
        [("claude-code", hosts_cmds.hook_claude_code)],
    ),
    (
        "docs",
        "Print guides and prompts for agents.",
        [("install", hosts_cmds.docs_install), ("task", hosts_cmds.docs_task)],
    ),
]


def build(only: str | None = None) -> typer.Typer:
    """The application with every command, or with only the command or group named `only`.

    Typer turns the whole application into Click commands on every run (inspecting each
    function's signature): about 20 ms for 37 commands, where a command line names one.
    The root's own help and its "No such command" need them all (run builds those).
    """
    root = typer.Typer(
        cls=UsageGroup,
        help="Long-term memory for AI coding agents: markdown RecallFiles in git, hybrid retrieval.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,
    )
    root.callback()(_root)
    for name, function in COMMANDS:
        if only in (None, name):
            root.command(name, cls=UsageCommand)(function)
    for group, help_, commands in GROUPS:
        if only in (None, group):
            sub = typer.Typer(help=help_, no_args_is_help=True, cls=UsageGroup)
            for name, function in commands:
                sub.command(name, cls=UsageCommand)(function)
            root.add_typer(sub, name=group)
    return root


NAMES = frozenset(name for name, _ in COMMANDS) | frozenset(group for group, _, _ in GROUPS)
app = build()


def run(argv: list[str]) -> int:
    """Run the Typer application on argv (global options in front); its exit code.

    Usage errors are printed as Click prints them; under --json the error document
    follows on stdout. memwiki's own errors propagate to memwiki.cli.main.
    """
    from .argv import scan_globals
    from .output import emit_json, error_document

    command = scan_globals(argv).command
    target = build(command) if command in NAMES else app
    try:
        code = target(args=argv, prog_name="memwiki", standalone_mode=False)
    except Interrupted as exc:  # main() says it and exits 130
        raise exc.interrupt from None
    except typer.TyperException as exc:  # Click's usage errors (Typer vendors Click)
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            print(f"Error: {exc.format_message()}", file=sys.stderr)
        if scan_globals(argv).wants_json:
            emit_json(error_document(exc.format_message(), exc.exit_code))
        return exc.exit_code
    except typer.Abort:
        print("Aborted!", file=sys.stderr)
        return 1
    except SystemExit as exc:  # Click's own exit, e.g. on a broken stdout pipe
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code if isinstance(code, int) else 0
