"""`memwiki retrieve` without Typer: the agent hot path, run as a cold process before every answer.

Importing Typer (and the pydantic it brings) costs about 90 ms, a third of a BM25-only
retrieval; this module parses the same options with argparse. `--help` still goes
through Typer, so the documented interface stays in one place (index_cmds.retrieve),
and tests check that both parsers agree.
"""

from __future__ import annotations

import sys

MODES = ("hybrid", "bm25", "vector")


def split_globals(argv: list[str]) -> tuple[str | None, bool, list[str]] | None:
    """(wiki, debug, rest) when argv is `[--wiki W] [--debug] retrieve ...`, else None."""
    wiki, debug, i = None, False, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--wiki", "-w") and i + 1 < len(argv):
            wiki, i = argv[i + 1], i + 2
        elif arg.startswith("--wiki="):
            wiki, i = arg.split("=", 1)[1], i + 1
        elif arg == "--debug":
            debug, i = True, i + 1
        else:
            break
    rest = argv[i:]
    if not rest or rest[0] != "retrieve" or any(a in ("-h", "--help") for a in rest):
        return None
    return wiki, debug, rest[1:]


def parse_retrieve(args: list[str]):
    """The options of `memwiki retrieve`, as index_cmds.retrieve defines them."""
    import argparse

    from ..errors import InvalidInput

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):  # one line, exit code 2, like every usage error
            raise InvalidInput(f"retrieve: {message}")

    p = Parser(prog="memwiki retrieve", add_help=False)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--track")
    p.add_argument("--budget", type=int, default=1500)
    p.add_argument("--mode", default="hybrid")
    p.add_argument("--json", dest="as_json", action="store_true")
    p.add_argument("--files", action="store_true")
    p.add_argument("--project", default="auto")
    return p.parse_args(args)


def run_retrieve(
    wiki_path, query, k, track, budget, mode, as_json, files, project="auto", cwd=None
) -> None:
    """Retrieve and print in the requested format (shared by both parsers)."""
    import os

    from ..config import load
    from ..project import parse_map, scope
    from ..wiki import Wiki

    config = load({"wiki": wiki_path})
    wiki = Wiki.open(config.wiki_path)
    preferred = scope(project, cwd or os.getcwd(), parse_map(config.get("projects")), config.home)
    result = wiki.retrieve(
        query, k=k, track=track, budget=budget, mode=mode, config=config, project=preferred
    )
    if as_json:
        import json

        sys.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    elif files:
        sys.stdout.write("".join(f"{p}\n" for p in result.paths()))
    else:
        sys.stdout.write(result.to_markdown())


def try_fast(argv: list[str]) -> tuple[bool, bool]:
    """Run retrieve without Typer when argv asks for it: (handled, debug)."""
    parsed = split_globals(argv)
    if parsed is None:
        return False, False
    wiki, debug, rest = parsed
    opts = parse_retrieve(rest)
    run_retrieve(
        wiki,
        opts.query,
        opts.k,
        opts.track,
        opts.budget,
        opts.mode,
        opts.as_json,
        opts.files,
        opts.project,
    )
    return True, debug
