"""Absolute paths for the commands memwiki writes into agents' files.

Agents run tools through a login shell (`bash -l` resets PATH from /etc/profile) and cron
starts with a minimal PATH, so a bare `memwiki` is "command not found" whenever memwiki
lives in a virtualenv. Install writes the absolute path of the running executable instead,
and every install refreshes it; `hosts detect` warns when a written path has gone.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

NAME = "memwiki"


def memwiki_executable() -> Path | None:
    """The memwiki console script of this installation (not resolved: venvs symlink)."""
    for folder in _script_dirs():
        candidate = folder / NAME
        if candidate.is_file():
            return candidate
    return None


def _script_dirs() -> list[Path]:
    # A virtualenv (pipx and uv tool too) has the script beside its python. `pip install
    # --user` puts it in the user scheme's scripts folder (~/.local/bin), and a system
    # python's pip in its prefix's (Debian: /usr/local/bin): neither is beside python, and
    # install wrote a bare `memwiki` that the hook's minimal PATH does not find. Those
    # folders are taken only for the scheme whose site-packages hold this memwiki.
    dirs = [Path(sys.executable).parent]
    package = Path(__file__).resolve().parent.parent
    for scheme in (sysconfig.get_preferred_scheme("user"), sysconfig.get_default_scheme()):
        try:
            purelib = Path(sysconfig.get_path("purelib", scheme)).resolve()
            scripts = Path(sysconfig.get_path("scripts", scheme))
        except (KeyError, OSError):  # a scheme this python does not define
            continue
        if package.is_relative_to(purelib):
            dirs.append(scripts)
    return dirs


# Where `uvx` and `pipx run` keep the environments they run a tool from: uv's cache
# (archive-v0, emptied by `uv cache clean` or prune) and pipx's (~/.cache/pipx, macOS
# ~/Library/Caches/pipx, before pipx 1.5 ~/.local/pipx/.cache; emptied after 14 days
# unused). A CACHEDIR.TAG cannot tell them: uv and pipx put one in every venv they make.
_TEMPORARY = (("archive-v0",), (".cache", "pipx"), ("Caches", "pipx"), ("pipx", ".cache"))


def temporary_install(path: Path | None = None) -> Path | None:
    """The cached environment memwiki runs from (`uvx`, `pipx run`); else None."""
    path = memwiki_executable() if path is None else path
    parts = path.parts if path is not None else ()
    for marks in _TEMPORARY:
        n = len(marks)
        for i in range(len(parts) - n):
            if parts[i : i + n] == marks:
                return Path(*parts[: i + n + 1])  # through the environment's own folder
    return None


def memwiki_command() -> str:
    """How written files should call memwiki: the quoted absolute path, else the bare name."""
    exe = memwiki_executable()
    return shlex.quote(str(exe)) if exe else NAME


def is_memwiki_command(text: str) -> bool:
    """True when text is one shell word naming a memwiki executable, as install writes it."""
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    return len(words) == 1 and Path(words[0]).name == NAME


def client_command(name: str, search_path: str | None) -> str:
    """A client's executable as an absolute, quoted path when found on search_path."""
    found = shutil.which(name, path=search_path) if search_path else None
    return shlex.quote(str(Path(found).absolute())) if found else name


# An absolute path ending in /memwiki, as install writes it (quoted or not).
_ABS = re.compile(r"""(?:'(/[^']*/memwiki)'|(?<![\w./-])(/[^\s'"`]*/memwiki))(?=[\s'"`:)]|$)""")


def written_paths(text: str) -> list[str]:
    """Every absolute memwiki path in a file install wrote (block, settings, wrapper)."""
    return [a or b for a, b in _ABS.findall(text or "")]


def broken_paths(text: str) -> dict[str, str]:
    """The absolute memwiki paths in text that can no longer run, each with why."""
    found = {}
    for path in sorted(set(written_paths(text))):
        why = _why_broken(Path(path))
        if why is not None:
            found[path] = why
    return found


def _why_broken(path: Path) -> str | None:
    if not path.exists():
        return "which no longer exists"
    # A virtualenv whose Python was removed (a Homebrew or pyenv upgrade, the Python it was
    # made with deleted) keeps its scripts, but the `#!` line names that Python: the shell
    # says `not found` all the same.
    try:
        with path.open("rb") as f:
            first = f.readline(4096)
    except OSError:  # unreadable here: not for detect to judge
        return None
    words = first[2:].split() if first.startswith(b"#!") else []
    interpreter = Path(os.fsdecode(words[0])) if words else None
    if interpreter is None or not interpreter.is_absolute() or interpreter.exists():
        return None
    return f"whose Python {interpreter} no longer exists"
