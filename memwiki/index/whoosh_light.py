"""Import Whoosh without the two heavy modules it imports but never uses on memwiki's paths.

`whoosh.compat` imports `urllib.request` (for a download helper), `whoosh.reading`
imports the `cached_property` backport, which imports asyncio, and `whoosh.query`
imports English word variations, which compile about a hundred regular expressions.
Together they are about half of Whoosh's import time, paid by every cold `retrieve` and hook call. While
Whoosh imports, light stand-ins take their place (the helper imports the real module if
it is ever called; the backport's decorator is the standard library's); afterwards the
stand-ins are removed, so any later import gets the real modules.

Whoosh memory-maps a segment and then gives each of its parts (terms, postings, ...) a
`BufferFile` that copies the part into a `BytesIO`: every searcher opened copies the
postings, a cost that grows with the wiki (about 10 MB, 6-11 ms of CPU, at 2,000 files).
`ViewFile` reads the same bytes straight from the mapped memory instead, and `storage`
makes Whoosh's folders without the exception Whoosh keeps in a reference cycle.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
import types
from pathlib import Path
from typing import Any

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


class ViewFile:
    """A read-only file over a memoryview, without copying it (what BufferFile needs of BytesIO)."""

    __slots__ = ("_view", "_pos", "_base")

    def __init__(self, buf) -> None:
        self._base = buf  # the storage's view of the mapping (BufferFile's _buf)
        self._view = memoryview(buf).cast("B")
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        """Up to size bytes from the current position (all that is left when size < 0)."""
        end = len(self._view) if size is None or size < 0 else self._pos + size
        data = self._view[self._pos : end].tobytes()
        self._pos += len(data)
        return data

    def readinto(self, target) -> int:
        """Fill target from the current position; the number of bytes copied."""
        data = self.read(len(memoryview(target).cast("B")))
        memoryview(target).cast("B")[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        """The rest of the current line, its newline included."""
        end = len(self._view)
        if size is not None and size >= 0:
            end = min(end, self._pos + size)
        newline = bytes(self._view[self._pos : end]).find(b"\n")
        return self.read((end if newline < 0 else self._pos + newline + 1) - self._pos)

    def __iter__(self):
        while line := self.readline():
            yield line

    def seek(self, pos: int, whence: int = 0) -> int:
        """Move like a file's seek (0: from the start, 1: from here, 2: from the end)."""
        if whence == 0 and pos < 0:
            raise ValueError(f"negative seek position {pos}")
        base = (0, self._pos, len(self._view))[whence]
        self._pos = max(0, base + pos)  # as BytesIO: relative seeks stop at the start
        return self._pos

    def tell(self) -> int:
        """The current position."""
        return self._pos

    def getvalue(self) -> bytes:
        """All the bytes (BytesIO's name for it)."""
        return self._view.tobytes()

    def flush(self) -> None:
        """Nothing to flush: read-only."""

    def close(self) -> None:
        """Release the views of the segment's mapping, so that its storage unmaps it now.

        Bug it prevents: the views outlived a closed reader in reference cycles, so a
        long-lived process kept older generations' segments mapped (and open, deleted)
        until the garbage collector ran; the storage's close() could not unmap them.
        """
        for view in (self._view, self._base):
            if isinstance(view, memoryview):
                with contextlib.suppress(BufferError):  # a part still exported: GC frees it
                    view.release()


def _buffer_file_init(self, buf, name=None, onclose=None) -> None:
    # BufferFile.__init__ with a ViewFile where Whoosh puts BytesIO(buf), a copy of buf.
    self._buf = buf
    self._name = name
    self.file = ViewFile(buf)
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


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
        structfile = importlib.import_module("whoosh.filedb.structfile")
        structfile.BufferFile.__init__ = _buffer_file_init
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]


def storage(directory: Path, readonly: bool = False):
    """Whoosh's storage of directory, whose create() raises nothing when the folder exists.

    Bug it prevents: every Whoosh writer made its temporary folder twice, and the second
    FileExistsError, which Whoosh keeps in a local, made a cycle holding every frame of
    the caller's stack: in a long-lived process (a server using the library) the index
    state's mapped manifest and vectors stayed open and mapped after a writer deleted
    them, until the garbage collector happened to run.
    """
    import_whoosh()
    global _Storage
    if _Storage is None:
        from whoosh.filedb.filestore import FileStorage, random_name

        class Storage(FileStorage):
            """FileStorage whose folders are made without an exception kept in a cycle."""

            def create(self):
                """Make the folder if it is missing (an existing one is no error)."""
                os.makedirs(self.folder, exist_ok=True)  # Whoosh's raises when it exists
                return self

            def temp_storage(self, name=None):
                """A temporary storage inside this one, made as create() makes it."""
                name = name or f"{random_name()}.tmp"
                return Storage(os.path.join(self.folder, name)).create()

        _Storage = Storage
    return _Storage(str(directory), readonly=readonly)


_Storage: Any = None  # the class above, made once Whoosh is imported
