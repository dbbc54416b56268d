"""Atomic writes and path safety: the two things every writer in memwiki needs."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import InvalidInput


@contextlib.contextmanager
def atomic_write(path: Path, sync_dir: bool = True):
    """A binary file handle whose contents replace path atomically on success.

    Temp file in the same directory, fsync, rename, fsync of the directory; on any error
    the temp file is removed and path is untouched.

    sync_dir=False leaves out the directory's fsync, which makes the new name itself
    survive a machine crash (the contents are fsynced before the rename either way, so
    a name that survives always has its whole contents). For a file nothing names yet
    that a later atomic write in the same directory will name (an index segment before
    its `state.pkl`: that write's directory fsync makes both names durable), or whose
    loss costs only a cache entry.
    """
    path = Path(path)
    make_folder(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # named by the file it was for, not a temporary name never made
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        # mkstemp creates the file 0600; a rewrite must keep the file's mode and a new file
        # gets the mode any editor would give it (0666 less the umask).
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        _fsync_dir(path.parent)


def make_folder(path: Path) -> None:
    """path and its parents made as folders (those there already are fine).

    A file where one of them belongs is NotADirectoryError naming path, which the command
    line reports as that file to move away: mkdir's FileExistsError for a `.memwiki`
    file was an internal error (exit 70) in every writing command.
    """
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None


# atomic_write's temporary file: "." + the name + mkstemp's 8 random characters + ".tmp".
_TEMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")


def is_temp_name(name: str) -> bool:
    """True for the name of an atomic_write temporary file (a killed writer leaves it)."""
    return _TEMP_NAME.fullmatch(name) is not None


# A write's temporary file this far from now (either way: a clock set back) is a killed
# writer's; a live one renames it within seconds.
STALE_TEMP_S = 600


def drop_stale_temp(path: str | os.PathLike[str]) -> bool:
    """Delete path if it is a killed writer's temporary file (is_temp_name's, a regular
    file older, or newer, than STALE_TEMP_S); True when it did."""
    import stat
    import time

    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and abs(time.time() - info.st_mtime) > STALE_TEMP_S:
            os.unlink(path)
            return True
    except OSError:  # gone already, or not ours to delete
        pass
    return False


def remove_stale_temps(directory: str | os.PathLike[str]) -> int:
    """drop_stale_temp for every temporary file's name in directory; how many went.

    Bug it prevents: each SIGKILLed update or cache write could leave one (a vector
    segment's, a cache chunk's: up to megabytes) that nothing ever deleted.
    """
    folder = os.fspath(directory)
    try:
        names = [e.name for e in os.scandir(folder) if e.name.startswith(".")]
    except OSError:
        return 0
    return sum(drop_stale_temp(os.path.join(folder, n)) for n in names if is_temp_name(n))


def atomic_write_bytes(path: Path, data: bytes, sync_dir: bool = True) -> None:
    """Write data to path atomically: temp file in the same directory, fsync, rename."""
    with atomic_write(path, sync_dir) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    """Atomic write of UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """This process's umask, read without changing it where Linux says it
    (/proc/self/status): os.umask(0) and back left a moment in which another thread's
    new file got mode 0666 (memwiki is called from several threads)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o077)  # elsewhere: the moment's umask is the strictest, not 0
    os.umask(umask)
    return umask


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def safe_join(root: Path, *parts: str) -> Path:
    """root/parts, refusing absolute parts, '..', and symlinks that lead outside root."""
    root = Path(root).resolve()
    for part in parts:
        if not part or part.startswith(("/", "\\")) or Path(part).is_absolute():
            raise InvalidInput(f"refused path {part!r}: absolute or empty paths are not allowed")
        if ".." in Path(part).parts or "\x00" in part:
            raise InvalidInput(f"refused path {part!r}: '..' would escape the wiki")
    candidate = root.joinpath(*parts)
    resolved = candidate.resolve()
    if resolved != root and root not in resolved.parents:
        raise InvalidInput(f"refused path {'/'.join(parts)!r}: it leads outside the wiki")
    if resolved != root and not link_target_ok(str(resolved), str(root)):
        raise InvalidInput(
            f"refused path {'/'.join(parts)!r}: it leads into a dot-folder of the wiki"
        )
    return candidate


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def identity_facts(path: Path) -> dict[str, int]:
    """A file's size, mtime_ns and inode: what says its bytes were not replaced since a hash."""
    st = Path(path).stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def list_folder(directory: str) -> list[os.DirEntry]:
    """A folder's entries, unsorted (os.scandir, closed at once); OSError when it cannot be listed."""
    with os.scandir(directory) as it:
        return list(it)


