"""The `memwiki` command line: a thin layer that parses, calls the library and prints.

main() takes the global options out of argv (argv.scan_globals), sends `retrieve` to the
Typer-free fast parser and everything else to the Typer application, and turns every
error into one stderr line and a documented exit code (errors.py); under --json also a
JSON error document on stdout, under --debug also the traceback (the exit code stays).
"""

from __future__ import annotations

import sys
import time

from ..errors import MemwikiError

INTERNAL_ERROR = 70
INTERRUPTED = 130


def process_started() -> float:
    """When this process started, on the time.monotonic() clock.

    A hook's budget must cover the interpreter's own start-up and imports, which under
    load take hundreds of milliseconds; /proc/self/stat has the true start time.
    """
    return _STARTED


def _process_start() -> float:
    now = time.monotonic()
    try:
        import os

        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])  # field 22, starttime, in clock ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        if 0 <= age < 60:
            return now - age
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    return now


_STARTED = _process_start()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `memwiki` console script."""
    from .argv import scan_globals

    globals_ = scan_globals(sys.argv[1:] if argv is None else list(argv))
    try:
        from .fast import try_fast

        if try_fast(globals_):
            return 0
        from .app import run

        return run(globals_.typer_argv())
    except MemwikiError as exc:
        return _fail(exc.message, exc.exit_code, globals_.wants_json, globals_.debug)
    except KeyboardInterrupt:
        print("memwiki: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # a bug: one line unless --debug
        message = f"{type(exc).__name__}: {exc}"
        return _fail(message, INTERNAL_ERROR, globals_.wants_json, globals_.debug, internal=True)


def _fail(message: str, code: int, as_json: bool, debug: bool, internal: bool = False) -> int:
    from .output import print_error

    if debug:
        import traceback

        traceback.print_exc()
    print_error(message, code, as_json, internal=internal)
    return code
