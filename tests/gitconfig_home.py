"""A developer's own git configuration for the tests/test_gitconfig_*.py files.

The autouse `isolated_env` gives every test a private HOME; this writes a ~/.gitconfig
there (read by the `git` command and by `memwiki` subprocesses) and, for code run in this
process, points libgit2 at it too: libgit2 fixes its search paths (HOME, XDG, /etc) once
per process, when pygit2 is first imported, so a later HOME is not seen without this.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pygit2

_LEVELS = {
    pygit2.enums.ConfigLevel.GLOBAL: "{home}",
    pygit2.enums.ConfigLevel.XDG: "{home}/.config/git",
    pygit2.enums.ConfigLevel.SYSTEM: "",
}


def write_gitconfig(text: str) -> Path:
    """Write text as ~/.gitconfig of the test's HOME; returns the file."""
    path = Path(os.environ["HOME"]) / ".gitconfig"
    path.write_text(text, encoding="utf-8")
    return path


@contextlib.contextmanager
def libgit2_reads_home() -> Iterator[None]:
    """While inside, pygit2 in this process reads the test HOME's git configuration."""
    home = os.environ["HOME"]
    saved = {level: pygit2.settings.search_path[level] for level in _LEVELS}
    try:
        for level, value in _LEVELS.items():
            pygit2.settings.search_path[level] = value.format(home=home)
        yield
    finally:
        for level, value in saved.items():
            pygit2.settings.search_path[level] = value
