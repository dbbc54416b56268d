"""Reading an index of an older manifest format without rebuilding it.

Format 11 stored the manifest base as pickled tuples (`rows-<gen>.pkl`: a dict of
FileEntry and a list of Row) and the delta under other names in state.pkl. Its Whoosh
directory and vector segments are exactly what format 12 uses, so an upgrade converts
the manifest alone, keeping every physical slot where it was (the vectors line up with
the slots). A 50,000-file rebuild takes half an hour; this takes a second or two.
"""

from __future__ import annotations

from pathlib import Path

from . import manifest as st
from .columns import Base


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
    )
    rows = upgraded.rows
    live = legacy.get("unembedded") or set()
    upgraded.unembedded_slots = {rows.slot(n) for n in live if 0 <= n < len(rows)}
    upgraded.changed()
    return upgraded
