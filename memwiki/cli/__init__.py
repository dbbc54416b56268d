"""The `memwiki` command line: a thin layer that parses, calls the library and prints."""

from __future__ import annotations

import sys

from ..errors import MemwikiError

INTERNAL_ERROR = 70


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `memwiki` console script."""
    argv = sys.argv[1:] if argv is None else argv
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
