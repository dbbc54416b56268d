"""memwiki's commit beside a library caller's own pygit2 use in another thread: the
developer's personal ignore rules are left out without touching libgit2's process-wide
search paths (memwiki/git/excludes.py)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pygit2
from gitconfig_home import libgit2_reads_home, write_gitconfig

from memwiki import Wiki

NOTE = "---\nname: {name}\ndescription: a note\n---\nbody of {name}\n"
GLOBAL = pygit2.enums.ConfigLevel.GLOBAL


def test_a_commit_never_hides_the_users_git_config_from_another_thread(wiki, tmp_path) -> None:
    """Bug: with a personal excludes file that ignores notes (`*.md`), every commit that
    met a new note emptied libgit2's global search paths for the length of an ignore
    check (excludes.ignored_by_the_wiki). Another thread of the same process (a second
    wiki's commit reading its author, a caller's own pygit2.Repository) then found no
    ~/.gitconfig: no user.name, no core.excludesFile. Before the fix this test failed in 4
    runs of 5: 650 to 3,500 reads of the emptied path, and 7 to 36 repositories opened
    without a user.name."""
    ignore = Path(os.environ["HOME"]) / "global-ignore"
    ignore.write_text("*.md\n", encoding="utf-8")
    write_gitconfig(f"[user]\n\tname = Dev Eloper\n[core]\n\texcludesFile = {ignore}\n")
    other = pygit2.init_repository(str(tmp_path / "other"))
    seen: list[str] = []
    done = threading.Event()

    def callers_own_pygit2() -> None:
        for i in range(10_000_000):  # bounded; stops when the commits are done
            if done.is_set():
                return
            seen.append(pygit2.settings.search_path[GLOBAL])
            if i % 100 == 0:
                try:
                    seen.append(pygit2.Repository(other.path).config["user.name"])
                except KeyError:
                    seen.append("<no user.name>")

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often: the race shows in few commits
    try:
        with libgit2_reads_home():
            home_path = pygit2.settings.search_path[GLOBAL]
            mine = Wiki.open(wiki.root, wiki.config)  # its repository reads that HOME
            reader = threading.Thread(target=callers_own_pygit2, daemon=True)
            reader.start()
            try:
                for i in range(3):  # a few hundred notes at once: an import, a memorize run
                    for j in range(300):
                        name = f"n{i}-{j}"
                        (mine.root / "memory" / f"{name}.md").write_text(NOTE.format(name=name))
                    result = mine.commit(f"notes {i}")
                    assert len(result.created) == 300  # kept in, as before
            finally:
                done.set()
                reader.join(30)
            assert not reader.is_alive()
    finally:
        sys.setswitchinterval(switch)
    assert len(seen) > 100
    assert {s: seen.count(s) for s in set(seen)}.keys() == {home_path, "Dev Eloper"}, {
        s: seen.count(s) for s in set(seen)
    }
