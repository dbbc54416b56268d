"""A reader's answer to the index changing under it: which errors mean that, and retrying.

Two things replace or remove index files while a process reads them: a writer committing a
new generation (the files the reader's state named are gone, the newer state is already
committed), and a person deleting `.memwiki/` (which loses nothing: it is derived). Both
are answered by reading again from what is there now; only what keeps failing is reported,
in one line, as damage the search repairs or as a filesystem failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import ENVIRONMENT_ERRNOS, StorageError

OPEN_ATTEMPTS = 5  # a reader whose generation vanished before it opened it tries the newer one

T = TypeVar("T")


# What the machine says about itself, not about files changing under us: retrying cannot
# help, and "the index kept changing" would mislead (a read-only wiki, a full disk, a file
# where `.memwiki/` belongs: five retries, then advice to run the command again).
_NOT_RACES = ENVIRONMENT_ERRNOS


def raced(exc: Exception) -> bool:
    """Whether exc is what index files removed or replaced under this process raise."""
    if isinstance(exc, OSError):
        return exc.errno not in _NOT_RACES
    from whoosh.index import EmptyIndexError, LockError

    return isinstance(exc, EmptyIndexError | LockError)


def retrying(
    attempt: Callable[[], T], last: Callable[[], T], reset: Callable[[], None], directory: Path
) -> T:
    """attempt() until it does not race (OPEN_ATTEMPTS times), then last() once.

    Bug it prevents: deleting .memwiki/ while a retrieve built the index ended the
    retrieve with an internal error (Whoosh's EmptyIndexError, "is not a directory").
    last() is the lenient read that detects and repairs damage; if that still races,
    the index kept changing: a StorageError (exit 5), never an internal error.
    """
    for n in range(OPEN_ATTEMPTS):
        try:
            return attempt()
        except Exception as exc:
            if not raced(exc):
                raise
            reset()
            time.sleep(0.02 * (n + 1))
    try:
        return last()
    except Exception as exc:
        if not raced(exc) or isinstance(exc, FileNotFoundError):
            raise  # a file still missing is damage: the search detects and repairs it
        raise StorageError(
            f"the index in {directory} kept changing while it was read or built "
            f"({type(exc).__name__}: {exc}); run the command again"
        ) from None
