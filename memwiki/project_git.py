"""Reading a repository the way git does, without git: where a directory's repository is
(`.git` directory or file, linked worktrees, submodules), its `origin` URL from the config
file, and one spelling for the many spellings of a remote URL. project.py names projects
from these. Only file reads and stats: this runs on every `retrieve` (docs/guide.md).
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Bound on the upward walk: more parts than a Linux path can have (PATH_MAX 4096 allows
# 2048). It was 256, and a repository 300 folders above the directory was not found.
MAX_DEPTH = 4096
# A directory path longer than this is no real working directory (Linux calls refuse paths
# over 4096 bytes; deeper trees are reached only step by step): no project, at once.
MAX_PATH_CHARS = 1 << 16
# `[remote "origin"]`, `[url "git@github.com:"]`, or the old `[remote.origin]`; a comment may follow.
_HEADER = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\](.*)$')
_KEY_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*=(.*)$")
MAX_CONFIG_BYTES = 1 << 20  # git's own config files are a few KB; a bigger one is cut here
MAX_POINTER_BYTES = 4096  # a `.git` file or `commondir`: one path
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


@dataclass(frozen=True)
class Repository:
    """Where a directory's repository lives: its working tree and its (common) git dir."""

    worktree: Path
    git_dir: Path  # the per-worktree git dir (`.git`, or `.git/worktrees/<name>`)
    common_dir: Path  # holds `config`, shared by all worktrees


def _read_head(path: Path, limit: int) -> str | None:
    """The first `limit` bytes of a regular file as text, or None (missing, not a file).

    Opened without blocking and checked to be a regular file before reading: a `config`
    that was a named pipe hung `memwiki project` and every `retrieve` for ever.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_gitfile(path: Path) -> Path | None:
    """The git dir a `.git` file points to (linked worktrees, submodules)."""
    text = _read_head(path, MAX_POINTER_BYTES)
    if text is None:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:") :].strip())
    return target if target.is_absolute() else (path.parent / target)


def _common_dir(git_dir: Path) -> Path:
    text = _read_head(git_dir / "commondir", MAX_POINTER_BYTES)
    if not text or not text.strip():
        return git_dir
    common = Path(text.strip())
    return common if common.is_absolute() else (git_dir / common)


def _upward(here: str) -> Iterator[str]:
    """here and its parents, nearest first, at most MAX_DEPTH of them, as text.

    `[here, *here.parents]` built every parent before the first look, and a Path per
    parent costs time in its length: 3 s for a 20,000-part `cwd` in a host log (a broken
    or hostile log); bridge would take hours over a megabyte of one.
    """
    for _ in range(MAX_DEPTH):
        yield here
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


def find_repository(directory: str | os.PathLike, resolved: bool = False) -> Repository | None:
    """The repository a directory lies in (walking up to the first `.git`), or None.

    resolved: the directory is already a real path (symlinks resolved), as identify's is.
    """
    try:
        here = os.fspath(directory)
        if len(here) > MAX_PATH_CHARS:
            return None
        here = here if resolved else os.path.realpath(here)
    except (OSError, ValueError, TypeError):
        return None
    for candidate in _upward(here):
        dot_git = os.path.join(candidate, ".git")
        try:
            if os.path.isdir(dot_git):
                if os.path.exists(os.path.join(dot_git, "HEAD")):
                    git_dir = Path(dot_git)
                    return Repository(Path(candidate), git_dir, _common_dir(git_dir))
                continue
            if os.path.isfile(dot_git):
                pointed = _read_gitfile(Path(dot_git))
                if pointed is not None and (pointed / "HEAD").exists():
                    pointed = Path(os.path.realpath(pointed))
                    common = Path(os.path.realpath(_common_dir(pointed)))
                    return Repository(Path(candidate), pointed, common)
        except (OSError, ValueError):
            continue
    return None


def _config_entries(text: str) -> Iterator[tuple[str, str | None, str, str]]:
    """(section, subsection, key, raw value) of a git config file's text; sections and keys
    in lower case (git compares them so), subsections as written (git compares them
    exactly). The value is as written: _config_value reads the few a caller wants."""
    section, sub = "", None
    # Lines split lazily: a config with a section per branch runs to hundreds of KB, and
    # origin is near its top (git clone writes it first).
    for line in io.StringIO(text):  # on "\n" as git; a "\r" before it ends in the value
        head = _HEADER.match(line)
        if head:
            section, sub = head.group(1).lower(), head.group(2)
            if sub is None and "." in section:  # the old form: [remote.origin]
                section, _, sub = section.partition(".")
            elif sub is not None:
                sub = re.sub(r"\\(.)", r"\1", sub)
            line = head.group(3)  # git allows `[section] key = value` on one line
        elif line.lstrip().startswith("["):
            section, sub = "", None  # a header git would refuse: skip its keys
            continue
        m = _KEY_LINE.match(line)
        if m and section:
            yield section, sub, m.group(1).lower(), m.group(2)


def _config_text(path: Path) -> str:
    # git skips a UTF-8 byte order mark (a config saved by a Windows editor); read with
    # it, the first section, often [remote "origin"], was not recognised.
    return (_read_head(path, MAX_CONFIG_BYTES) or "").removeprefix("\ufeff")


def origin_url(common_dir: Path) -> str | None:
    """The `url` of `[remote "origin"]` in a repository's config file, or None."""
    return _origin(_config_text(common_dir / "config"))


def _origin(text: str) -> str | None:
    for section, sub, key, raw in _config_entries(text):
        if (section, sub, key) == ("remote", "origin", "url") and (value := _config_value(raw)):
            return value  # the first, as `git remote get-url origin`
    return None


def remote_url(common_dir: Path, home: Path | None = None) -> str | None:
    """origin's URL as git fetches it: `url.<base>.insteadOf` rewrites applied (the
    repository's config, then the user's `~/.gitconfig` and `~/.config/git/config`).

    `work:ledger` under `[url "git@github.com:acme/"] insteadOf = work:` is
    `git@github.com:acme/ledger`, the spelling a projects-map entry or a clone on another
    machine without the shorthand has.
    """
    text = _config_text(common_dir / "config")
    url = _origin(text)
    if url is None:
        return None
    texts = [text]
    if home is not None:
        texts += [
            _config_text(home / ".gitconfig"),
            _config_text(home / ".config" / "git" / "config"),
        ]
    best: tuple[int, str] | None = None
    for config_text in texts:
        if "insteadof" not in config_text.lower():
            continue  # the common case: no rewrites, nothing to parse
        for section, base, key, raw in _config_entries(config_text):
            if section != "url" or base is None or key != "insteadof":
                continue
            prefix = _config_value(raw)
            longer = best is None or len(prefix) > best[0]  # git: the longest prefix wins
            if prefix and url.startswith(prefix) and longer:
                best = (len(prefix), f"{base}{url[len(prefix) :]}")
    return best[1] if best else url


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
    # `.git`, or a hidden bare repository holding the worktrees beside it (`ledger/.bare`
    # with `ledger/main`, `ledger/feature`): the folder that holds it names the project.
    # Named `.bare`, the worktrees were project `bare` and their folder `ledger`.
    if common.name == ".git" or common.name.startswith("."):
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
