"""memwiki: long-term memory for AI coding agents, as markdown RecallFiles in git.

    >>> from memwiki import Wiki
    >>> with Wiki.open("~/memwiki") as wiki:
    ...     result = wiki.retrieve("how do I release the billing service?")

The library's public surface is what this module exports (docs/library.md lists each
name with its signature). Attributes are imported lazily so that `memwiki retrieve`
loads only what it uses: a bare `import memwiki` imports no other module.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: typing alone costs a cold process ~10 ms.
TYPE_CHECKING = False

__version__ = "0.1.0"

# name -> (module, attribute): one place for where each public name lives.
_EXPORTS = {
    "Wiki": ("memwiki.wiki", "Wiki"),
    "CommitResult": ("memwiki.wiki_commit", "CommitResult"),
    "RecallFile": ("memwiki.recallfile.model", "RecallFile"),
    "Problem": ("memwiki.recallfile.model", "Problem"),
    "Page": ("memwiki.catalog", "Page"),
    "Entry": ("memwiki.catalog", "Entry"),
    "LogEntry": ("memwiki.git.history", "LogEntry"),
    "Change": ("memwiki.git.changes", "Change"),
    "RetrievalResult": ("memwiki.index.results", "RetrievalResult"),
    "FileResult": ("memwiki.index.results", "FileResult"),
    "Section": ("memwiki.index.results", "Section"),
    "Config": ("memwiki.config", "Config"),
    "load_config": ("memwiki.config", "load"),
    "MemwikiError": ("memwiki.errors", "MemwikiError"),
    "InvalidInput": ("memwiki.errors", "InvalidInput"),
    "InvalidRecallFile": ("memwiki.recallfile.model", "InvalidRecallFile"),
    "NotFound": ("memwiki.errors", "NotFound"),
    "StateError": ("memwiki.errors", "StateError"),
    "StorageError": ("memwiki.errors", "StorageError"),
}

# Spelled out for linters and type checkers; tests/test_api.py holds it equal to _EXPORTS.
__all__ = [
    "__version__",
    "Change",
    "CommitResult",
    "Config",
    "Entry",
    "FileResult",
    "InvalidInput",
    "InvalidRecallFile",
    "LogEntry",
    "MemwikiError",
    "NotFound",
    "Page",
    "Problem",
    "RecallFile",
    "RetrievalResult",
    "Section",
    "StateError",
    "StorageError",
    "Wiki",
    "load_config",
]

if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ imports
    from .catalog import Entry, Page
    from .config import Config
    from .config import load as load_config
    from .errors import InvalidInput, MemwikiError, NotFound, StateError, StorageError
    from .git.changes import Change
    from .git.history import LogEntry
    from .index.results import FileResult, RetrievalResult, Section
    from .recallfile.model import InvalidRecallFile, Problem, RecallFile
    from .wiki import Wiki
    from .wiki_commit import CommitResult


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value  # imported once: later lookups skip this function
        return value
    raise AttributeError(f"module 'memwiki' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
