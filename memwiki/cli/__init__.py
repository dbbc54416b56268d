"""The `memwiki` command line: a thin layer that parses, calls the library and prints.

main() takes the global options out of argv (argv.scan_globals), sends `retrieve` to the
Typer-free fast parser and everything else to the Typer application, and turns every
error into one stderr line and a documented exit code (errors.py); under --json also a
JSON error document on stdout, under --debug also the traceback (the exit code stays).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..errors import MemwikiError, as_storage_error
from ..process import lenient_output, mark_one_command, process_start

if TYPE_CHECKING:
    from .argv import Globals

INTERNAL_ERROR = 70
INTERRUPTED = 130


def process_started() -> float:
    """When this process started, on the time.monotonic() clock.

    A hook's budget must cover the interpreter's own start-up and imports, which under
    load take hundreds of milliseconds; /proc/self/stat has the true start time.
    """
    return _STARTED


_STARTED = process_start()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `memwiki` console script."""
    globals_: Globals | None = None  # scanned inside the try: Ctrl-C may come that early
    try:
        from .argv import scan_globals

        if argv is None:
            _note_ctrl_c()
            mark_one_command()  # a progressive answer counts CPU from the process start
        globals_ = scan_globals(sys.argv[1:] if argv is None else list(argv))
        if argv is None:
            lenient_output()
        return _run(globals_, argv is None)
    except KeyboardInterrupt:  # Ctrl-C: one line, exit 130; every write is atomic
        if globals_ is not None and globals_.debug:
            import traceback

            traceback.print_exc()
        print("memwiki: interrupted", file=sys.stderr)
        if argv is None:
            # No interpreter teardown: the query's vector thread may still be inside
            # onnxruntime, which then aborted the process ("terminate called without an
            # active exception", SIGABRT) instead of exit 130.
            leave_now(INTERRUPTED)
        return INTERRUPTED
    finally:
        import signal

        if argv is None:
            # The command is over: a Ctrl-C in the interpreter's teardown killed the
            # process by SIGINT (exit -2, no line) after it had done all its work.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        elif _HELD:  # run inside another program (tests): its Ctrl-C handling comes back
            signal.signal(signal.SIGINT, _HELD.pop())


def _note_ctrl_c() -> None:
    """Ctrl-C raises KeyboardInterrupt as before and is noted too: Python may drop the former."""
    import signal

    from ..process import on_ctrl_c

    # An ignored SIGINT (a job started in the background) stays ignored.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_ctrl_c)
        sys.unraisablehook = _quiet_lost_ctrl_c


def _quiet_lost_ctrl_c(unraisable) -> None:
    """No "Exception ignored ... KeyboardInterrupt" lines: the Ctrl-C is noted and acted on."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


_HELD: list = []  # the SIGINT handler hold_ctrl_c() replaced, while it is held


def hold_ctrl_c() -> None:
    """From now on a Ctrl-C waits for the command to end: its answer is ready, and printing
    it takes milliseconds.

    Bug it prevents: a Ctrl-C that landed while retrieve wrote its answer cut the answer
    short, or printed the whole answer and then "interrupted" with exit 130.
    """
    import signal
    import threading

    from ..process import interrupted

    if interrupted():  # a Ctrl-C came and its KeyboardInterrupt was lost: no answer
        raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread() and not _HELD:
        _HELD.append(signal.signal(signal.SIGINT, signal.SIG_IGN))


def _run(globals_: Globals, leave: bool) -> int:
    """The command line run: fast retrieve or Typer; every error as one line and its exit code."""
    from ..config import one_blas_thread

    one_blas_thread()  # before numpy is imported
    try:
        from .fast import try_fast

        if try_fast(globals_):
            if leave:
                leave_now()
            return 0
        from .app import run

        return run(globals_.typer_argv())
    except MemwikiError as exc:
        return _fail(exc.message, exc.exit_code, globals_.wants_json, globals_.debug)
    except Exception as exc:  # a bug: one line unless --debug
        # The machine said no (a full disk, a read-only mount, permissions) or libgit2
        # refused: a filesystem or git failure, exit 5, not a bug of memwiki's (exit 70).
        storage = as_storage_error(exc)
        if storage is not None:
            return _fail(storage.message, storage.exit_code, globals_.wants_json, globals_.debug)
        message = f"{type(exc).__name__}: {exc}"
        return _fail(message, INTERNAL_ERROR, globals_.wants_json, globals_.debug, internal=True)


def leave_now(code: int = 0) -> None:
    """End a process as soon as its answer (or its "interrupted") is out: flushed, then os._exit.

    The interpreter's teardown (freeing the manifest, the posting lists, every module)
    took 30-60 ms of a 2,000-file retrieve, after the answer, while the agent waits for
    the process to end; and after a deferred write's fork (index/deferred.py) every page
    it touches would be copied. Nothing is left to flush or run: files are written and
    closed before the answer, and no non-daemon thread is running.
    """
    import os
    import signal

    # The answer is out: a Ctrl-C now would only print "Exception ignored" tracebacks
    # from whatever callback it lands in.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader is gone: nothing more to say
            os._exit(code)
    os._exit(code)


def _fail(message: str, code: int, as_json: bool, debug: bool, internal: bool = False) -> int:
    from .output import print_error

    if debug:
        import traceback

        traceback.print_exc()
    print_error(message, code, as_json, internal=internal)
    return code
