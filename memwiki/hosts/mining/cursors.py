"""Per-host cursor state: a committed cursor.json and a pending.json awaiting the commit.

Flow for a bridging run (the bridge module drives it):
    state = claim_sessions(load_cursor(d / CURSOR_FILE), self_ids)   # claims persist at once,
    save_cursor(d / CURSOR_FILE, state)                             # even if the run fails
    slices = collect_new_sessions(host, config, state, ...)
    save_cursor(d / PENDING_FILE, advance_cursor(state, slices))
    ... memorize commit succeeded -> promote_pending(d); failed -> keep both for the retry
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import StorageError
from ...fsutil import atomic_write_text
from .base import SessionSlice

CURSOR_FILE = "cursor.json"
PENDING_FILE = "pending.json"
STATE_VERSION = 1
MAX_CLAIMED = 1000
# pending.json also records the memorize run it waits for under this key.
RUN_KEY = "run"


def empty_state() -> dict[str, Any]:
    """A cursor state that has seen nothing."""
    return {"version": STATE_VERSION, "streams": {}, "claimed": []}


def host_state_dir(config: Config, host: str) -> Path:
    """<wiki>/.memwiki/hosts/<host>/, where the bridge keeps this host's cursor files."""
    return config.sidecar_path / "hosts" / host


def load_cursor(path: Path) -> dict[str, Any]:
    """The state stored at path, or an empty state when the file does not exist."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return empty_state()
    except OSError as exc:
        raise StorageError(f"{path}: cannot read cursor: {exc.strerror}") from None
    try:
        state = json.loads(text)
    except ValueError:
        raise StorageError(
            f"{path}: cursor file is not valid JSON; move it away to start over"
        ) from None
    if not isinstance(state, dict) or not isinstance(state.get("streams", {}), dict):
        raise StorageError(f"{path}: cursor file has an unexpected shape")
    state.setdefault("version", STATE_VERSION)
    state.setdefault("streams", {})
    state.setdefault("claimed", [])
    return state


def save_cursor(path: Path, state: dict[str, Any]) -> None:
    """Write a state atomically: sorted keys, one stream a line."""
    atomic_write_text(Path(path), dump_state(state))


def dump_state(state: dict[str, Any]) -> str:
    """The state as indented JSON text with each stream entry on one line.

    json.dumps with indent runs in pure Python: 40 ms for 2,000 streams, paid twice by a
    prepare that offers one grown session. One line a stream keeps the file readable and
    costs only C-encoded dumps; the rest (claims, the pending run) is small.
    """
    parts = []
    for key in sorted(state):
        value = state[key]
        if key == "streams" and isinstance(value, dict) and value:
            lines = [
                f"    {json.dumps(k)}: {json.dumps(value[k], sort_keys=True)}"
                for k in sorted(value)
            ]
            text = "{\n" + ",\n".join(lines) + "\n  }"
        else:
            text = json.dumps(value, indent=2, sort_keys=True).replace("\n", "\n  ")
        parts.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n" if parts else "{}\n"


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    # Stream entries are replaced whole, never changed in place: copying the containers is
    # enough (a deepcopy of 2,000 entries took 27 ms of every prepare that found something).
    new = dict(state)
    new["streams"] = dict(state.get("streams", {}))
    new["claimed"] = list(state.get("claimed", []))
    return new


def advance_cursor(state: dict[str, Any], slices: Iterable[SessionSlice]) -> dict[str, Any]:
    """A copy of state with every slice's stream cursor applied (memorizable or not)."""
    new = _copy(state)
    streams = new["streams"]
    for sl in slices:
        streams[sl.key] = dict(sl.cursor)
    return new


def claim_sessions(state: dict[str, Any], session_ids: Iterable[str]) -> dict[str, Any]:
    """A copy of state whose claimed list also holds session_ids (the newest 1000 are kept)."""
    new = _copy(state)
    claimed = [c for c in new.get("claimed", []) if isinstance(c, str)]
    for sid in session_ids:
        if sid and sid not in claimed:
            claimed.append(sid)
    new["claimed"] = claimed[-MAX_CLAIMED:]
    return new


def promote_pending(directory: Path) -> bool:
    """Make pending.json the committed cursor; False when nothing was pending."""
    directory = Path(directory)
    pending_path = directory / PENDING_FILE
    if not pending_path.is_file():
        return False
    pending = load_cursor(pending_path)
    committed = load_cursor(directory / CURSOR_FILE)
    # Claims recorded after the pending state was computed must survive the promotion.
    merged = claim_sessions(pending, committed.get("claimed", []))
    merged.pop(RUN_KEY, None)  # the pending run's record is not part of the cursor
    save_cursor(directory / CURSOR_FILE, merged)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pending_path)
    return True


def discard_pending(directory: Path) -> bool:
    """Forget the pending cursor advance; False when nothing was pending."""
    try:
        os.unlink(Path(directory) / PENDING_FILE)
    except FileNotFoundError:
        return False
    return True
