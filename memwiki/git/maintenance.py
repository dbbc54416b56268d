"""`git gc --auto` in one detached, lock-guarded process once memwiki's commits pass git's threshold.

Bug it prevents: memwiki commits through libgit2, which never packs objects, and a wiki
without a remote never runs `git fetch` (whose `git maintenance run --auto` would). A
year of daily use, 3,000 commits, left 12,007 loose objects in 61 MB of `.git/` (3.2 MB
packed); 12,000 commits 48,007 objects in 247 MB (12 MB packed).

After a commit, `after_commit` looks at the repository as git's own `gc --auto` does (the
loose objects in `objects/17/` times 256 against `gc.auto`, default 6700; the packs
against `gc.autoPackLimit`, default 50): a directory listing, well under a millisecond.
Past the threshold it starts `python -m memwiki.git.maintenance`, detached, holding
`.memwiki/gc.lock` from the start (one at a time; a commit that finds it held starts
nothing). It runs `git gc --auto` without the steps that lock refs (packing refs, expiring
reflogs): packing and pruning objects takes no lock a memwiki writer takes, so neither the
command that started it nor any other waits. Then it takes the wiki's write lock for `git
reflog expire --all` (milliseconds), so no memwiki commit, sync or memorize merge finds
its branch locked. `gc.auto=0` or `maintenance.auto=false` turn it off, as they do for
git. Its output goes to `.memwiki/logs/gc.log`. Nothing here runs on a retrieve.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pygit2

from ..layout import LOGS, SIDECAR

GC_AUTO_DEFAULT = 6700  # git's own defaults (Documentation/config/gc.txt)
PACK_LIMIT_DEFAULT = 50
GIT_DIR_NAME = ".git"
LOCK_NAME = "gc.lock"
LOG_NAME = "gc.log"
# When a gc leaves the repository still past the threshold (unreachable objects younger
# than gc.pruneExpire, two weeks, stay loose), it is not started again for RETRY_S:
# without this every commit would start one that packs nothing. git's own detached gc
# does the same with .git/gc.log (gc.logExpiry, one day).
STILL_DUE_NAME = "gc-still-due"
RETRY_S = 86400.0
GC_TIMEOUT_S = 3600.0  # a stuck gc is killed; the next commit past the threshold starts another
WRITE_LOCK_WAIT_S = 600.0  # for the reflogs: a long memorize merge finishes first

# The processes this one started and has not reaped (a long-lived library caller).
_STARTED: list[subprocess.Popen] = []


def _common_dir(repo: pygit2.Repository) -> Path:
    """The repository's own .git, also from a memorize run's worktree (whose objects are there)."""
    gitdir = Path(repo.path)
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    return (gitdir / common).resolve()


def _int_setting(repo: pygit2.Repository, key: str, default: int) -> int:
    try:
        return repo.config.get_int(key)
    except (KeyError, ValueError, pygit2.GitError):
        return default


def _off(repo: pygit2.Repository) -> bool:
    try:
        return not repo.config.get_bool("maintenance.auto")
    except (KeyError, ValueError, pygit2.GitError):
        return False


def due(common: Path, gc_auto: int = GC_AUTO_DEFAULT, pack_limit: int = PACK_LIMIT_DEFAULT) -> bool:
    """Whether `git gc --auto` would do something here: git's own estimate, not a full count."""
    if gc_auto <= 0:
        return False
    objects = common / "objects"
    try:
        sample = sum(1 for name in os.listdir(objects / "17") if len(name) == 38)
    except OSError:
        sample = 0
    if sample > (gc_auto + 255) // 256:
        return True
    if pack_limit <= 0:
        return False
    try:
        names = set(os.listdir(objects / "pack"))
    except OSError:
        return False
    packs = [n for n in names if n.endswith(".pack") and n[:-5] + ".keep" not in names]
    return len(packs) > pack_limit


def after_commit(repo: pygit2.Repository) -> bool:
    """Start the background gc when the repository is past git's threshold; True when started.

    Never raises and never waits: a commit is done whatever happens here.
    """
    # A finished gc is reaped here, at the next commit: a long-lived library process
    # keeps at most one zombie.
    _STARTED[:] = [proc for proc in _STARTED if proc.poll() is None]
    try:
        common = _common_dir(repo)
        gc_auto = _int_setting(repo, "gc.auto", GC_AUTO_DEFAULT)
        if not due(common, gc_auto, _int_setting(repo, "gc.autoPackLimit", PACK_LIMIT_DEFAULT)):
            return False
        if _off(repo) or shutil.which("git") is None:
            return False
        return start(common)
    except Exception:  # noqa: BLE001 - packing only saves disk; the commit stands
        return False


