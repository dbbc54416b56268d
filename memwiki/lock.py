"""Advisory file locks (fcntl.flock): one writer at a time, readers never wait."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from .errors import StateError
from .fsutil import make_folder

# A wait longer than this is said (index.lock: `reindex` sat silent for up to 10 minutes
# behind a stuck holder).
WAIT_NOTE_S = 1.0


class FileLock:
    """An exclusive advisory lock on a file; released by the OS if the process dies."""

    def __init__(
        self, path: Path, timeout: float = 30.0, on_wait: Callable[[], None] | None = None
    ):
        """on_wait: called once when acquire() has waited WAIT_NOTE_S (to say why nothing happens)."""
        self.path = Path(path)
        self.timeout = timeout
        self.on_wait = on_wait
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Take the lock without waiting; False when another process holds it."""
        fd = _open(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self) -> FileLock:
        """Wait up to timeout seconds for the lock."""
        start = time.monotonic()
        delay = 0.01
        note = self.on_wait
        while not self.try_acquire():
            if time.monotonic() >= start + self.timeout:
                raise StateError(f"{self.path} is held by another memwiki process; try again")
            if note is not None and time.monotonic() >= start + WAIT_NOTE_S:
                note()
                note = None
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        return self

    def release(self) -> None:
        """Give the lock back."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def hand_over(self) -> None:
        """Close this process's descriptor without unlocking: a child forked while it was
        held shares the descriptor's lock (flock), and keeps it until it releases or exits."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def is_held_elsewhere(self) -> bool:
        """True when some other process holds the lock right now."""
        if not self.path.exists():
            return False
        if self.try_acquire():
            self.release()
            return False
        return True

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _open(path: Path) -> int:
    """A descriptor of the lock file, made if missing.

    Read-only when that is all this user may do: flock needs no write access, and a lock
    file another user made (one `sudo memwiki reindex`) refused every later command of
    the wiki's owner with "Permission denied: .memwiki/wiki.lock" (exit 5).
    """
    make_folder(path.parent)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # less the umask, as git's files
    except PermissionError as exc:
        try:
            return os.open(path, os.O_RDONLY)
        except OSError:
            raise exc from None
