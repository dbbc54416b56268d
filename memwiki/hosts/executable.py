"""Absolute paths for the commands memwiki writes into agents' files.

Agents run tools through a login shell (`bash -l` resets PATH from /etc/profile) and cron
starts with a minimal PATH, so a bare `memwiki` is "command not found" whenever memwiki
lives in a virtualenv. Install writes the absolute path of the running executable instead,
and every install refreshes it; `hosts detect` warns when a written path has gone.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

NAME = "memwiki"


def memwiki_executable() -> Path | None:
    """The memwiki console script next to this interpreter (not resolved: venvs symlink)."""
    candidate = Path(sys.executable).parent / NAME
    return candidate if candidate.is_file() else None


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


def missing_paths(text: str) -> list[str]:
    """The absolute memwiki paths in text that no longer exist."""
    return sorted({p for p in written_paths(text) if not Path(p).exists()})
