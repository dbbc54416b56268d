"""Who stands in the way of a write the system refused, and what to run about it.

The classic case is one `sudo memwiki reindex` (or sync, a root cron job): the files and
folders it made in `.memwiki/` or `.git/` belong to root, and every later write of the
wiki's owner was refused with a bare "Permission denied: <path>". The refusal now names
the file or folder in the way, its owner and the command that gives it back.
"""

from __future__ import annotations

import os
import stat

from .layout import SIDECAR

# Folders whose whole contents memwiki or git writes: what a `chown -R` should cover when
# one entry below them belongs to someone else (one command, not one per refused file).
_WHOLE = (SIDECAR, ".git")


def owner_name(uid: int) -> str:
    """The user name of uid, or the number when the password database has none."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def in_the_way(path: str) -> str | None:
    """The file or folder that keeps this user from writing path: path itself when it
    cannot be written, else its nearest existing folder when that cannot be; None when
    neither can be blamed (the refusal came from elsewhere)."""
    path = os.path.abspath(path)
    if os.path.lexists(path) and not _writable(path):
        return path
    folder = os.path.dirname(path)
    while folder and not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    if folder and not _writable(folder):
        return folder
    return None


def _writable(path: str) -> bool:
    """Whether this user may write path (and enter it, for a folder)."""
    try:
        st = os.lstat(path)
    except OSError:
        return True
    if stat.S_ISLNK(st.st_mode):
        return True  # a link's own bits mean nothing; its target is what was refused
    folder = stat.S_ISDIR(st.st_mode)
    if st.st_uid == os.geteuid():  # the owner bits decide (root's own files included)
        bits = stat.S_IWUSR | (stat.S_IXUSR if folder else 0)
        return st.st_mode & bits == bits
    return os.access(path, os.W_OK | (os.X_OK if folder else 0))


def refused_text(path: str) -> str:
    """ "Permission denied: <path>: <why>" when someone on this machine stands in the way of
    writing path (a folder libgit2 failed to write in without a word), else ""."""
    why = why_refused(path)
    return f"{os.strerror(13)}: {path}: {why}" if why else ""


def shared_umask(value: str, umask: int) -> int:
    """The umask under which new files get the modes git gives them in a repository whose
    core.sharedRepository is value (git applies it to what it writes in .git/ whatever the
    umask; libgit2 does not); umask itself for an unshared one."""
    value = value.strip().lower()
    if value in ("group", "true", "yes", "on", "1"):
        return umask & ~0o070  # the group may do what the owner may
    if value in ("all", "world", "everybody", "2"):
        return umask & ~0o075  # and everybody may read
    if len(value) == 4 and value[0] == "0" and all(c in "01234567" for c in value[1:]):
        mode = int(value, 8)  # exactly these modes: folders searchable where readable
        return 0o777 & ~(mode | (mode & 0o444) >> 2)
    return umask


def why_refused(path: str) -> str:
    """What to say after "Permission denied: <path>": who owns the entry in the way and
    what to run; empty when nothing on this machine can be blamed."""
    blocker = in_the_way(path)
    if blocker is None:
        return ""
    try:
        uid = os.lstat(blocker).st_uid
    except OSError:
        return ""
    me = os.geteuid()
    what = "it" if blocker == os.path.abspath(path) else blocker
    if uid == me:
        return f"{what} is read-only (`chmod u+w {blocker}` if it should not be)"
    owner = owner_name(uid)
    if uid != 0:  # someone else's: theirs to share (group write), not ours to take
        return f"{what} is owned by {owner}, who has not let you write there"
    top = chown_target(blocker)
    try:
        in_ours = os.stat(os.path.dirname(top)).st_uid == me
    except OSError:
        in_ours = False
    if not in_ours:  # root's own place (/opt, /srv): no `chown` of a system folder
        return f"{what} is owned by root"
    return (
        f"{what} is owned by root (left by a command run with sudo?): "
        f"run `sudo chown -R {owner_name(me)} {top}`"
    )


def chown_target(path: str) -> str:
    """The folder a `chown -R` should cover for path: the highest `.memwiki/` or `.git/`
    holding it (everything in them is written by memwiki or git), else path itself."""
    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for n, part in enumerate(parts):
        if part in _WHOLE:
            return os.sep.join(parts[: n + 1])
    return path


def owned_by(top: str, uid: int, limit: int = 3) -> tuple[list[str], int]:
    """Entries under top (top included) that uid owns: the first `limit` in path order, and
    how many there are. Symlinks count by their own owner; nothing is followed."""
    found: list[str] = []
    stack = [top]
    seen = 0
    while stack and seen < 1_000_000:  # bounded: far more entries than a wiki has
        path = stack.pop()
        seen += 1
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid == uid:
            found.append(path)
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(path) as it:
                    stack.extend(e.path for e in it)
            except OSError:
                continue
    return sorted(found)[:limit], len(found)
