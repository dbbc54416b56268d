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
