"""Memorize: turn finished agent sessions into RecallFiles through prepared jobs and git runs."""

from __future__ import annotations

from .commit import RunCommitResult, commit
from .prepare import PrepareResult, prepare, prepare_sessions
from .resources import ProjectResources, verify_resources
from .runs import DiscardResult, RunStatus, discard, status
from .validate import RunInvalid

__all__ = [
    "RunCommitResult",
    "DiscardResult",
    "PrepareResult",
    "ProjectResources",
    "RunInvalid",
    "RunStatus",
    "commit",
    "discard",
    "prepare",
    "prepare_sessions",
    "status",
    "verify_resources",
]
