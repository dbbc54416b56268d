"""The sidecar's append-only logs, bounded: past LIMIT_BYTES a log becomes `<name>.1`.

Bug it prevents: every log under `.memwiki/logs/` (the hook's failures, background
reindexes, deferred index writes, git maintenance) was appended to for ever; nothing
rotated them. Now a log holds at most LIMIT_BYTES before it is moved to `<name>.1`
(replacing the older one), so a log and its predecessor together hold between
LIMIT_BYTES and twice that, and the newest lines are always kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

LIMIT_BYTES = 256 * 1024
ROTATE_LOCK = ".rotate.lock"


def rotate_if_large(path: Path, limit: int | None = None) -> bool:
    """Move path to `<path>.1` when it holds more than limit bytes; True when it moved.

    Writers that still hold the old file open go on writing to `<path>.1`: their lines
    are kept. Two processes rotating at once take turns on a lock and look again, so the
    second never moves the first one's fresh log over the rotated one.
    """
    limit = LIMIT_BYTES if limit is None else limit
    path = Path(path)
    try:
        if path.stat().st_size <= limit:
            return False  # the common case: one stat, no lock
        fd = os.open(path.parent / ROTATE_LOCK, os.O_RDWR | os.O_CREAT, 0o666)  # less the umask
    except OSError:
        return False  # no log yet, or a read-only sidecar: nothing to rotate
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if path.stat().st_size <= limit:
            return False  # another process rotated it meanwhile
        os.replace(path, path.with_name(path.name + ".1"))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def open_log(path: Path, limit: int | None = None) -> int:
    """A descriptor appending to the log at path (made with its folder if missing), rotated
    first when full; OSError when the folder refuses (a read-only or root-owned sidecar)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rotate_if_large(path, limit)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)  # less the umask


def append_line(path: Path, line: str, limit: int | None = None) -> None:
    """Append one line to the log at path (made with its folder if missing), rotated first when full.

    One write(2) with O_APPEND: lines of processes appending at once never interleave.
    """
    fd = open_log(path, limit)
    try:
        os.write(fd, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
