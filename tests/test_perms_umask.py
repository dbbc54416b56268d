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
