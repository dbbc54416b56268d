"""A session's working directory, from what each host records (docs/hosts.md, "Projects").

- Claude Code: every record carries `cwd`.
- Codex: `session_meta` and every `turn_context` record carry `payload.cwd`.
- OpenClaw: the `session` header record of a session file carries `cwd`.
- Generic JSONL: a top-level `cwd`, when the producer writes one.
- Cursor and Hermes record none (Cursor's project folder name is a lossy slug of the
  path; Hermes keeps only the directories its tools were called in): their sessions
  are global unless prepared with `--project`.

A slice after a cursor may not include the header record, so the head of the file is
read as well when the new records name no directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .records import parse_record

HEAD_BYTES = 65536  # the header records sit at the top of a session file
_PAYLOAD_TYPES = ("session_meta", "turn_context")


def record_cwd(record: dict[str, Any]) -> str | None:
    """The working directory one raw record names, or None."""
    value = record.get("cwd")
    if record.get("type") in _PAYLOAD_TYPES and isinstance(record.get("payload"), dict):
        value = record["payload"].get("cwd", value)
    if isinstance(value, str) and value.strip() and "\x00" not in value:
        return value.strip()
    return None


def head_cwd(path: str | Path) -> str | None:
    """The first working directory named in the head of a JSONL session file, or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    lines = head.splitlines()
    if len(head) == HEAD_BYTES:
        lines = lines[:-1]  # the last line may be cut in the middle
    for line in lines:
        record = parse_record(line)
        if record is not None:
            found = record_cwd(record)
            if found:
                return found
    return None


def slice_cwd(records: list[Any], path: str | Path) -> str | None:
    """The directory a slice's session worked in: the last one its records name, else the
    file head's."""
    found = None
    for raw in records:
        record = parse_record(raw)
        if record is not None:
            found = record_cwd(record) or found
    return found or head_cwd(path)
