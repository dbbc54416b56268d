"""What install wrote into an agent's files, remembered per file in ~/.config/memwiki/.

A file memwiki edits is the person's file too: only a record of what install wrote tells
its text from theirs. Each record is a JSON object keyed by the edited file's path, holding
hashes (and a copy of the bytes only where removal needs them), readable by its owner alone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import StorageError
from ...fsutil import atomic_write_text

# settings.json as it was before install, per path: a file that was `{}` or empty, or an
# empty "UserPromptSubmit": [], cannot be told from what install creates otherwise.
CLAUDE_SETTINGS = "claude-settings-before.json"
# The hash of the managed block install last wrote into each instruction file.
BLOCKS = "instruction-blocks.json"


def digest(text: str | None) -> str | None:
    """The sha256 of the text's UTF-8 bytes (None for an absent file)."""
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def path_of(config: Config, name: str) -> Path:
    """Where the record called name lives."""
    return config.config_file.parent / name


def load(config: Config, name: str) -> dict[str, Any]:
    """The record, or {} when there is none (written by an older memwiki) or it is unreadable."""
    try:
        data = json.loads(path_of(config, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(config: Config, name: str, record: dict[str, Any]) -> None:
    """Write the record atomically, readable by its owner only (it may hold a settings copy)."""
    path = path_of(config, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
        path.chmod(0o600)
    except OSError as exc:
        raise StorageError(f"{path}: cannot write: {exc.strerror}") from None


def forget(config: Config, name: str, paths: list[Path]) -> None:
    """Drop the entries of these files (uninstall took out what install wrote there)."""
    record = load(config, name)
    dropped = [record.pop(str(p), None) for p in paths]
    if record or not path_of(config, name).exists():
        if any(d is not None for d in dropped):
            save(config, name, record)
        return
    # Nothing left to remember: the file goes, so that uninstalling every host leaves no
    # record behind (it stayed as `{}`).
    try:
        path_of(config, name).unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"{path_of(config, name)}: cannot delete: {exc.strerror}") from None
