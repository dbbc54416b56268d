"""Project identity: which code project a directory belongs to and which projects a file
names (the Resources section of a project file, `project/<slug>.md`, is project_file.py's).

The project of a directory is the repository it lies in: the repository name of its git
`origin` remote (`git@github.com:acme/ledger.git` -> `ledger`), else the directory name of
the repository's main working tree. Subdirectories and linked worktrees of one repository
are one project. Discovery (project_git.py) reads `.git` and the repository's `config` file
directly instead of importing pygit2: it runs on the `retrieve` hot path, where pygit2's
import costs tens of milliseconds and this costs a few stat calls (docs/guide.md, "Projects").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .project_git import (
    MAX_PATH_CHARS,
    find_repository,
    main_tree_name,
    remote_url,
    url_key,
)
from .urls import redact

SOURCES = ("remote", "directory", "config")
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_SLUG = 80
PUNYCODE_PREFIX = "xn-"  # a slug for a name with no ASCII letters (slugify)


@dataclass(frozen=True)
class Project:
    """The project a directory belongs to."""

    slug: str
    root: str  # the working tree (a real path) the directory is in; repo-relative paths start here
    source: str  # remote | directory | config

    def to_dict(self) -> dict:
        """JSON form (the `memwiki project --json` schema)."""
        return {"project": self.slug, "root": self.root, "source": self.source}


def slugify(text: str) -> str | None:
    """A slug from a repository or directory name (`Ledger_API.git` -> `ledger-api`), or None.

    Latin letters with marks are written without them (`Café Łódź` -> `cafe-lodz`), so no
    letter of such a name is lost (it was `caf-d` before). A name with no ASCII letter or
    digit (`计费服务`, `データ基盤`) would have no slug, and its files no project: it gets
    `xn-` and the Punycode (RFC 3492, the stdlib codec) of its letters and digits instead,
    the same on every machine and readable back with `slug_name`.
    """
    name = text.strip().removesuffix(".git")
    slug = re.sub(r"[^a-z0-9]+", "-", _unmarked(name.lower())).strip("-")[:MAX_SLUG].strip("-")
    if slug:
        return slug
    letters = "".join(c for c in name.lower() if c.isalnum())
    try:
        coded = letters.encode("punycode").decode("ascii") if letters else ""
    except (UnicodeError, ValueError):
        return None
    slug = f"{PUNYCODE_PREFIX}{coded}"
    return slug if coded and len(slug) <= MAX_SLUG and SLUG_RE.match(slug) else None


# Latin letters that Unicode does not decompose into a base letter and a mark.
_LATIN_EXTRA = str.maketrans("łøđðħıŧ", "loddhit") | str.maketrans(
    {"ß": "ss", "æ": "ae", "œ": "oe", "þ": "th"}
)


def _unmarked(text: str) -> str:
    """Lowercase text with Latin letters' marks dropped (`łódź` -> `lodz`); others kept."""
    if text.isascii():
        return text
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text.translate(_LATIN_EXTRA))
    kept: list[str] = []
    for char in decomposed:
        if unicodedata.combining(char) and kept and kept[-1].isascii():
            continue  # a mark on a Latin letter; marks on other scripts stay with them
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def slug_name(slug: str) -> str:
    """The name a slug stands for: the letters behind an `xn-` slug (see slugify), else itself."""
    if slug.startswith(PUNYCODE_PREFIX):
        try:
            return slug[len(PUNYCODE_PREFIX) :].encode("ascii").decode("punycode")
        except (UnicodeError, ValueError):
            pass
    return slug


def slug_from_url(url: str) -> str | None:
    """The repository name of a remote URL: scp-like, ssh://, https://, file:// or a path."""
    url = url.strip()
    if not url:
        return None
    url = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if "://" in url:
        url = url.split("://", 1)[1].partition("/")[2]  # the path after the host
    elif re.match(r"^[^/]+:", url):
        url = url.split(":", 1)[1]  # git@github.com:acme/ledger.git
    tail = url.rsplit("/", 1)[-1]
    if tail.endswith(".git") and tail != ".git":
        tail = tail[:-4]
    if tail in ("", ".git"):
        return None
    return slugify(tail)


def working_directory() -> str | None:
    """The process's current directory, or None when it has been deleted under it."""
    try:
        return os.getcwd()
    except OSError:  # FileNotFoundError: the folder was removed (a branch switch, rm -r)
        return None


