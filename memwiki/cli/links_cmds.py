"""Commands for the wiki as an Obsidian vault and a git repository: links, hooks install."""

from __future__ import annotations

import typer

from .app import app, emit_json, open_wiki, split_ref, warn

JSON = typer.Option(False, "--json", help="Print JSON (schema in docs/obsidian.md).")

hooks_app = typer.Typer(
    help="Turn on the wiki's pre-commit hooks (lint and reindex).", no_args_is_help=True
)
app.add_typer(hooks_app, name="hooks")


@app.command()
def links(ref: str = typer.Argument(..., help="TRACK/NAME"), as_json: bool = JSON) -> None:
    """List a RecallFile's outgoing wikilinks and its backlinks."""
    from ..errors import NotFound
    from ..links import LinkIndex

    wiki = open_wiki()
    track, name = split_ref(ref)
    path = wiki.path_of(track, name)
    if not path.is_file():
        raise NotFound(f"no RecallFile {track}/{name}")
    rel = path.relative_to(wiki.root).as_posix()
    index = LinkIndex(wiki)
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
    print(f"{rel}")
    print(f"outgoing ({len(out)}):")
    for lk in out:
        where = lk.target or "BROKEN"
        if lk.via_alias:
            where += " (alias)"
        print(f"  {lk.line:>4}  {lk.raw}  -> {where}")
    print(f"backlinks ({len(back)}):")
    for lk in back:
        print(f"  {lk.source}:{lk.line}  {lk.raw}")


def report_hooks(setup, as_json: bool) -> None:
    """Tell the user what hook set-up did: a warning on stderr when pre-commit is missing."""
    if not setup.installed:
        warn(setup.message)
    elif not as_json:
        print("pre-commit hooks installed: memwiki-lint, memwiki-reindex")


@hooks_app.command("install")
def hooks_install(as_json: bool = JSON) -> None:
    """Write .pre-commit-config.yaml if missing (committed) and run `pre-commit install`."""
    from ..git.precommit import install

    setup = install(open_wiki())
    if as_json:
        emit_json(setup.to_dict())
    elif setup.config_written:
        print(f"wrote and committed {setup.config}")
    report_hooks(setup, as_json)
