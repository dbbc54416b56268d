"""What every command needs from this invocation: the global options, the config, the wiki.

The CLI is an entry point: it is one of the few places that call `config.load`; the
library receives the resulting Config (it travels with the Wiki).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import Config
    from ..wiki import Wiki


@dataclass
class Invocation:
    """Global options of this invocation (set by the Typer root callback)."""

    wiki: str | None = None
    debug: bool = False


state = Invocation()


def config() -> Config:
    """The resolved configuration of this process."""
    from ..config import load

    return load({"wiki": state.wiki})


def adopt_new_wiki(root: Path) -> tuple[Path | None, str | None]:
    """After `init PATH`: (config file written, None) when no wiki was configured yet and
    root is now the one, as `clone` makes it; else (None, how to reach root) when later
    commands would open another wiki; (None, None) when they open root."""
    from ..config import load, write_file_setting

    cfg = load({})  # what a later command without --wiki reads
    current = cfg.wiki_path.expanduser().resolve()
    if current == root.resolve():
        return None, None
    setting = cfg.settings["wiki"]
    if setting.source == "default" and not current.exists():
        # Bug it prevents: `memwiki init ~/notes/wiki` then `memwiki add ...` failed with
        # "no wiki at ~/memwiki", and nothing had said that the wiki needs configuring.
        try:
            return write_file_setting(cfg, "wiki", str(root)), None
        except OSError as exc:  # the wiki is made: an unwritable HOME only costs the setting
            reason = exc.strerror or type(exc).__name__
            return None, (
                f"the config file {cfg.config_file} cannot be written ({reason}): pass "
                f'--wiki {root}, or set wiki = "{root}" there'
            )
    if setting.source.startswith("env:"):
        how = f"or set {setting.source[4:]}={root}"
    else:
        how = f'or set wiki = "{root}" in {cfg.config_file}'
    return None, f"commands without --wiki still use {current}: pass --wiki {root}, {how}"


def configured_wiki() -> Path:
    """The wiki a later command without --wiki uses (MEMWIKI_DIR, config file, ~/memwiki)."""
    from ..config import load

    return load({}).wiki_path.resolve()


def open_wiki() -> Wiki:
    """The configured wiki, carrying this process's config (errors when there is none)."""
    from ..wiki import Wiki

    cfg = config()
    return Wiki.open(cfg.wiki_path, cfg)


def wiki_option() -> str | None:
    """The --wiki PATH of this invocation, absolute and shell-quoted, for next commands."""
    return shlex.quote(os.path.abspath(state.wiki)) if state.wiki else None


def split_ref(ref: str, wiki: Wiki | None = None) -> tuple[str, str]:
    """TRACK/NAME, or a note's path as list and retrieve print it (TRACK/FOLDERS/NAME.md),
    into (track, name); with wiki, a path with folders must be where that note is.

    Bug it prevents: `retrieve --files` printed memory/team/oncall.md, and `show`, `rm`,
    `links`, `log` and `restore` refused that path ("expected TRACK/NAME"); only
    memory/oncall found it.
    """
    from ..errors import InvalidInput, NotFound

    ref = ref[:-3] if ref.endswith(".md") else ref
    parts = ref.split("/")
    if len(parts) < 2 or not all(parts) or {".", ".."} & set(parts):
        raise InvalidInput(f"{ref!r}: expected TRACK/NAME, for example memory/billing-service")
    track, name = parts[0], parts[-1]
    if wiki is not None and len(parts) > 2:
        path = wiki.path_of(track, name)
        if path.is_file() and path.relative_to(wiki.root).as_posix() != f"{ref}.md":
            # names are unique in a track: the name is elsewhere, so this path names nothing
            raise NotFound(
                f"no RecallFile {ref}.md (the note {name} is {path.relative_to(wiki.root).as_posix()})"
            )
    return track, name


def reindex_for(wiki: Wiki):
    """The reindex hook a commit calls once the merge is in (the index is only a cache)."""

    def reindex() -> None:
        from ..index.indexer import Index

        Index(wiki, wiki.config).update()

    return reindex