def parse_map(text: str | None, strict: bool = False) -> dict[str, str]:
    """The `projects` setting: `KEY=slug` entries separated by commas or newlines.

    KEY is a directory prefix (absolute, or starting with `~`) or a remote URL. strict
    (the command line's entry points): an entry that is none of these is InvalidInput,
    exit 2, as for any setting memwiki cannot use; it was ignored without a word. The
    prompt hook and the scheduled bridge stay lenient: they never stop on configuration.
    """
    out: dict[str, str] = {}
    for entry in re.split(r"[,\n]", text or ""):
        if not entry.strip():
            continue
        key, _, slug = entry.rpartition("=")
        key, slug = key.strip(), slug.strip()
        problem = _map_entry_problem(key, slug)
        if problem is None:
            out[key] = slug
        elif strict:
            from .errors import InvalidInput

            # A URL entry may carry a token (https://user:token@host/...): never echo it.
            raise InvalidInput(f"projects: {redact(entry.strip())!r}: {problem}")
    return out


def _map_entry_problem(key: str, slug: str) -> str | None:
    """Why `key=slug` is not a usable entry of the projects map, or None."""
    if not key:
        return "expected KEY=slug (a directory or a remote URL, then the project's slug)"
    if not SLUG_RE.match(slug) or len(slug) > MAX_SLUG:
        return f"{slug!r} is not a project slug (lowercase letters, digits, hyphens)"
    if not key.startswith(("/", "~")) and "://" not in key and ":" not in key:
        return "the key must be an absolute directory, start with ~, or be a remote URL"
    return None


def _mapped_by_path(here: Path, mapping: Mapping[str, str], home: Path | None) -> str | None:
    best: tuple[int, str] | None = None
    for key, slug in mapping.items():
        if not (key.startswith("/") or key.startswith("~")):
            continue
        # `~` and `~/...` are this configuration's HOME; `~ada/src` is ada's home, as in a
        # shell (it was read as HOME + "ada/src" and matched no directory).
        mine = key == "~" or key.startswith("~/")
        base = Path(str(home) + key[1:]) if mine and home else Path(key)
        try:
            base = Path(os.path.realpath(base.expanduser()))
        except (OSError, ValueError, RuntimeError):
            continue
        # A prefix test on the text: `base in here.parents` built every parent of here.
        inside = str(here) == str(base) or str(here).startswith(str(base).rstrip("/") + "/")
        if inside and (best is None or len(base.parts) > best[0]):
            best = (len(base.parts), slug)
    return best[1] if best else None


