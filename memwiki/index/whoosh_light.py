"""Import Whoosh without the two heavy modules it imports but never uses on memwiki's paths.

`whoosh.compat` imports `urllib.request` (for a download helper), `whoosh.reading`
imports the `cached_property` backport, which imports asyncio, and `whoosh.query`
imports English word variations, which compile about a hundred regular expressions.
Together they are about half of Whoosh's import time, paid by every cold `retrieve` and hook call. While
Whoosh imports, light stand-ins take their place (the helper imports the real module if
it is ever called; the backport's decorator is the standard library's); afterwards the
stand-ins are removed, so any later import gets the real modules.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types

_MODULES = (
    "whoosh.compat",
    "whoosh.reading",
    "whoosh.index",
    "whoosh.fields",
    "whoosh.analysis",
    "whoosh.query",
    "whoosh.searching",
    "whoosh.filedb.filestore",
)


def _urlretrieve(*args, **kwargs):
    return importlib.import_module("urllib.request").urlretrieve(*args, **kwargs)


def _variations(word):
    return importlib.import_module("whoosh.lang.morph_en").variations(word)


def import_whoosh() -> None:
    """Import the Whoosh modules memwiki uses, once, with the stand-ins in place."""
    if "whoosh.searching" in sys.modules:
        return
    stubs: dict[str, types.ModuleType] = {}
    if "urllib.request" not in sys.modules:
        stubs["urllib.request"] = types.ModuleType("urllib.request")
        setattr(stubs["urllib.request"], "urlretrieve", _urlretrieve)  # noqa: B010
    if "cached_property" not in sys.modules:
        stubs["cached_property"] = types.ModuleType("cached_property")
        setattr(stubs["cached_property"], "cached_property", functools.cached_property)  # noqa: B010
    if "whoosh.lang.morph_en" not in sys.modules:
        # English word variations (Whoosh's Variations query, unused here) compile about
        # a hundred regular expressions at import: 20 ms of every cold process.
        stubs["whoosh.lang.morph_en"] = types.ModuleType("whoosh.lang.morph_en")
        setattr(stubs["whoosh.lang.morph_en"], "variations", _variations)  # noqa: B010
    sys.modules.update(stubs)
    try:
        for name in _MODULES:
            importlib.import_module(name)
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]
