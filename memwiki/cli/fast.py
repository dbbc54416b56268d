"""`memwiki retrieve` without Typer: the agent hot path, run as a cold process before every answer.

Importing Typer (and the pydantic it brings) costs about 90 ms, a third of a BM25-only
retrieval; this module parses the same options with argparse. `--help` still goes
through Typer, so the documented interface stays in one place (index_cmds.retrieve).
Both parsers take the global options from argv.scan_globals and the defaults from
argv.RETRIEVE, and tests check that they agree.
"""

from __future__ import annotations

import sys
from argparse import Namespace

from .argv import JSON_FLAG, RETRIEVE, Globals


def parse_retrieve(args: list[str]) -> Namespace:
    """The options of `memwiki retrieve`, as index_cmds.retrieve defines them."""
    import argparse

    from ..errors import InvalidInput

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):  # one line, exit code 2, like every usage error
            raise InvalidInput(f"retrieve: {message}")

    p = Parser(prog="memwiki retrieve", add_help=False)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=RETRIEVE.k)
    p.add_argument("--track")
    p.add_argument("--budget", type=int, default=RETRIEVE.budget)
    p.add_argument("--mode", default=RETRIEVE.mode)
    p.add_argument(JSON_FLAG, dest="as_json", action="store_true")
    p.add_argument("--files", action="store_true")
    p.add_argument("--project", default=RETRIEVE.project)
    return p.parse_args(args)


def run_retrieve(
    wiki_path: str | None,
    query: str,
    k: int,
    track: str | None,
    budget: int,
    mode: str,
    as_json: bool,
    files: bool,
    project: str = RETRIEVE.project,
    cwd: str | None = None,
) -> None:
    """Retrieve and print in the requested format (shared by both parsers)."""
    import os

    from ..config import load
    from ..project import parse_map, scope
    from ..wiki import Wiki

    config = load({"wiki": wiki_path})
    wiki = Wiki.open(config.wiki_path, config)
    preferred = scope(project, cwd or os.getcwd(), parse_map(config.projects), config.home)
    result = wiki.retrieve(query, k=k, track=track, budget=budget, mode=mode, project=preferred)
    if as_json:
        from .output import emit_json

        emit_json(result.to_dict())
    elif files:
        sys.stdout.write("".join(f"{p}\n" for p in result.paths()))
    else:
        sys.stdout.write(result.to_markdown())


def try_fast(globals_: Globals) -> bool:
    """Run retrieve without Typer when the command line asks for it; True when it did."""
    if globals_.command != "retrieve" or globals_.wants_help:
        return False
    opts = parse_retrieve(globals_.rest[1:])
    run_retrieve(
        globals_.wiki,
        opts.query,
        opts.k,
        opts.track,
        opts.budget,
        opts.mode,
        opts.as_json,
        opts.files,
        opts.project,
    )
    return True
