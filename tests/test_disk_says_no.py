"""The file system says no: a file size limit, a file where `.memwiki/` belongs, a sidecar
that cannot be written, a lock file of another user. One line, exit 5, nothing lost.

The limit is `ulimit -f` (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails with
EFBIG), which binds root too; permissions bind root once it runs without the capability
that bypasses them (setpriv).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_walk_links import unprivileged

from memwiki.wiki import Wiki

REPO = Path(__file__).resolve().parents[1]
NOTE = "---\nname: {n}\ndescription: note {n}\n---\n{body}\n"


def _limited(blocks: int):
    """preexec_fn: files may grow to `blocks` KiB; a write past that fails (EFBIG)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (blocks * 1024, blocks * 1024))

    return limit


def _memwiki(wiki: Path, *argv: str, limit: int | None = None, stdin: str = "", prefix=()):
    env = {**os.environ, "MEMWIKI_EMBED": "hash", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "memwiki", "--wiki", str(wiki), *argv],
        input=stdin, capture_output=True, text=True, env=env, timeout=120,
        preexec_fn=None if limit is None else _limited(limit),
    )  # fmt: skip


def _git(wiki: Path, *argv: str) -> str:
    done = subprocess.run(["git", "-C", str(wiki), *argv], capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def indexed(tmp_path) -> Path:
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory/people.md").write_text(
        NOTE.format(n="people", body="Ada runs the zebracorn team.")
    )
    wiki.commit()
    assert _memwiki(wiki.root, "reindex").returncode == 0
    return wiki.root


def _one_error(done, code: int, text: str) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memwiki: error: ") and text in lines[0], lines


def test_a_file_size_limit_is_a_filesystem_failure_not_a_bug(indexed):
    """Bug: under `ulimit -f` (EFBIG) add, reindex and memorize prepare ended with
    "internal error: OSError: [Errno 27] File too large" (exit 70, "a bug in memwiki")."""
    done = _memwiki(indexed, "add", "memory", "new", "-d", "d", stdin="x" * 4000, limit=0)
    _one_error(done, 5, "File too large")
    assert not (indexed / "memory/new.md").exists()
    (indexed / "memory/people.md").write_text(NOTE.format(n="people", body="Ada left."))
    _one_error(_memwiki(indexed, "reindex", "--full", limit=0), 5, "File too large")
    assert _memwiki(indexed, "reindex").returncode == 0  # the limit gone, the next run mends


