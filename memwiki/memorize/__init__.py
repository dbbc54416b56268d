"""Memorize: turn finished agent sessions into RecallFiles through prepared jobs and git runs.

The names below are loaded on first use: `memwiki bridge prepare` reads a host's cursor,
and usually finds nothing new, before it needs any of them, and commit_run alone (merges,
validation, the scrubber) took 0.2 s to import. The modules are prepare_run and
commit_run, not prepare and commit: a submodule of the same name as a function replaces
the function on the package as soon as anything imports the submodule.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .commit_run import RunCommitResult, commit
    from .prepare_run import PrepareResult, prepare, prepare_sessions
    from .resources import ProjectResources, verify_resources
    from .runs import DiscardResult, RunStatus, discard, status
    from .validate import RunInvalid

# public name -> the module that defines it
_WHERE = {
    "RunCommitResult": "commit_run",
    "commit": "commit_run",
    "PrepareResult": "prepare_run",
    "prepare": "prepare_run",
    "prepare_sessions": "prepare_run",
    "ProjectResources": "resources",
    "verify_resources": "resources",
    "DiscardResult": "runs",
    "RunStatus": "runs",
    "discard": "runs",
    "status": "runs",
    "RunInvalid": "validate",
}

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


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once: later lookups do not come here
    return value
