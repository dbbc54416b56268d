"""`memwiki retrieve` without Typer: the agent hot path, run as a cold process before every answer.

Importing Typer costs about 35 ms (its option conversion imported pydantic, another 70 ms,
before cli/coercion.py); this module parses the same options with argparse. `--help` and
usage errors still go through Typer, so the documented interface and the way a mistake is
reported stay in one place (index_cmds.retrieve, app.run).
Both parsers take the global options from argv.scan_globals and the defaults from
argv.RETRIEVE, and tests check that they agree.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .argv import JSON_FLAG, RETRIEVE, Globals

MAX_DEADLINE_MS = 86_400_000  # a day

if TYPE_CHECKING:
    from argparse import Namespace


def parse_retrieve(args: list[str]) -> Namespace | None:
    """The options of `memwiki retrieve`, as index_cmds.retrieve defines them; None if they are wrong.

    A mistake is left to Typer (try_fast returns False), which prints the usage line and
    the error every other command prints for the same mistake, with the same exit code;
    Typer is imported only then, never on the way to an answer.
    """
    import argparse

    class Wrong(Exception):
        pass

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):  # argparse would print its own usage and exit
            raise Wrong(message)

    p = Parser(prog="memwiki retrieve", add_help=False, allow_abbrev=False)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=RETRIEVE.k)
    p.add_argument("--track")
    p.add_argument("--budget", type=int, default=RETRIEVE.budget)
    p.add_argument("--mode", default=RETRIEVE.mode)
    p.add_argument(JSON_FLAG, dest="as_json", action="store_true")
    p.add_argument("--files", action="store_true")
    p.add_argument("--project", default=RETRIEVE.project)
    p.add_argument("--deadline", type=int, default=None)
    try:
        return p.parse_args(args)
    except Wrong:
        return None


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
    deadline_ms: int | None = None,
) -> None:
    """Retrieve and print in the requested format (shared by both parsers).

    Vector work beyond a few files never blocks the answer: it is left to one
    background reindex (docs/retrieval.md, "Progressive answers"). With deadline_ms the
    answer is ready that many milliseconds after the process started, from BM25 alone
    if the vectors are not.
    """
    from ..config import load
    from ..errors import InvalidInput
    from ..project import parse_map, scope, working_directory
    from ..wiki import Wiki

    if as_json and files:
        raise InvalidInput("retrieve: --json and --files cannot be used together")
    deadline = None
    if deadline_ms is not None and deadline_ms > MAX_DEADLINE_MS:
        deadline_ms = None  # longer than any answer takes: no deadline (a huge one overflowed)
    if deadline_ms is not None:
        if deadline_ms < 0:
            raise InvalidInput("--deadline must be a number of milliseconds, 0 or more")
        from . import process_started

        deadline = process_started() + deadline_ms / 1000
    config = load({"wiki": wiki_path})
    from ..index import earlyscan

    earlyscan.start(config.wiki_path)  # a large wiki's scan, before the rest is imported
    wiki = Wiki.open(config.wiki_path, config)
    from ..index.search import check_limits

    check_limits(k, budget, ("-k", "--budget"))  # in the flags' words, not the library's
    mapping = parse_map(config.projects, strict=True)
    # A deleted working directory has no project: the answer is unscoped, not a crash.
    preferred = scope(project, cwd or working_directory(), mapping, config.home, wiki.root)
    result = wiki.retrieve(
        query,
        k=k,
        track=track,
        budget=budget,
        mode=mode,
        project=preferred,
        deadline=deadline,
        background=True,
        defer=True,
    )
    from . import hold_ctrl_c

    hold_ctrl_c()  # the answer is whole or not printed at all
    if as_json:
        from .output import emit_json

        emit_json(result.to_dict())
    elif files:
        sys.stdout.write(result.files_text())
    else:
        sys.stdout.write(result.to_markdown())
    if result.write_later is not None:  # the edit the answer read, written now it is out
        result.write_later()  # (by the background reindex while a vector thread still runs)
    if deadline is not None:
        _leave_if_vectors_still_running()


def _leave_if_vectors_still_running() -> None:
    """Exit now when the vector thread outlived the deadline: it may be inside onnxruntime,
    whose native code can abort the interpreter's shutdown."""
    import os
    import threading

    from ..index.progressive import VECTOR_THREAD

    if any(t.name == VECTOR_THREAD and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def leave_callers_session() -> bool:
    """Start a new session (setsid) unless this process leads a process group; True when it did.

    Linux's autogroup scheduling (on by default on desktops) shares CPU between sessions
    first and between the processes of a session second. A hook started inside a
    session where a build or test run keeps six processes busy would get a seventh of
    that one session's share (measured: 0.05-0.08 CPU s in 1.45 s of wall time, 8 of 20
    prompts with memory); in a session of its own it gets a fair share of the machine.
    The hook keeps its stdin and stdout pipes and always leaves by itself within its
    budget, so a caller that kills only its own process group loses nothing.
    """
    import os

    if not hasattr(os, "setsid"):
        return False
    try:
        os.setsid()
    except OSError:  # EPERM: already a group leader (run from a terminal's job control)
        return False
    return True


def try_fast(globals_: Globals) -> bool:
    """Run retrieve (or the prompt hook) without Typer when the command line asks; True when it did."""
    if globals_.rest == ["hook", "claude-code"]:
        leave_callers_session()  # first: everything after it runs at the session's share
        # The hook's budget counts from the process start; Typer's import alone would
        # take a tenth of it on a busy machine.
        from ..config import load
        from ..hosts.integrate.prompt_hook import run_hook_process
        from . import process_started

        run_hook_process(lambda: load({"wiki": globals_.wiki}), process_started())
        return True
    if globals_.command != "retrieve" or globals_.wants_help or globals_.dangling is not None:
        return False
    opts = parse_retrieve(globals_.rest[1:])
    if opts is None:  # a usage error: Typer says it as it says it for every command
        return False
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
        deadline_ms=opts.deadline,
    )
    return True