def identify(
    directory: str | os.PathLike | None,
    mapping: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Project | None:
    """The project of a directory: config mapping, else origin's repository name, else the
    main working tree's directory name; None outside any repository and any mapping, in a
    repository of the home folder itself (is_home_repository), and for None (a working
    directory that no longer exists, see working_directory)."""
    mapping = mapping or {}
    if directory is None or len(os.fspath(directory)) > MAX_PATH_CHARS:
        return None
    try:
        here = Path(os.path.realpath(directory))
    except (OSError, ValueError):
        return None
    repo = find_repository(here, resolved=True)
    mapped = _mapped_by_path(here, mapping, home)
    if mapped:
        return Project(mapped, str(repo.worktree if repo else here), "config")
    if repo is None:
        return None
    url = remote_url(repo.common_dir, home)
    by_url = {url_key(k): v for k, v in mapping.items() if not k.startswith(("/", "~"))}
    if url and url_key(url) in by_url:
        return Project(by_url[url_key(url)], str(repo.worktree), "config")
    if is_home_repository(repo.worktree, home):
        return None
    if url:
        slug = slug_from_url(url)
        if slug:
            return Project(slug, str(repo.worktree), "remote")
    slug = slugify(main_tree_name(repo))
    return Project(slug, str(repo.worktree), "directory") if slug else None


def is_home_repository(worktree: Path, home: Path | None) -> bool:
    """Whether a working tree is the home folder itself: a dotfiles repository, no project.

    With `git init ~` for dotfiles, every folder under HOME outside another repository
    (~/Downloads, ~/scratch, ~ itself, where agents are often started) was project `ada`,
    and what a session there taught (personal preferences) was filed under it.
    """
    if home is None:
        return False
    try:
        return str(worktree) == os.path.realpath(home)
    except (OSError, ValueError):
        return False


def is_the_wiki(found: Project | None, wiki_root: str | os.PathLike | None) -> bool:
    """Whether a found project is the wiki's own repository, which is no code project.

    A `projects` entry naming the wiki's folder is kept: that is someone's choice.
    """
    if found is None or wiki_root is None or found.source == "config":
        return False
    try:  # found.root is a real path already (identify resolves the directory)
        return found.root == os.path.realpath(wiki_root)
    except (OSError, ValueError):
        return False


def code_project(
    directory: str | os.PathLike | None,
    mapping: Mapping[str, str] | None = None,
    home: Path | None = None,
    wiki_root: str | os.PathLike | None = None,
) -> Project | None:
    """identify, except that the wiki's own repository is no project (is_the_wiki).

    What memorize and bridge record: a session run inside the wiki (editing memory) tagged
    what it learnt with the wiki folder's name, a project no code directory has.
    """
    found = identify(directory, mapping, home)
    return None if is_the_wiki(found, wiki_root) else found


def scope(
    option: str | None,
    directory: str | os.PathLike | None,
    mapping: Mapping[str, str] | None = None,
    home: Path | None = None,
    wiki_root: str | os.PathLike | None = None,
) -> str | None:
    """The project a retrieval prefers: `auto` = the directory's, `all` = none, else the slug.

    The wiki's own repository is not a code project: asked from inside the wiki, `auto`
    prefers nothing.
    """
    from .errors import InvalidInput

    value = (option or "auto").strip()
    if value == "all":
        return None
    if value == "auto":
        found = code_project(directory, mapping, home, wiki_root)
        return found.slug if found else None
    if not _is_slug(value):
        raise InvalidInput(f"--project {value!r}: use auto, all or a project slug like billing-api")
    return value


# ------------------------------------------------------------- files and queries


def file_projects(data: Mapping, track: str = "", stem: str = "") -> tuple[str, ...]:
    """The projects a RecallFile belongs to: `project:`/`projects:`, or its own slug in project/.

    Values are assumed valid (recallfile validation checks them); anything else counts as
    none, so a malformed key never hides a file.
    """
    found: list[str] = []
    one = data.get("project")
    if isinstance(one, str) and one:
        found.append(one)
    many = data.get("projects")
    if isinstance(many, list):
        found.extend(v for v in many if isinstance(v, str) and v)
    if not found and track == "project" and stem:
        found.append(stem)
    return tuple(dict.fromkeys(found))


def check_frontmatter(data: Mapping) -> list[tuple[str, str]]:
    """Problems with `project`/`projects` as (key, message); empty when they are valid."""
    problems: list[tuple[str, str]] = []
    if "project" in data and "projects" in data:
        problems.append(("projects", "use either 'project' or 'projects', not both"))
    one = data.get("project")
    if "project" in data and not (isinstance(one, str) and _is_slug(one)):
        problems.append(("project", "'project' must be a project slug like billing-api"))
    many = data.get("projects")
    if "projects" in data and many == []:
        problems.append(("projects", "'projects' is empty: leave it out for global memory"))
    elif "projects" in data and not (
        isinstance(many, list) and many and all(isinstance(v, str) and _is_slug(v) for v in many)
    ):
        problems.append(("projects", "'projects' must be a list of project slugs"))
    return problems


def _is_slug(value: str) -> bool:
    return len(value) <= MAX_SLUG and bool(SLUG_RE.match(value))


_WORD = re.compile(r"[a-z0-9]+")


def mentioned(query: str, slugs: Iterable[str]) -> set[str]:
    """The slugs a query names: `billing-api`, `billing api` or `billingapi`, as whole words.

    An `xn-` slug (a name without ASCII letters, see slugify) is named by its name's
    letters anywhere in the query: Chinese and Japanese put no spaces between words.
    """
    lowered = query.lower()
    letters = "".join(c for c in lowered if c.isalnum())
    words = _WORD.findall(_unmarked(lowered))  # `Łódź utils` names lodz-utils
    joined = " " + " ".join(words) + " "
    compact = set(words)
    out = set()
    for slug in slugs:
        if slug.startswith(PUNYCODE_PREFIX) and (name := slug_name(slug)) != slug:
            if name in letters:
                out.add(slug)
            continue
        if not words:
            continue
        parts = slug.split("-")
        if f" {' '.join(parts)} " in joined or "".join(parts) in compact:
            out.add(slug)
    return out


# A question that starts with who/whom/whose (the query's first word, or a sentence's)
# asks for a person. English only, like the rest of the query heuristics.
_PERSON_QUESTION = re.compile(r"(?:^|[.?!;:\n])\s*(?:who|whom|whose)\b", re.IGNORECASE)


def asks_for_person(query: str) -> bool:
    """Whether the query asks who: people are global memory (the memorize jobs keep them so)."""
    return bool(_PERSON_QUESTION.search(query))
