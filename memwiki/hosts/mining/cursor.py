"""Cursor Agent CLI: ~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from .base import JsonlSource, SessionRef, walk_jsonl
from .records import ROLES, Verdict, block_items, classify_blocks

HOST = "cursor"
SELF_SESSION_VAR = "CURSOR_CONVERSATION_ID"
HOME_VARS: tuple[str, ...] = ()
TRANSCRIPTS = "agent-transcripts"
_USER_QUERY = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.DOTALL)


def cursor_dir(config: Config) -> Path:
    """~/.cursor (no documented relocation variable for transcripts, hosts.md §3)."""
    return config.home / ".cursor"


def instruction_file(config: Config) -> Path | None:
    """None: Cursor has no user-level instruction file a CLI can reach (pass a project file)."""
    return None


def host_present(config: Config) -> bool:
    """True when ~/.cursor exists."""
    return cursor_dir(config).is_dir()


def classify(record: dict[str, Any]) -> Verdict:
    """hosts.md §3: prose wins even beside tool blocks; tool-only records are TOOL."""
    msg = record.get("message")
    if record.get("role") not in ROLES or not isinstance(msg, dict):
        return Verdict.DROP
    return classify_blocks(msg.get("content"))


def unwrap_user_query(text: str) -> str:
    """The typed request inside a <user_query> wrapper, or the text unchanged."""
    match = _USER_QUERY.match(text)
    return match.group(1) if match else text


def to_items(record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items; user text loses its <user_query> wrapper."""
    role = record["role"]
    items = block_items(role, record["message"].get("content"), ctx)
    if role == "user":
        for item in items:
            if item["type"] == "message":
                item["content"] = unwrap_user_query(item["content"])
    return [it for it in items if it["type"] != "message" or it["content"].strip()]


class CursorSource(JsonlSource):
    """Reader for Cursor agent transcripts."""

    host = HOST

    def default_location(self) -> Path | None:
        """~/.cursor/projects."""
        return cursor_dir(self.config) / "projects"

    def sessions_in(self, root: Path) -> Iterable[SessionRef]:
        """Only */agent-transcripts/**/*.jsonl: project dirs also hold terminals and canvases."""
        refs = []
        for path in walk_jsonl(root):
            parts = path.relative_to(root).parts
            if TRANSCRIPTS in parts[:-1]:
                rel = parts[parts.index(TRANSCRIPTS) + 1 :]
            elif root.name == TRANSCRIPTS:
                rel = parts
            else:
                continue
            # The owner is the first component under agent-transcripts (subagents nest below it).
            owner = rel[0] if len(rel) > 1 else Path(rel[0]).stem
            key = "/".join(parts)[: -len(".jsonl")]
            refs.append(self.ref_for(path, key=key, session_id=owner))
        return refs

    # The module-level functions are the reader's rules; tests call them directly too.
    classify = staticmethod(classify)
    to_items = staticmethod(to_items)


SOURCE = CursorSource
