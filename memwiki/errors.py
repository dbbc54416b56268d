"""Errors memwiki raises, each with the process exit code the CLI uses for it.

Exit codes (documented in docs/reference.md):
  0  success (also: an empty retrieval result)
  1  the command ran and found problems (lint failures, doctor found a broken setup)
  2  usage error: bad arguments or bad input (payload, file, name)
  3  not found: no wiki, no such RecallFile, no such run
  4  conflict or state error: the wiki is busy, a run is in the wrong state
  5  git or filesystem failure
"""

from __future__ import annotations

import errno
import functools
import os
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


class MemwikiError(Exception):
    """Base class: a one-line, user-facing message and an exit code."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidInput(MemwikiError):
    """Bad arguments, a bad payload, a bad name or a malformed file."""

    exit_code = 2


class NotFound(MemwikiError):
    """A wiki, RecallFile, run or revision that does not exist."""

    exit_code = 3


class StateError(MemwikiError):
    """The operation does not fit the current state (busy, already done, wrong branch)."""

    exit_code = 4


class StorageError(MemwikiError):
    """git or the filesystem failed underneath us."""

    exit_code = 5


def check_type(what: str, value: object, types: tuple[type, ...], wanted: str = "") -> None:
    """InvalidInput unless value is one of types (a bool is no int): a library caller's
    wrong type is named here, not met as a TypeError or AttributeError from deep inside."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        wanted = wanted or " or ".join("None" if t is type(None) else t.__name__ for t in types)
        raise InvalidInput(f"{what} must be {wanted}, not {type(value).__name__}")


# errno values that describe the machine, not memwiki: full disk or quota, read-only
# filesystem, permission, I/O error, a file size limit (`ulimit -f`: EFBIG was an
# internal error, exit 70), a file standing where a folder belongs (a `.memwiki` file).
ENVIRONMENT_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.EIO,
    errno.EFBIG,
    errno.ENOTDIR,
}


def as_storage_error(exc: BaseException) -> StorageError | None:
    """exc as the StorageError it stands for (the machine or libgit2 said no), else None."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOTDIR and exc.filename:
        blocker = file_in_the_way(str(exc.filename))
        return StorageError(f"{blocker} is a file where a folder belongs: move it away")
    if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
        where = f": {exc.filename}" if exc.filename else ""
        text = f"{exc.strerror or type(exc).__name__}{where}"
        if exc.errno in (errno.EACCES, errno.EPERM) and exc.filename:
            text = refused(text, str(exc.filename))
        return StorageError(text)
    if isinstance(exc, OSError) and exc.errno is None:
        # libgit2's OS errors reach us as OSError without an errno, the system's words in
        # the text: "failed to write out file: No space left on device" (was exit 70).
        text = " ".join(str(exc).split())
        if any(os.strerror(code) in text for code in ENVIRONMENT_ERRNOS):
            return StorageError(libgit2_refused(text))
    pygit2 = sys.modules.get("pygit2")  # loaded by whatever raised its error
    if pygit2 is not None and isinstance(exc, pygit2.GitError):
        return StorageError(f"git failed: {libgit2_refused(' '.join(str(exc).split()))}")
    return None


def libgit2_refused(text: str) -> str:
    """libgit2's text of an error, with the owner of the path it names in quotes when
    permissions refused it ("failed to create locked file '<path>': Permission denied")."""
    quoted = re.search(r"'(/[^']+)'", text)
    if os.strerror(errno.EACCES) in text and quoted:
        return refused(text, quoted.group(1))
    return text


def refused(text: str, path: str) -> str:
    """A permission refusal's text with who owns the file or folder in the way and what to
    run (a `sudo memwiki ...` left root's files in `.memwiki/`: "Permission denied" alone
    left the user guessing)."""
    from .owners import why_refused

    why = why_refused(path)
    return f"{text}: {why}" if why else text


def file_in_the_way(path: str) -> str:
    """The first of path's folders that is something else (a file), or path when none is."""
    parts = os.path.abspath(path).split(os.sep)
    for n in range(2, len(parts) + 1):
        folder = os.sep.join(parts[:n])
        if os.path.lexists(folder) and not os.path.isdir(folder):
            return folder
    return path


def library_call(method: F) -> F:
    """A public Wiki method: a full disk, a read-only file or libgit2's refusal reaches
    the caller as StorageError (exit code 5), as the command line reports it.

    Bug it prevents: a library caller got a bare PermissionError or pygit2.GitError where
    the documented MemwikiError was promised; only the CLI translated them.
    """

    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except MemwikiError:
            raise
        except Exception as exc:
            error = as_storage_error(exc)
            if error is None:
                raise
            raise error from exc

    return cast(F, call)
