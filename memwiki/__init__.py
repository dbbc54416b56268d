"""memwiki: long-term memory for AI coding agents, as markdown RecallFiles in git.

    >>> from memwiki import Wiki
    >>> wiki = Wiki.open("~/memwiki")
    >>> result = wiki.retrieve("how do I release the billing service?")

Attributes are imported lazily so that `memwiki retrieve` loads only what it uses.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Wiki": ("memwiki.wiki", "Wiki"),
    "RecallFile": ("memwiki.recallfile", "RecallFile"),
    "Problem": ("memwiki.recallfile", "Problem"),
    "MemwikiError": ("memwiki.errors", "MemwikiError"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'memwiki' has no attribute {name!r}")
