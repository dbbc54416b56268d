"""Reading an index of an older manifest format without rebuilding it.

Format 11 stored the manifest base as pickled tuples (`rows-<gen>.pkl`: a dict of
FileEntry and a list of Row) and the delta under other names in state.pkl. Its Whoosh
directory and vector segments are exactly what format 12 uses, so an upgrade converts
the manifest alone, keeping every physical slot where it was (the vectors line up with
the slots). A 50,000-file rebuild takes half an hour; this takes a second or two.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .. import markdown
from . import manifest as st
from .columns import Base

HEAD_BYTES = 8192  # an Obsidian plugin's key sits in the frontmatter, at the top


def upgrade(path: Path, state: st.State) -> st.State:
    """The format-11 state read from path, converted (same layout); `upgraded` says from what."""
    legacy = state.__dict__.pop("_legacy", {})
    base_files: dict = {}
    base_rows: list = []
    if state.base:
        data = (path.parent / state.base).read_bytes()  # FileNotFoundError: a race, retried
        try:
            base_files, base_rows = st.unpickle(data)
        except Exception as exc:
            raise st.DamagedIndex(f"unreadable manifest base ({type(exc).__name__})") from None
    try:
        base = Base.build(dict(base_files), list(base_rows))
    except (ValueError, TypeError, AttributeError) as exc:
        raise st.DamagedIndex(f"unreadable manifest base ({type(exc).__name__})") from None
    upgraded = st.State(
        generation=state.generation,
        bm25_dir=state.bm25_dir,
        whoosh_generation=state.whoosh_generation,
        bm25_deleted=state.bm25_deleted,
        embedder=state.embedder,
        written_ns=state.written_ns,
        base=f"manifest-{state.generation}.bin",
        files_delta=dict(legacy.get("files") or {}),
        files_gone=set(legacy.get("files_gone") or ()),
        extra=list(state.extra),
        dead=set(state.dead),
        segments=list(state.segments),
        base_data=base,
        upgraded=state.format,
        recheck_plugins=True,
    )
    rows = upgraded.rows
    live = legacy.get("unembedded") or set()
    upgraded.unembedded_slots = {rows.slot(n) for n in live if 0 <= n < len(rows)}
    upgraded.changed()
    return upgraded


def recheck_plugin_notes(root: Path, state: st.State) -> list[str]:
    """Mark the plugin notes an older memwiki indexed as notes for re-reading; their paths.

    Before 2026-12-07 a Kanban board or an Excalidraw drawing was read as a RecallFile (a
    board with a name was searchable, a drawing reported as invalid), and the manifest did
    not record what they are. The freshness scan compares stats, so such a file would stay
    as it was until edited: the index would differ from a rebuild. Each known file's head
    is read once (a second or so at 50,000 files); a plugin note found gets an entry that
    no stat matches, so the update re-reads it.
    """
    found = []
    files = state.files
    for rel in list(files):
        entry = files[rel]
        if entry.plugin is not None:
            continue
        try:
            with open(root / rel, "rb") as fh:
                head = fh.read(HEAD_BYTES)
        except OSError:
            continue  # gone or unreadable: the scan reports it as it would anyway
        if b"-plugin" not in head:
            continue  # the common case
        fm = markdown.split_frontmatter(head.decode("utf-8", "replace"))
        if fm is not None and markdown.plugin_note(fm.text) is not None:
            state.files_delta[rel] = replace(entry, size=-1, sha256="")
            found.append(rel)
    state.recheck_plugins, state.plugins_checked = False, True
    if found:
        state.changed()
    return found


def persist(state_path: Path, root: Path, state: st.State, notify) -> bool:
    """Write an upgraded state: a converted manifest, plugin notes looked for; True: rescan."""
    layout = state.upgraded != st.FORMAT  # else the same layout, only rechecked
    if layout:  # Whoosh and vectors kept
        notify(f"upgrading the index manifest (format {state.upgraded} to {st.FORMAT})")
    marked = recheck_plugin_notes(root, state) if state.recheck_plugins else []
    # an opened base is memory-mapped from the file it would be written to: kept as it is
    st.save(state_path, state, write_base=layout)
    state.upgraded = None
    return bool(marked)
