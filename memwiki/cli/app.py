"""The Typer application, its global options and the helpers every command uses."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import typer

app = typer.Typer(
    help="Long-term memory for AI coding agents: markdown RecallFiles in git, hybrid retrieval.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


@dataclass
class State:
    """Global options of this invocation."""

    wiki: str | None = None
    debug: bool = False


state = State()


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"memwiki {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    wiki: Path = typer.Option(
        None, "--wiki", "-w", help="The wiki to use (default: $MEMWIKI_DIR, config, ~/memwiki)."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    state.wiki = str(wiki) if wiki else None
    state.debug = debug


def config():
    """The resolved configuration of this process."""
    from ..config import load

    return load({"wiki": state.wiki})


def open_wiki():
    """The configured wiki (errors when there is none)."""
    from ..wiki import Wiki

    return Wiki.open(config=config()) if state.wiki is None else Wiki.open(Path(state.wiki))


def emit_json(data) -> None:
    """Print data as JSON on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    """One line on stderr."""
    print(f"memwiki: {message}", file=sys.stderr)


def split_ref(ref: str) -> tuple[str, str]:
    """TRACK/NAME (a trailing .md is allowed) into (track, name)."""
    from ..errors import InvalidInput

    ref = ref[:-3] if ref.endswith(".md") else ref
    if ref.count("/") != 1:
        raise InvalidInput(f"{ref!r}: expected TRACK/NAME, for example memory/billing-service")
    track, name = ref.split("/")
    return track, name


# Command modules register themselves on `app` when imported.
from . import (  # noqa: E402, F401
    hosts_cmds,
    index_cmds,
    links_cmds,
    memorize_cmds,
    project_cmds,
    sync_cmds,
    wiki_cmds,
)
