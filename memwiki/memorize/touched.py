"""The paths a session's tool calls read or changed, logged by prepare for the resource job.

`<run>/resources/touched-session-NN.txt` holds one path per line, changed ones first;
memorize/resources.py verifies them later (verify-resources).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..fsutil import atomic_write_text

RESOURCES_DIR = "resources"
# Argument names hosts use for the file a tool call reads or writes.
PATH_KEYS = ("file_path", "path", "filePath", "notebook_path", "filename", "target_file", "file")
LIST_KEYS = ("paths", "files", "file_paths")
CHANGING_TOOLS = re.compile(r"write|edit|patch|create|replace|delete|move|rename", re.IGNORECASE)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.MULTILINE)
MAX_PATH_CHARS = 1024


def touched_paths(items: Iterable[dict[str, Any]]) -> list[str]:
    """Paths a session's tool calls read or changed, changed ones first, each once."""
    changed: dict[str, None] = {}
    read: dict[str, None] = {}
    for item in items:
        if item.get("type") != "tool_call":
            continue
        name = str(item.get("name") or "")
        args = item.get("arguments")
        found = list(_paths_in(args))
        patched = list(_patched(args))
        target = changed if patched or CHANGING_TOOLS.search(name) else read
        for path in found + patched:
            if 0 < len(path) <= MAX_PATH_CHARS and "\n" not in path and "\x00" not in path:
                target.setdefault(path, None)
    return list(changed) + [p for p in read if p not in changed]


def _paths_in(args: Any) -> Iterable[str]:
    if not isinstance(args, dict):
        return
    for key in PATH_KEYS:
        if isinstance(args.get(key), str):
            yield args[key].strip()
    for key in LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            yield from (v.strip() for v in value if isinstance(v, str))


def _patched(args: Any) -> Iterable[str]:
    # Codex edits files with apply_patch: "*** Update File: src/x.py" inside the patch text.
    texts: list[str] = []
    if isinstance(args, str):
        texts.append(args)
    elif isinstance(args, dict):
        texts.extend(v for v in args.values() if isinstance(v, str))
        for v in args.values():
            if isinstance(v, list):
                texts.extend(x for x in v if isinstance(x, str))
    for text in texts:
        if "*** " in text:
            yield from (m.strip() for m in _PATCH_FILE.findall(text))


def touched_log_path(run_directory: Path, session_number: int) -> Path:
    """<run>/resources/touched-session-NN.txt."""
    return Path(run_directory) / RESOURCES_DIR / f"touched-session-{session_number:02d}.txt"


def write_touched_log(run_directory: Path, session_number: int, items, cwd: str | None) -> Path:
    """Write the session's touched paths (absolute when the session's directory is known)."""
    lines = []
    for path in touched_paths(items):
        if cwd and not os.path.isabs(path):
            path = os.path.normpath(os.path.join(cwd, path))
        lines.append(path)
    target = touched_log_path(run_directory, session_number)
    atomic_write_text(target, "".join(f"{p}\n" for p in lines))
    return target