def markdown_files(
    top: Path, root: Path, listdir: Callable[[str], list[os.DirEntry]] = list_folder
) -> Iterator[Path]:
    """Markdown files under top in path order: dot entries, symlinked folders, links
    leading outside root and Obsidian's template and daily-note folders skipped.

    What cannot be read is yielded all the same, for the reader to fail on and report
    ('cannot read: ...') instead of leaving it out unsaid: a link that loops or dangles,
    and a folder that cannot be listed (yielded itself, in place of its files).

    os.scandir, not Path.rglob: at 50,000 files rglob's Path objects, their sorting and
    relative_to took 2.3 s of a 3.9 s `memwiki list`. Each folder's entries are visited
    in name order, a subfolder at its name's place, which is the order sorted() gives
    the Path objects (component by component). listdir: the folders as a caller listed
    them already (lint lists the work tree once for every check).
    """
    stack: list[Iterator[tuple[str, bool, bool, str]]] = []

    def entries(directory: str) -> Iterator[tuple[str, bool, bool, str]] | None:
        """The folder's entries in name order; None when it cannot be listed."""
        try:
            found = [_entry(e) for e in listdir(directory) if not e.name.startswith(".")]
        except FileNotFoundError:  # vanished: nothing under it
            return iter(())
        except OSError:
            return None
        return iter(sorted(found))

    from .layout import app_folders

    skip = {os.path.join(root, folder) for folder in app_folders(root)}  # Obsidian's own
    if str(top) in skip:
        return
    stack.append(entries(str(top)) or iter(()))
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        name, is_dir, is_link, path = entry
        if is_dir and not is_link:
            if path in skip:
                continue  # a folder Obsidian's Templates or Daily notes plugin owns
            below = entries(path)
            if below is None:
                yield Path(path)  # reading it fails as listing it did, and says why
            else:
                stack.append(below)
        elif name.endswith(".md") and not is_dir:
            if is_link and not link_target_ok(os.path.realpath(path), os.path.realpath(root)):
                continue  # a link leading outside the wiki (or into .git/) is never read
            yield Path(path)


def _entry(e: os.DirEntry) -> tuple[str, bool, bool, str]:
    """(name, is a folder, is a symlink, path) of a directory entry.

    is_dir() answers from the entry's type without a stat, but follows a symlink: a loop
    (ELOOP) is taken for a file, which its reader then reports, and never ends the listing
    of the whole folder.
    """
    try:
        is_dir = e.is_dir()
    except OSError:
        is_dir = False
    return e.name, is_dir, e.is_symlink(), e.path


def link_target_ok(real: str, root_real: str) -> bool:
    """True when a symlink in the wiki may be followed to real: inside root_real, in no dot-entry.

    The one rule for where a link in the wiki may lead (the index walk, `list`, `lint`,
    `show` and the writers all ask here). Both paths are already resolved (os.path.realpath,
    not Path.resolve: on Python 3.11 resolve raises RuntimeError on a symlink loop, where
    realpath stops at the loop, which the reader then reports). A pulled note that links to
    `../.git/config` (whose remote URL may hold a token) or into `.memwiki/` (the index, run
    transcripts) is treated like a link leading outside: every reader skips it, as they skip
    the dot-folders themselves, and lint reports it.
    """
    prefix = root_real.rstrip(os.sep) + os.sep
    if not real.startswith(prefix):
        return False
    return not any(part.startswith(".") for part in real[len(prefix) :].split(os.sep))
