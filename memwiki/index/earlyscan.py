"""A large wiki's freshness scan forked at the very start of `memwiki retrieve`.

At 50,000 files the answer waits for the scan child (index/forkscan.py) about as long as
for its own search: the walk takes about 250 ms, and the child was forked only once the
retrieve had imported the index modules and read the manifest, about 80 ms into the
process. Forked right after the configuration is read instead, with nothing imported
and no thread started, the child reads the manifest itself and starts walking some
40 ms earlier, while the parent imports and opens the index. forkscan.start takes it
when the manifest the parent then reads is the same file (state.pkl's inode, mtime and
size); otherwise it is stopped and another is forked, as before.

Only where the manifest base is large enough that the wiki likely has SPECULATE_MIN_FILES
files (about a kilobyte a file); the child checks the count and leaves when it has fewer.
A child nobody takes (a retrieve that scans in-process, one that failed) finds its pipe
closed at its first word and leaves; it holds none of the caller's output open.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..layout import SIDECAR

if TYPE_CHECKING:
    from .forkscan import PendingScan

#: The manifest base's size from which a wiki may have SPECULATE_MIN_FILES files.
MIN_BASE_BYTES = 2_500_000
#: How long the parent waits for the child's signature before forking its own scan.
TAKE_WAIT_S = 0.5
SIGNATURE = struct.Struct("<qqq")  # state.pkl's inode, mtime_ns and size, as the child read it
_EARLY: dict[str, PendingScan] = {}  # scans started and not yet taken, by wiki root


def start(root: Path) -> bool:
    """Fork the scan of a large wiki now; True when a child was started."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return False
    directory = Path(root) / SIDECAR / "index"
    try:
        large = any(
            e.name.startswith("manifest-") and e.stat().st_size >= MIN_BASE_BYTES
            for e in os.scandir(directory)
        )
    except OSError:
        return False
    if not large:
        return False
    from . import forkscan
    from . import manifest as st

    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # nothing else runs yet: the child may import and read as it likes
        code = 1
        try:
            os.close(r)
            # The caller's stdout and stderr are not held open: a child nobody takes must
            # not keep an agent reading the answer's pipe waiting for its walk.
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            path = directory / "state.pkl"
            info = os.stat(path)
            state = st.load(path)
            if state is not None and len(state.files) >= forkscan.SPECULATE_MIN_FILES:
                signature = (info.st_ino, info.st_mtime_ns, info.st_size)
                os.write(w, SIGNATURE.pack(*signature))
                forkscan.scan_in_child(w, Path(root), state)
                code = 0
        except BaseException:  # the parent forks its own, or scans in-process
            pass
        finally:
            os._exit(code)
    os.close(w)
    key = os.path.realpath(root)
    old = _EARLY.pop(key, None)
    if old is not None:
        old.cancel()
    _EARLY[key] = forkscan.PendingScan.early(pid, r)
    return True


def take(root: Path, signature: tuple | None) -> PendingScan | None:
    """The scan started for root if it read the state.pkl with this signature, else None
    (one that read another, as a writer committed between, is stopped)."""
    early = _EARLY.pop(os.path.realpath(root), None)
    if early is None:
        return None
    # the child writes it once it has read the manifest, as the parent just did
    head = early.read_exactly(SIGNATURE.size, TAKE_WAIT_S) if signature is not None else None
    if head is not None and SIGNATURE.unpack(head) == signature:
        return early
    early.cancel()
    return None
