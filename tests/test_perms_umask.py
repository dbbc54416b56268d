"""The modes of the files memwiki makes follow the umask, as git's do: a group-shared wiki
(umask 002) stays writable by the group, a private one (umask 077) readable by nobody else.
A note memwiki rewrites keeps its own mode."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTE = "---\nname: {n}\ndescription: note {n}\n---\n{body}\n"


def _memwiki(umask: int, *argv: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMWIKI_EMBED": "hash", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "memwiki", *map(str, argv)], input=stdin,
                          capture_output=True, text=True, env=env, timeout=60,
                          umask=umask)  # fmt: skip


@pytest.mark.parametrize("umask", [0o002, 0o077])
def test_every_file_memwiki_makes_has_the_mode_the_umask_gives(tmp_path, umask) -> None:
    """Bug: the lock files (.memwiki/wiki.lock, index.lock, ...) were made 0644 whatever
    the umask: under umask 002 every other file of a group-shared wiki was group-writable
    and they were not. (Guard: atomic writes, whose mkstemp file is 0600, follow it too.)"""
    wiki = tmp_path / "w"
    assert _memwiki(umask, "init", wiki).returncode == 0
    assert _memwiki(umask, "-w", wiki, "add", "memory", "a", "-d", "a", stdin="x\n").returncode == 0
    (wiki / "memory/b.md").write_text(NOTE.format(n="b", body="zebra"))
    os.chmod(wiki / "memory/b.md", 0o666 & ~umask)
    done = _memwiki(umask, "-w", wiki, "retrieve", "zebra", "--files")
    assert done.returncode == 0 and done.stdout == "memory/b.md\n", done.stderr
    for argv in (["commit"], ["reindex"], ["doctor"]):
        assert _memwiki(umask, "-w", wiki, *argv).returncode == 0, argv
    wrong = []
    for path in [wiki, *wiki.rglob("*")]:
        if ".git/objects/" in str(path) or path.is_symlink():
            continue  # git's own store: objects are 0444 by design
        mode = stat.S_IMODE(path.stat().st_mode)
        full = 0o777 if path.is_dir() else 0o666
        if mode & umask or (umask == 0o002 and not mode & 0o020):
            wrong.append(f"{oct(mode)} {path.relative_to(wiki)} (wanted {oct(full & ~umask)})")
    assert not wrong, wrong
    assert (wiki / ".memwiki/wiki.lock").exists()


def test_a_rewritten_note_keeps_its_mode(tmp_path, cli) -> None:
    """Guard: `add` on an executable note or a read-only one (chmod 444) keeps the mode
    (the new file is made 0600 by mkstemp, then given the old one's mode)."""
    from memwiki.wiki import Wiki

    wiki, _ = Wiki.init(tmp_path / "w")
    for name, mode in (("run", 0o755), ("frozen", 0o444)):
        path = wiki.root / f"memory/{name}.md"
        path.write_text(NOTE.format(n=name, body="first"))
        path.chmod(mode)
    assert cli("--wiki", wiki.root, "commit")[0] == 0
    for name, mode in (("run", 0o755), ("frozen", 0o444)):
        code, _, err = cli("--wiki", wiki.root, "add", "memory", name, "-d", "d", stdin="again")
        path = wiki.root / f"memory/{name}.md"
        assert code == 0 and "again" in path.read_text(), err
        assert stat.S_IMODE(path.stat().st_mode) == mode, name


def _modes(top: Path) -> dict[str, str]:
    """Mode (octal) of every entry under top, by path relative to top."""
    return {str(p.relative_to(top)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in top.rglob("*")}


@pytest.mark.parametrize("shared", ["group", "all", "0660", "false"])
def test_a_shared_repository_gets_the_modes_git_gives_whatever_the_umask(tmp_path, shared):
    """Bug: libgit2 ignores core.sharedRepository. In a `git init --shared=group` wiki
    under umask 022, memwiki's commit made `.git/objects/xx/` 0755 and `.git/logs/HEAD`
    0644 where git makes them 2775 and 0664: the group's next commit was refused.
    Checked against git itself: the same blob written by each into a fresh repository."""
    blob = b"the same blob\n"
    modes = {}
    for who in ("git", "memwiki"):
        repo = tmp_path / who
        subprocess.run(["git", "init", "-q", f"--shared={shared}", str(repo)], check=True,
                       umask=0o022, timeout=30)  # fmt: skip
        before = set(_modes(repo))
        if who == "git":
            write = ["git", "-C", str(repo), "hash-object", "-w", "--stdin"]
        else:
            code = ("import sys; from pathlib import Path; from memwiki.git.repo import "
                    "open_repo; print(open_repo(Path(sys.argv[1])).create_blob(sys.stdin.buffer.read()))")  # fmt: skip
            write = [sys.executable, "-c", code, str(repo)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(write, input=blob, capture_output=True, env=env, umask=0o022,
                              timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        modes[who] = {p: m for p, m in _modes(repo).items() if p not in before}
    assert len(modes["git"]) == 2  # the object's folder and the object
    assert modes["memwiki"] == modes["git"]


def test_the_prepared_model_copy_gets_the_umask_mode(tmp_path) -> None:
    """Bug: the prepared model copy is made in a mkdtemp folder (0700) renamed into place:
    a copy made by root (a shared model_cache, a `sudo memwiki` that kept HOME) could not
    be read by the user, whose every load then said "no prepared copy: it did not match
    the model" and left a `.prepare-stale-*` folder behind. Now 0777 less the umask."""
    from memwiki.wiki import Wiki

    wiki, _ = Wiki.init(tmp_path / "w")
    cache = tmp_path / "models"
    env = {**os.environ, "MEMWIKI_EMBED": "onnx", "MEMWIKI_MODEL_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-m", "memwiki", "--wiki", str(wiki.root), "doctor"],
                          env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=120, umask=0o022)  # fmt: skip
    assert f"prepared copy in {cache}" in done.stdout, done.stdout + done.stderr
    (copy,) = cache.iterdir()
    assert stat.S_IMODE(copy.stat().st_mode) == 0o755


def test_the_umask_is_read_without_being_changed() -> None:
    """fsutil.current_umask reads /proc/self/status: os.umask(0) and back (what
    atomic_write did for every new file) left a moment in which another thread's new file
    got mode 0666."""
    code = ("import os; from memwiki.fsutil import current_umask; "
            "print(oct(current_umask()), oct(os.umask(0)))")  # fmt: skip
    for umask in (0o027, 0o002):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, umask=umask,
                              timeout=60)  # fmt: skip
        assert done.stdout.split() == [oct(umask), oct(umask)], done.stderr
