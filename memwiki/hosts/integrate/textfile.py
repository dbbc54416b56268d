"""Reading and writing the user's text files (instruction files, settings, wrapper scripts)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ...errors import InvalidInput, StorageError
from ...fsutil import atomic_write_bytes
from ...owners import why_refused

NEW_FILE_MODE = 0o644


def newline_of(text: str | None) -> str:
    """The file's line ending: CRLF when its first line ends in one, else LF."""
    text = text or ""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _refuse_special(path: Path, mode: int) -> None:
    # A FIFO would block the read for ever, and a link to /dev/null would be renamed over
    # (as root, replacing the device): memwiki edits regular files only.
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise StorageError(f"{path}: {kind}; memwiki edits regular files only")


def read_text(path: Path) -> str | None:
    """The file's UTF-8 text, or None when it does not exist."""
    try:
        _refuse_special(path, path.stat().st_mode)
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text; memwiki will not edit it") from None


def check_writable(path: Path) -> None:
    """StorageError when the file (the link target for a symlink) is read-only."""
    # The atomic write renames a new file over the old one, which needs only the directory
    # to be writable: without this check a file the user made read-only was replaced anyway.
    real = path.resolve() if path.is_symlink() else path
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"{path}: cannot read: {exc.strerror}") from None
    _refuse_special(path, mode)
    if not (mode & 0o222 and os.access(real, os.W_OK)):
        # Not writable by this user (a file `sudo` left behind): the rename would also have
        # replaced it with a file of another owner.
        what = "read-only" if not mode & 0o222 else "not writable by you"
        fix = "make it writable and run again"
        if real.stat().st_uid != os.geteuid():  # whose it is, and the chown that gives it back
            fix = why_refused(str(real)) or fix
        raise StorageError(
            f"{path}: {what} (mode {stat.S_IMODE(mode):03o}); memwiki will not edit it: {fix}"
        )


def write_text(path: Path, text: str) -> None:
    """Atomic UTF-8 write that follows a symlink and keeps the file's mode."""
    check_writable(path)
    # Write through a symlink (dotfiles repos link these files) and keep the file's mode.
    real = path.resolve() if path.is_symlink() else path
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    try:
        atomic_write_bytes(real, text.encode("utf-8"))
        os.chmod(real, mode)
    except OSError as exc:
        raise StorageError(f"{path}: cannot write: {exc.strerror}") from None


def delete_file(path: Path) -> None:
    """Delete the file (the link target for a symlink); a missing file is fine."""
    check_writable(path)
    try:
        (path.resolve() if path.is_symlink() else path).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(f"{path}: cannot delete: {exc.strerror}") from None