def _sidecar(common: Path) -> Path | None:
    sidecar = common.parent / SIDECAR
    return sidecar if common.name == GIT_DIR_NAME and sidecar.is_dir() else None


def start(common: Path) -> bool:
    """Start the detached gc process unless one is running; True when a process was started.

    This process takes gc.lock and hands it to the child (an inherited descriptor keeps
    an flock), so no second gc can start in the moment before the child runs.
    """
    from ..config import repository_free_env
    from ..logfile import open_log

    sidecar = _sidecar(common)
    if sidecar is None:
        return False  # a bare or unusual repository: no lock to guard a gc with
    try:  # a stamp in the future (a clock set back) counts as old, never as "wait for ever"
        if abs(time.time() - (sidecar / STILL_DUE_NAME).stat().st_mtime) < RETRY_S:
            return False
    except OSError:
        pass
    fd = os.open(sidecar / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)  # less the umask
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a gc is running
        root = common.parent
        try:
            out = open_log(sidecar / LOGS / LOG_NAME)
        except OSError:  # a log folder another user owns: the gc runs all the same
            out = os.open(os.devnull, os.O_WRONLY)
        try:
            _STARTED.append(
                subprocess.Popen(
                    [sys.executable, "-m", "memwiki.git.maintenance", str(root), str(fd)],
                    cwd=str(root),
                    # a hook's or a dotfiles set-up's GIT_DIR would have git pack another
                    # repository
                    env=repository_free_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,  # outlives the command that started it
                    pass_fds=(fd,),  # gc.lock, and nothing else: the write lock stays ours
                )
            )
        finally:
            os.close(out)
        return True
    finally:
        os.close(fd)  # the child's copy holds the lock until it exits


# The gc proper, without the two steps that lock refs (libgit2 fails a commit whose branch
# lock another process holds): it packs and prunes objects, which memwiki's writers never
# lock, so they need not wait for it.
GC_ARGV = [
    "git",
    "-c",
    "gc.autoDetach=false",  # this process is the detached one, and holds gc.lock for it
    "-c",
    "gc.packRefs=false",
    "-c",
    "gc.reflogExpire=never",
    "-c",
    "gc.reflogExpireUnreachable=never",
    "gc",
    "--auto",
    "--quiet",
]
# Then, under the wiki's write lock, the reflogs (one line a commit in logs/HEAD and the
# branch's) are cut to gc.reflogExpire as `git gc` would: a few milliseconds.
REFLOG_ARGV = ["git", "reflog", "expire", "--all"]


def run(root: Path) -> int:
    """The background process (holding gc.lock): `git gc --auto`, then the reflogs under the write lock."""
    from ..lock import FileLock
    from ..timestamps import now_iso

    def say(text: str) -> None:
        print(f"{now_iso()} {text}", flush=True)

    common = root / GIT_DIR_NAME
    with contextlib.suppress(OSError):  # a prompt's retrieve comes first (git inherits it)
        os.nice(10)
    try:
        repo = pygit2.Repository(str(root))
        gc_auto = _int_setting(repo, "gc.auto", GC_AUTO_DEFAULT)
        limit = _int_setting(repo, "gc.autoPackLimit", PACK_LIMIT_DEFAULT)
        repo.free()  # git rewrites the packs this would keep mapped
        if not due(common, gc_auto, limit):
            return 0  # a gc ran meanwhile
        say("git gc --auto: started")
        done = subprocess.run(GC_ARGV, cwd=root, stdin=subprocess.DEVNULL, timeout=GC_TIMEOUT_S)
        say(f"git gc --auto: exit {done.returncode}")
        if due(common, gc_auto, limit):
            say(
                "git gc --auto: still past gc.auto (unreachable objects younger than "
                "gc.pruneExpire); not started again for a day"
            )
            (root / SIDECAR / STILL_DUE_NAME).touch()
        with FileLock(root / SIDECAR / "wiki.lock", timeout=WRITE_LOCK_WAIT_S):
            expired = subprocess.run(
                REFLOG_ARGV, cwd=root, stdin=subprocess.DEVNULL, timeout=GC_TIMEOUT_S
            )
        say(f"git reflog expire: exit {expired.returncode}")
        return done.returncode or expired.returncode
    except subprocess.TimeoutExpired:
        say(f"git gc --auto: killed after {int(GC_TIMEOUT_S)} s")
        return 1
    except Exception as exc:  # noqa: BLE001 - one line in the log, never a traceback
        say(f"git gc --auto: not run: {exc}")
        return 1


if __name__ == "__main__":  # started by start(), holding gc.lock as descriptor argv[2]
    sys.exit(run(Path(sys.argv[1])))
