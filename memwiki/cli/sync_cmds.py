"""Commands that move the wiki between devices: sync, clone, remote, restore."""

from __future__ import annotations

from pathlib import Path

import typer

from .context import config, open_wiki, split_ref
from .options import JSON_SYNC as JSON
from .output import emit_json, print_sync, warn


def sync(
    remote: str = typer.Option("origin", "--remote", help="The remote to sync with."),
    as_json: bool = JSON,
) -> None:
    """Fetch, commit hand edits, merge (conflicts kept as copies), push."""
    from ..git import sync as syncmod
    from ..git.staged import said

    result = syncmod.sync(open_wiki(), config(), remote)
    if as_json:
        emit_json(result.to_dict())
    else:
        print_sync(result)
    others = set(result.other_tools_copies)
    if set(result.conflict_copies) - others:
        warn(
            "conflict copies hold the remote's version: merge them by hand (`memwiki lint` lists them)"
        )
    if others:
        warn(
            "copies another sync tool made (Dropbox, Syncthing, iCloud): merge each into the"
            " file it copies, then delete it; sync never commits a new one"
        )
    for entry in result.committed_invalid:
        warn(said(entry, " as you staged it (`git add`)", "`memwiki sync`"))
    # (a repository cloned into the wiki, `folder/`, is said in its own not-committed line)
    if any(p["path"] not in others and not p["path"].endswith("/") for p in result.not_committed):
        warn("invalid RecallFiles were not committed: fix them (`memwiki lint`) and sync again")


def untrack_ignored(as_json: bool = JSON) -> None:
    """Stop tracking files the .gitignore ignores (Obsidian workspace, junk); they stay on disk."""
    from ..git.ignored import untrack_ignored as untrack

    wiki = open_wiki()
    with wiki.write_lock():
        commit, paths = untrack(wiki.repo)
    if as_json:
        emit_json({"commit": commit, "untracked": paths})
        return
    for path in paths:
        print(f"untracked {path}  (kept on disk)")
    print(f"commit {commit[:12]}" if commit else "nothing to untrack")


def clone(
    url: str = typer.Argument(..., help="The remote: ssh://, https://, file:// or a path."),
    path: Path = typer.Argument(
        None, help="Where to clone (default: the configured wiki path, if it does not exist)."
    ),
    as_json: bool = JSON,
) -> None:
    """Clone a wiki and make it the configured one (the first retrieve builds the index)."""
    from ..git import sync as syncmod

    result = syncmod.clone(url, path, config())
    for w in result.warnings:
        warn(w)
    if as_json:
        emit_json(result.to_dict())
        return
    print(f"Cloned {result.url} into {result.path}")
    print(f"It is now the configured wiki ({result.config_file})")
    print("The first `memwiki retrieve` builds its index")


def remote_add(
    url: str = typer.Argument(..., help="ssh://user@host/path.git, https://..., or a path."),
    name: str = typer.Option("origin", "--name", help="The remote's name."),
    as_json: bool = JSON,
) -> None:
    """Set the remote the wiki syncs with (no network access)."""
    from ..git import sync as syncmod

    info = syncmod.add_remote(open_wiki(), url, name)
    if as_json:
        emit_json(info)
    elif info["previous"] and info["previous"] != info["url"]:
        print(f"{info['name']}  {info['url']}  (was {info['previous']})")
    else:
        print(f"{info['name']}  {info['url']}")


def remote_show(
    name: str = typer.Option(None, "--name", help="The remote to compare with (default: origin)."),
    as_json: bool = JSON,
) -> None:
    """List remotes and how far the branch is ahead/behind as of the last sync."""
    from ..git import sync as syncmod

    info = syncmod.remote_info(open_wiki(), name or syncmod.DEFAULT_REMOTE)
    known = [r["name"] for r in info["remotes"]]
    if name is not None and name not in known:  # as `sync --remote` does (exit 3)
        from ..errors import NotFound

        raise NotFound(f"no remote named {name!r} (remotes: {', '.join(known) or 'none'})")
    if as_json:
        emit_json(info)
        return
    if not info["remotes"]:
        print("No remote: add one with `memwiki remote add URL`")
        return
    for r in info["remotes"]:
        print(f"{r['name']}  {r['url']}")
    if info["upstream"]:
        print(f"branch {info['branch']} syncs with {info['upstream']}")
    if info["ahead"] is not None:
        print(f"ahead {info['ahead']}, behind {info['behind']} (as of the last sync)")
    elif info["upstream"]:
        print("not synced yet: `memwiki sync` pushes the wiki")


def restore(
    ref: str = typer.Argument(..., help="TRACK/NAME"),
    rev: str = typer.Option(
        None,
        "--rev",
        help="A revision from `memwiki log TRACK/NAME` (default: before the last change).",
    ),
    as_json: bool = JSON,
) -> None:
    """Bring a RecallFile back as it was at a revision, as a new commit."""
    from ..git.restore import restore as do_restore

    wiki = open_wiki()
    track, name = split_ref(ref, wiki)
    nested = ref.count("/") > 1  # a note deleted from a subfolder is restored there
    rel = (ref if ref.endswith(".md") else f"{ref}.md") if nested else None
    result = do_restore(wiki, track, name, rev, rel)
    if as_json:
        emit_json(result.to_dict())
        return
    if result.saved:
        print(f"committed its uncommitted edit first  {result.saved[:12]}")
    if result.commit is None:
        print(f"{result.path} already is as it was at {result.rev[:12]}; nothing to commit")
    else:
        print(f"restored {result.path} as of {result.rev[:12]}")
        print(f"commit {result.commit[:12]}")
