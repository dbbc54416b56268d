"""The `memwiki` command line: a thin layer that parses, calls the library and prints."""

from __future__ import annotations

import sys
import time

from ..errors import MemwikiError

INTERNAL_ERROR = 70


def process_started() -> float:
    """When this process started, on the time.monotonic() clock.

    A hook's budget must cover the interpreter's own start-up and imports, which under
    load take hundreds of milliseconds; /proc/self/stat has the true start time.
    """
    return _STARTED


def _process_start() -> float:
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])  # field 22, starttime, in clock ticks after boot
        import os

        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        if 0 <= age < 60:
            return now - age
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    return now


_STARTED = _process_start()


def hoist_global_options(argv: list[str]) -> list[str]:
    """Move --wiki/--debug given after the command to the front, where Typer expects them.

    Agents write `memwiki retrieve "q" --wiki ~/notes` as often as the other order.
    """
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg == "--wiki" and i + 1 < len(argv):
            front += argv[i : i + 2]
            i += 2
            continue
        if arg.startswith("--wiki=") or arg == "--debug":
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `memwiki` console script."""
    argv = hoist_global_options(sys.argv[1:] if argv is None else list(argv))
    debug = "--debug" in argv
    try:
        from .fast import try_fast

        handled, fast_debug = try_fast(argv)
        debug = debug or fast_debug
        if handled:
            return 0
        from .app import app

        app(args=argv, prog_name="memwiki")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except MemwikiError as exc:
        if debug:
            raise
        print(f"memwiki: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("memwiki: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        print(
            f"memwiki: internal error: {type(exc).__name__}: {exc} (run with --debug for details)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR
    return 0
