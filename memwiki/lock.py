"""Advisory file locks (fcntl.flock): one writer at a time, readers never wait."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from .errors import StateError


class FileLock:
    """An exclusive advisory lock on a file; released by the OS if the process dies."""

    def __init__(self, path: Path, timeout: float = 30.0):
        self.path = Path(path)
        self.timeout = timeout
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Take the lock without waiting; False when another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self) -> FileLock:
        """Wait up to timeout seconds for the lock."""
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                raise StateError(f"{self.path} is held by another memwiki process; try again")
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