def test_a_short_vector_write_says_why(tmp_path):
    """Bug: numpy's tofile turned a short write into OSError("1152 requested and 992
    written") with no errno, which the command line took for a bug (exit 70)."""
    script = (
        "import errno, numpy as np\n"
        "from pathlib import Path\n"
        "from memwiki.index.vectors import save_matrix\n"
        "try:\n"
        f"    save_matrix(Path({str(tmp_path / 'v.npy')!r}), np.ones((100, 384)))\n"
        "except OSError as exc:\n"
        "    print(exc.errno == errno.EFBIG)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=60, preexec_fn=_limited(16))  # fmt: skip
    assert done.stdout == "True\n", done.stderr
    assert not (tmp_path / "v.npy").exists() and os.listdir(tmp_path) == []  # no temp left


def test_a_file_where_the_sidecar_belongs_is_named(indexed):
    """Bug: a file named `.memwiki` made every writer an internal error (FileExistsError,
    exit 70) and retrieve retry five times, then say "the index kept changing ... run the
    command again", which cannot help."""
    side = indexed / ".memwiki"
    add = ["add", "memory", "n", "-d", "d"]
    # first its index folder (which add does not need), then the sidecar itself
    for path, also in ((side / "index", []), (side, [add])):
        subprocess.run(["rm", "-rf", str(path)], check=True)
        path.write_text("mine\n")
        for argv in (["retrieve", "zebracorn"], ["reindex"], *also):
            done = _memwiki(indexed, *argv, stdin="body\n")
            _one_error(done, 5, f"{path} is a file where a folder belongs: move it away")
        doctor = _memwiki(indexed, "doctor")
        assert doctor.returncode == 1 and "is a file where a folder belongs" in doctor.stdout
        assert path.read_text() == "mine\n" and not (indexed / "memory/n.md").exists()
        path.unlink()
        done = _memwiki(indexed, "retrieve", "zebracorn", "--files")
        assert done.returncode == 0 and done.stdout == "memory/people.md\n", done.stderr


def test_rm_that_cannot_commit_deletes_nothing(indexed):
    """Bug: `rm` on a full disk (here: git's index write past the size limit) failed with
    "the files are saved, not committed" and left the file deleted, the deletion unsaved
    to history: the wiki changed although the command failed."""
    before = (indexed / "memory/people.md").read_bytes()
    head = _git(indexed, "rev-parse", "HEAD")
    done = _memwiki(indexed, "rm", "memory/people", limit=0)
    _one_error(done, 5, "memory/people.md is not deleted: ")
    assert "saved" not in done.stderr
    assert (indexed / "memory/people.md").read_bytes() == before
    assert _git(indexed, "status", "--porcelain") == ""
    assert _git(indexed, "rev-parse", "HEAD") == head
    done = _memwiki(indexed, "rm", "memory/people")
    assert done.returncode == 0 and not (indexed / "memory/people.md").exists()
    assert _git(indexed, "status", "--porcelain") == ""


def test_retrieve_answers_from_the_index_it_cannot_update(indexed):
    """Bug: with more edited files than a reader lays over the index (16), a sidecar that
    cannot be written (read-only, a full disk) made retrieve fail (exit 5) and the prompt
    hook answer nothing, beside a complete index they could read."""
    for n in range(20):
        (indexed / f"memory/bulk-{n}.md").write_text(NOTE.format(n=f"bulk-{n}", body="bulk"))
    done = _memwiki(indexed, "retrieve", "zebracorn", "--files", limit=0)
    assert done.returncode == 0 and done.stdout == "memory/people.md\n", done.stderr
    assert "the index cannot be updated (File too large" in done.stderr
    assert "results may be behind the wiki" in done.stderr
    hook = _memwiki(indexed, "hook", "claude-code", stdin='{"prompt": "zebracorn"}', limit=0)
    assert hook.returncode == 0 and "Ada runs the zebracorn team" in hook.stdout
    # doctor said "ok index was stale, now updated" of the index it could not update
    doctor = _memwiki(indexed, "doctor", limit=0)
    assert doctor.returncode == 1
    assert "FAIL  index      the index cannot be updated (File too large)" in doctor.stdout
    done = _memwiki(indexed, "retrieve", "bulk", "--files")  # the limit gone: brought up to date
    assert done.returncode == 0 and "memory/bulk-0.md" in done.stdout and done.stderr == ""


def test_a_lock_file_another_user_made_still_locks(tmp_path):
    """Bug: a lock file another user made (one `sudo memwiki reindex`), readable but not
    writable, refused every writer: "Permission denied: .memwiki/wiki.lock" (exit 5).
    flock needs no write access: the lock is taken, and still excludes."""
    from memwiki.lock import FileLock

    wiki, _ = Wiki.init(tmp_path / "w")
    lock = wiki.root / ".memwiki/wiki.lock"
    lock.parent.mkdir(exist_ok=True)
    lock.touch()
    os.chown(lock, 65534, 65534) if os.geteuid() == 0 else pytest.skip("needs root to chown")
    lock.chmod(0o644)
    prefix = unprivileged()
    done = _memwiki(wiki.root, "add", "memory", "n", "-d", "d", stdin="body\n", prefix=prefix)
    assert done.returncode == 0, done.stderr
    assert "memory/n.md" in _git(wiki.root, "show", "--name-only", "--format=")
    script = f"from memwiki.lock import FileLock; print(FileLock({str(lock)!r}).try_acquire())"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for held, answer in ((True, "False\n"), (False, "True\n")):
        mine = FileLock(lock)
        if held:
            mine.acquire()
        try:
            done = subprocess.run([*prefix, sys.executable, "-c", script], env=env,
                                  capture_output=True, text=True, timeout=60)  # fmt: skip
        finally:
            mine.release()
        assert done.stdout == answer, done.stderr


def test_retrieve_answers_from_a_read_only_sidecar(indexed):
    """The same with `.memwiki/` read-only and no lock file there: opening the lock
    failed (Permission denied, exit 5) before anything was read."""
    for n in range(20):
        (indexed / f"memory/bulk-{n}.md").write_text(NOTE.format(n=f"bulk-{n}", body="bulk"))
    side = indexed / ".memwiki"
    (side / "index.lock").unlink(missing_ok=True)
    subprocess.run(["chmod", "-R", "a-w", str(side)], check=True)
    try:
        done = _memwiki(indexed, "retrieve", "zebracorn", "--files", prefix=unprivileged())
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(side)], check=True)
    assert done.returncode == 0 and done.stdout == "memory/people.md\n", done.stderr
    assert "the index cannot be updated (Permission denied" in done.stderr


