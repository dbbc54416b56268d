"""`memwiki project [DIR]`: the code project a directory belongs to (docs/guide.md, Projects)."""

from __future__ import annotations

from pathlib import Path

import typer

from .context import config
from .options import JSON
from .output import emit_json


def project(
    directory: str = typer.Argument(None, help="The directory (default: the current one)."),
    as_json: bool = JSON,
) -> None:
    """Print the project of a directory: origin's repository name, else the repository folder."""
    import os

    from ..errors import NotFound
    from ..project import identify, is_the_wiki, parse_map, working_directory

    if directory is not None and not os.path.isdir(directory):
        raise NotFound(f"{directory}: no such directory")
    here = directory or working_directory()
    if here is None:
        raise NotFound("the current directory no longer exists: cd to one that does")
    cfg = config()
    found = identify(here, parse_map(cfg.projects, strict=True), cfg.home)
    in_wiki = is_the_wiki(found, cfg.wiki_path)
    if in_wiki:
        found = None  # as retrieve and memorize see it: memory, not a code project
    if as_json:
        emit_json(found.to_dict() if found else {"project": None, "root": None, "source": None})
    elif in_wiki:
        print("no project (this is the wiki: its files are memory, not a code project)")
    elif found is None and _in_home_repository(here, cfg.home):
        print("no project (a repository of your home folder, such as dotfiles, is none)")
    elif found is None:
        print("no project (not inside a git repository)")
    else:
        print(f"{found.slug}  ({found.source}, {found.root})")


def _in_home_repository(directory: str, home: Path | None) -> bool:
    """Whether a directory lies in a repository of the home folder (why it has no project)."""
    from ..project import is_home_repository
    from ..project_git import find_repository

    repo = find_repository(directory)
    return repo is not None and is_home_repository(repo.worktree, home)
