"""Reading a repository the way git does, without git: where a directory's repository is
(`.git` directory or file, linked worktrees, submodules), its `origin` URL from the config
file, and one spelling for the many spellings of a remote URL. project.py names projects
from these. Only file reads and stats: this runs on every `retrieve` (docs/guide.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

# Bound on the upward walk: more parts than a Linux path can have (PATH_MAX 4096 allows
# 2048). It was 256, and a repository 300 folders above the directory was not found.
MAX_DEPTH = 4096
_REMOTE_HEADER = re.compile(r'^\s*\[\s*remote\s+"origin"\s*\]\s*(?:[#;].*)?$', re.IGNORECASE)
_SECTION = re.compile(r"^\s*\[")
_URL_LINE = re.compile(r"^\s*url\s*=(.*)$", re.IGNORECASE)
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


@dataclass(frozen=True)
class Repository:
    """Where a directory's repository lives: its working tree and its (common) git dir."""

    worktree: Path
    git_dir: Path  # the per-worktree git dir (`.git`, or `.git/worktrees/<name>`)
    common_dir: Path  # holds `config`, shared by all worktrees


def _read_gitfile(path: Path) -> Path | None:
    """The git dir a `.git` file points to (linked worktrees, submodules)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:") :].strip())
    return target if target.is_absolute() else (path.parent / target)


def _common_dir(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    common = Path(text)
    return common if common.is_absolute() else (git_dir / common)


def find_repository(directory: str | os.PathLike) -> Repository | None:
    """The repository a directory lies in (walking up to the first `.git`), or None."""
    try:
        here = Path(os.path.realpath(directory))
    except (OSError, ValueError):
        return None
    for candidate in [here, *here.parents][:MAX_DEPTH]:
        dot_git = candidate / ".git"
        try:
            if dot_git.is_dir():
                if (dot_git / "HEAD").exists():
                    return Repository(candidate, dot_git, _common_dir(dot_git))
                continue
            if dot_git.is_file():
                git_dir = _read_gitfile(dot_git)
                if git_dir is not None and (git_dir / "HEAD").exists():
                    git_dir = Path(os.path.realpath(git_dir))
                    return Repository(
                        candidate, git_dir, Path(os.path.realpath(_common_dir(git_dir)))
                    )
        except OSError:
            continue
    return None


def origin_url(common_dir: Path) -> str | None:
    """The `url` of `[remote "origin"]` in a repository's config file, or None."""
    try:
        text = (common_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    inside = False
    for line in text.splitlines():
        if _SECTION.match(line):
            inside = bool(_REMOTE_HEADER.match(line))
            continue
        if inside:
            m = _URL_LINE.match(line)
            if m:
                return _config_value(m.group(1))
    return None


def _config_value(raw: str) -> str:
    """A git-config value as git reads it: quotes and escapes undone, `#`/`;` comments cut.

    `url = git@host:acme/ledger.git ; my fork` is `git@host:acme/ledger.git` to git; read
    verbatim, its comment became part of the project's slug (`ledger-git-my-fork`).
    """
    out: list[str] = []
    quoted = False
    chars = iter(raw)
    for char in chars:
        if char == '"':
            quoted = not quoted
        elif char == "\\":
            nxt = next(chars, "")
            out.append(_ESCAPES.get(nxt, nxt))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
    return "".join(out).strip()


def main_tree_name(repo: Repository) -> str:
    """The directory name of the main working tree (a linked worktree's too)."""
    common = repo.common_dir
    if common.name == ".git":
        return common.parent.name
    if repo.git_dir == repo.common_dir:
        return repo.worktree.name
    return common.name  # a bare repository with linked worktrees: `ledger.git`


def url_key(url: str) -> str:
    """The repository a remote URL names, spelled one way: `host/path`, lowercase.

    `git@github.com:Acme/Ledger.git`, `https://user:token@github.com/acme/ledger/` and
    `ssh://git@github.com:22/acme/ledger` are one repository: two clones of it, one over
    ssh and one over https, were two projects under a projects-map URL entry, and a URL
    with credentials in it matched no entry. The scheme, user, password and port go; so do
    a query, a fragment, trailing slashes and `.git`.
    """
    url = url.strip().split("?", 1)[0].split("#", 1)[0]
    host = ""
    if "://" in url:
        authority, _, path = url.split("://", 1)[1].partition("/")
        host = authority.rpartition("@")[2]
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    elif re.match(r"^[^/]+:", url):
        authority, _, path = url.partition(":")
        host = authority.rpartition("@")[2]
    else:
        path = url
    if "://" in url and not host:
        path = "/" + path  # file:///srv/git/ledger is the path /srv/git/ledger
    path = path.rstrip("/") if not host else path.strip("/")
    while path.endswith(".git"):
        path = path[:-4].rstrip("/")
    return f"{host}/{path}".lower() if host else path.lower()


def redact_url(text: str) -> str:
    """text with any `user:password@` of a URL in it written as `***@` (for messages)."""
    return re.sub(r"(://)[^/@\s]*@", r"\1***@", text)
