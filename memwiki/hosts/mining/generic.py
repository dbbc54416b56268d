"""Generic JSONL reader: sniffs each record against five known dialects (hosts.md §7)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from . import claude_code, codex, cursor, hermes, openclaw
from .base import JsonlSource, SessionRef, read_jsonl_lines, walk_jsonl
from .records import ROLES, Verdict, parse_record

HOST = "generic"
SELF_SESSION_VAR = None  # unknown agent: the user must not point it at the memorize run
HOME_VARS: tuple[str, ...] = ()
DIALECTS = {
    1: "payload-wrapped (Codex)",
    2: "typed message tree (OpenClaw/pi)",
    3: "typed block records (Claude)",
    4: "role + message (Cursor)",
    5: "flat chat rows (OpenAI client, Hermes export)",
}
SNIFF_FILES = 3
SNIFF_LINES = 200


def instruction_file(config: Config) -> Path | None:
    """None: a generic agent's instruction file must be named with --path."""
    return None


def host_present(config: Config) -> bool:
    """Always False: there is nothing to look for without a session directory."""
    return False


def dialect(record: dict[str, Any]) -> int | None:
    """The first dialect whose shape matches the record, or None when none does."""
    msg = record.get("message")
    if isinstance(record.get("payload"), dict):
        return 1
    if record.get("type") == "message" and isinstance(msg, dict):
        return 2
    if record.get("type") in ROLES and isinstance(msg, dict):
        return 3
    if record.get("role") in ROLES and isinstance(msg, dict):
        return 4
    if "role" in record and any(k in record for k in ("content", "tool_calls", "tool_call_id")):
        return 5
    return None


def classify(record: dict[str, Any]) -> Verdict:
    """The verdict of the record's dialect; an unrecognised shape is dropped, never guessed."""
    kind = dialect(record)
    if kind == 1:
        return codex.classify_payload(record["payload"])
    if kind == 2:
        return openclaw.classify(record)
    if kind == 3:
        return claude_code.classify(record)
    if kind == 4:
        return cursor.classify(record)
    if kind == 5:
        return hermes.classify(record)
    return Verdict.DROP


def to_items(record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items via the matching host's converter."""
    kind = dialect(record)
    if kind == 1:
        return codex.to_items(record, verdict, ctx)
    if kind == 2:
        return openclaw.to_items(record, verdict, ctx)
    if kind == 3:
        return claude_code.to_items(record, verdict, ctx)
    if kind == 4:
        return cursor.to_items(record, verdict, ctx)
    return hermes.to_items(record, verdict, ctx)


def sniff(directory: Path) -> dict[str, Any]:
    """Sample the newest JSONL files of a directory: dialects seen and verdict counts."""
    files = sorted(walk_jsonl(directory), key=lambda p: -p.stat().st_mtime)[:SNIFF_FILES]
    dialects: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    for path in files:
        lines, _ = read_jsonl_lines(path, 0)
        for raw in lines[:SNIFF_LINES]:
            rec = parse_record(raw)
            kind = dialect(rec) if rec is not None else None
            dialects[DIALECTS.get(kind, "unrecognized") if kind else "unrecognized"] += 1
            verdicts[classify(rec).value if rec is not None else "drop"] += 1
    return {
        "files": [str(p) for p in files],
        "dialects": dict(dialects),
        "verdicts": dict(verdicts),
        "memorizable": verdicts["message"] > 0,
    }


class GenericSource(JsonlSource):
    """Reader for any directory of JSONL transcripts (session id = file stem)."""

    host = HOST

    def default_location(self) -> Path | None:
        """None: the generic reader only reads an explicit session_dir."""
        return None

    def sessions_in(self, root: Path) -> Iterable[SessionRef]:
        """Every *.jsonl under the directory, newest first."""
        refs = []
        for path in walk_jsonl(root):
            key = str(path.relative_to(root))[: -len(".jsonl")]
            refs.append(self.ref_for(path, key=key, session_id=path.stem))
        return refs

    def recognizes(self, record: dict[str, Any]) -> bool:
        """True when some dialect matches the record's shape."""
        return dialect(record) is not None

    # The module-level functions are the reader's rules; tests call them directly too.
    classify = staticmethod(classify)
    to_items = staticmethod(to_items)


SOURCE = GenericSource
