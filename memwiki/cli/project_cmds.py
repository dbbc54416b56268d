"""`memwiki project [DIR]`: the code project a directory belongs to (docs/guide.md, Projects)."""

from __future__ import annotations

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

    from ..project import identify, parse_map

    if directory is not None and not os.path.isdir(directory):
        from ..errors import NotFound

        raise NotFound(f"{directory}: no such directory")
    cfg = config()
    found = identify(directory or os.getcwd(), parse_map(cfg.projects, strict=True), cfg.home)
    if as_json:
        emit_json(found.to_dict() if found else {"project": None, "root": None, "source": None})
    elif found is None:
        print("no project (not inside a git repository)")
    else:
        print(f"{found.slug}  ({found.source}, {found.root})")
