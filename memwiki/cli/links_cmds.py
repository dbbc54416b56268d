"""Commands for the wiki as an Obsidian vault and a git repository: links, hooks install."""

from __future__ import annotations

import typer

from .context import open_wiki, split_ref
from .options import JSON_OBSIDIAN as JSON
from .output import emit_json, print_hooks_setup


def links(ref: str = typer.Argument(..., help="TRACK/NAME"), as_json: bool = JSON) -> None:
    """List a RecallFile's outgoing wikilinks and its backlinks."""
    from ..errors import NotFound
    from ..links import LinkIndex

    wiki = open_wiki()
    track, name = split_ref(ref, wiki)
    path = wiki.path_of(track, name)
    if not path.is_file():
        raise NotFound(f"no RecallFile {track}/{name}")
    rel = path.relative_to(wiki.root).as_posix()
    index = LinkIndex(wiki)
    if rel in index.plugin_notes:  # a drawing or a board: say what it is, as `show` does
        from ..recallfile import PluginNote

        raise PluginNote(rel, index.plugin_notes[rel])
    out, back = index.outgoing(rel), index.backlinks(rel)
    if as_json:
        emit_json(
            {
                "path": rel,
                "outgoing": [lk.to_dict() for lk in out],
                "backlinks": [lk.to_dict() for lk in back],
            }
        )
        return
    from ..recallfile import printable as shown  # a name or link as text, never as controls

    print(shown(rel))
    print(f"outgoing ({len(out)}):")
    for lk in out:
        where = shown(lk.target) if lk.target else "BROKEN"
        if lk.via_alias:
            where += " (alias)"
        print(f"  {lk.line:>4}  {shown(lk.raw)}  -> {where}")
    print(f"backlinks ({len(back)}):")
    for lk in back:
        print(f"  {shown(lk.source)}:{lk.line}  {shown(lk.raw)}")


def hooks_install(as_json: bool = JSON) -> None:
    """Write .pre-commit-config.yaml if missing (committed) and run `pre-commit install`."""
    from ..git.precommit import install

    setup = install(open_wiki())
    if as_json:
        emit_json(setup.to_dict())
    elif setup.config_written:
        print(f"wrote and committed {setup.config}")
    print_hooks_setup(setup, as_json, name_wiki=True)
