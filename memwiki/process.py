"""This process: when it started, and the Ctrl-Cs it received.

Every command needs both (the CLI notes Ctrl-C before it parses anything; a hook's budget
counts from the process start), so they live here, below the index: a command that never
retrieves imports no index code for them.
"""

from __future__ import annotations

import time


def process_start() -> float:
    """When this process started, on the time.monotonic() clock (now, if unknown).

    /proc/self/stat has the true start time, so a budget can cover the interpreter's own
    start-up and imports, which under load take hundreds of milliseconds.
    """
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


_ONE_COMMAND: list[bool] = []  # set by the command line: this process runs one command


def mark_one_command() -> None:
    """Say that this process was started for one command (the memwiki executable)."""
    _ONE_COMMAND.append(True)


def runs_one_command() -> bool:
    """Whether this process runs one command, so its whole life so far is that command's
    (False in a program using the library: a server, a notebook)."""
    return bool(_ONE_COMMAND)


# The Ctrl-Cs this process received (on_ctrl_c). Bug they fix: a KeyboardInterrupt raised
# inside importlib's weakref callback that drops a module lock was printed as "Exception
# ignored" and lost, with the global import lock still held by the main thread; the vector
# thread (index/progressive.py) then waited for ever to import onnxruntime, and the answer
# for the vector thread.
_CTRL_C: list[int] = []


def on_ctrl_c(signum, frame) -> None:
    """SIGINT handler: Python's KeyboardInterrupt, plus a note of it that cannot be lost."""
    _CTRL_C.append(signum)
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether a Ctrl-C came, even one whose KeyboardInterrupt Python dropped."""
    return bool(_CTRL_C)


def writes_utf8(stream) -> bool:
    """True when a text stream encodes UTF-8 (a Latin-1 or ASCII locale's stdout does not)."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8", "utf-8-sig")


def lenient_output() -> None:
    """stdout and stderr escape what their encoding cannot say (`\\u8a08`) instead of
    failing: under a Latin-1 or ASCII locale (or PYTHONIOENCODING=ascii) a note in Chinese
    made `retrieve` and `list` an internal error, and their whole answer was lost."""
    import contextlib
    import sys

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        # surrogateescape: the C locale's streams, which fail the same way on a CJK note
        errors = getattr(stream, "errors", "")
        if reconfigure is not None and errors in ("strict", "surrogateescape"):
            # A closed or detached stream: nothing will be said there anyway.
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