def test_an_edit_answered_in_a_read_only_wiki_says_nothing_more(indexed):
    """Bug: in a read-only wiki an edited note was answered (laid over the index), then the
    forked writer, failing to open its log, printed "memwiki: deferred index write
    failed: PermissionError ..." on the caller's stderr after the answer."""
    note = indexed / "memory/people.md"
    note.write_text(NOTE.format(n="people", body="Ada runs the quokka team now."))
    subprocess.run(["chmod", "-R", "a-w", str(indexed)], check=True)
    try:
        done = _memwiki(indexed, "retrieve", "quokka", "--files", prefix=unprivileged())
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(indexed)], check=True)
    assert done.returncode == 0 and done.stdout == "memory/people.md\n"
    assert done.stderr == ""


def test_a_file_that_cannot_be_written_is_named(indexed):
    """Bug: the error named the temporary file that could not be made,
    "Permission denied: <wiki>/memory/.n.md.k2v9x0aa.tmp", a name nobody knows."""
    (indexed / "memory").chmod(0o555)
    try:
        done = _memwiki(
            indexed, "add", "memory", "n", "-d", "d", stdin="b\n", prefix=unprivileged()
        )
    finally:
        (indexed / "memory").chmod(0o755)
    _one_error(done, 5, f"Permission denied: {indexed / 'memory/n.md'}")
    assert sorted(p.name for p in (indexed / "memory").iterdir()) == [".gitkeep", "people.md"]


def test_put_that_cannot_write_every_file_writes_none(indexed):
    """Bug: `put` of three files whose last did not fit (here past a 4 KiB file size limit)
    failed with exit 5 and left the first two written and uncommitted: an updated note
    and a new one in the wiki, from a command that said it failed."""
    import json

    before = (indexed / "memory/people.md").read_bytes()
    files = [("people", "Ada moved on.\n"), ("aaa-new", "small\n"), ("zz-big", "big\n" * 2000)]
    payload = {"recall_files": [{"track": "memory", "name": n, "description": "d", "content": c}
                                for n, c in files]}  # fmt: skip
    done = _memwiki(indexed, "put", "-", stdin=json.dumps(payload), limit=4)
    _one_error(done, 5, "File too large")
    assert (indexed / "memory/people.md").read_bytes() == before
    assert _git(indexed, "status", "--porcelain", "--untracked-files=all") == ""


def test_reindex_says_what_it_waits_for(indexed):
    """Bug: behind a stuck process holding the index lock, `reindex` sat silent for up to
    its 10 minutes: nothing said it was waiting, or for what."""
    import threading
    import time

    from memwiki.lock import FileLock

    env = {**os.environ, "MEMWIKI_EMBED": "hash", "PYTHONPATH": str(REPO)}
    held = FileLock(indexed / ".memwiki/index.lock").acquire()
    letgo = threading.Timer(6.0, held.release)  # before the fix: no line, so let go in 6 s
    letgo.start()
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "memwiki", "-w", str(indexed), "reindex"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the note, or "" once the process ends
    said_after = time.monotonic() - began
    letgo.cancel()  # the line came (or the process ended): let go now
    held.release()
    out, err = proc.communicate(timeout=60)
    assert line == "memwiki: waiting for another memwiki process that is updating the index\n"
    assert said_after < 5.5  # while the lock was still held
    assert proc.returncode == 0 and err == "" and "index updated" in out


def test_add_says_what_it_waits_for(indexed):
    """Bug: behind another process holding the wiki's write lock, `add` sat silent for up to
    its 60 s (the library's Wiki had no way to say so; the index lock already said it)."""
    import threading
    import time

    from memwiki.lock import FileLock

    env = {**os.environ, "MEMWIKI_EMBED": "hash", "PYTHONPATH": str(REPO)}
    held = FileLock(indexed / ".memwiki/wiki.lock").acquire()
    letgo = threading.Timer(6.0, held.release)  # without the note: no line, so let go in 6 s
    letgo.start()
    began = time.monotonic()
    argv = [
        sys.executable,
        "-m",
        "memwiki",
        "-w",
        str(indexed),
        "add",
        "memory",
        "waits",
        "-d",
        "x",
    ]
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write("body\n")
    proc.stdin.close()
    line = proc.stderr.readline()
    said_after = time.monotonic() - began
    letgo.cancel()
    held.release()
    assert proc.wait(timeout=60) == 0
    assert proc.stdout is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    assert line == "memwiki: waiting for another memwiki process that is writing to the wiki\n"
    assert said_after < 5.5  # while the lock was still held
    assert err == "" and "memory/waits.md" in out
