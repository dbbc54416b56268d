"""A query's products with vector segments, remembered for the rest of the process.

A retrieve that finds an edit searches twice (index/forkscan.py): once on the snapshot its
scan then finds stale, once on the updated index. The two share every vector segment but
the one the update appended, and at 50,000 files the product with them (380 MB read) is
most of the second search's vector cost; the second search takes them from here. A
segment is known by its file's name and identity (device, inode, size, mtime): vector
files are written once under a new generation's name and never changed in place, and an
open file keeps its inode while a writer removes the name, so a product is never reused
for other bytes.
"""

from __future__ import annotations

import os
import threading

KEEP = 16  # products remembered (about 4 bytes a row each); the oldest go first

_PRODUCTS: dict[tuple, object] = {}
_LOCK = threading.Lock()  # threads retrieving at once share _PRODUCTS


def identity(source) -> tuple | None:
    """What a vector file is: a path's or an open file's (name, dev, inode, size, mtime_ns)."""
    try:
        if hasattr(source, "fileno"):
            name, info = str(source.name), os.fstat(source.fileno())
        else:
            name, info = str(source), os.stat(source)
    except (OSError, ValueError, AttributeError):
        return None
    return (name, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def product(part, key: tuple | None, query, compute):
    """compute(part, query), or the same product computed before for this segment and query."""
    if key is None:
        return compute(part, query)
    memo = (key, query.dtype.str, query.tobytes())
    found = _PRODUCTS.get(memo)
    if found is None:
        found = compute(part, query)  # outside the lock: numpy lets other threads run
        # Bug it prevents: two threads evicting at once raised RuntimeError or KeyError
        # out of a retrieve (tests/test_threads_caches.py).
        with _LOCK:
            _PRODUCTS[memo] = found
            while len(_PRODUCTS) > KEEP:
                del _PRODUCTS[next(iter(_PRODUCTS))]
    return found
