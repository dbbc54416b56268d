"""Hermes Agent: the SQLite store $HERMES_HOME/state.db (and profiles/<name>/state.db)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from ...config import Config
from .base import ReadResult, SessionRef, TranscriptSource, env_path, newest_first
from .records import (
    ROLES,
    Verdict,
    block_items,
    classify_blocks,
    message,
    parse_json_text,
    tool_call,
    tool_result,
)
from .sqlite_ro import (
    connect_ro,
    epoch_seconds,
    grouped_sessions,
    reading,
    table_columns,
    unreadable,
)

HOST = "hermes"
SELF_SESSION_VAR = "HERMES_SESSION_ID"
HOME_VARS = ("HERMES_HOME",)
DB_NAME = "state.db"
ROW_COLUMNS = ("role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp")


def hermes_home(config: Config) -> Path:
    """~/.hermes, or HERMES_HOME."""
    return env_path(config, "HERMES_HOME") or config.home / ".hermes"


def _root(config: Config, home: Path) -> Path:
    """Where Hermes keeps active_profile and profiles/ (hermes_constants.get_default_hermes_root)."""
    native = config.home / ".hermes"
    try:
        home.resolve().relative_to(native.resolve())
        return native
    except ValueError:
        return home.parent.parent if home.parent.name == "profiles" else home


def active_home(config: Config) -> Path:
    """The home Hermes runs in: a named profile's when `hermes profile use` made it sticky.

    Hermes 0.19 (hermes_cli/main.py, _apply_profile_override) trusts a HERMES_HOME that is
    a profile directory; otherwise a name in <root>/active_profile other than "default"
    makes <root>/profiles/<name> its home, so SOUL.md is read from there.
    """
    home = hermes_home(config)
    if home.parent.name == "profiles":
        return home
    root = _root(config, home)
    try:
        name = (root / "active_profile").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):  # Hermes skips an unreadable file too
        return home
    if not name or name.casefold() == "default":
        return home
    profile = root / "profiles" / name.lower()
    # A profile that does not exist stops Hermes itself ("Profile … does not exist").
    return profile if profile.is_dir() else home


def instruction_file(config: Config) -> Path | None:
    """SOUL.md of the home Hermes runs in (the block goes inline: skills load on demand)."""
    return active_home(config) / "SOUL.md"


def host_present(config: Config) -> bool:
    """True when the Hermes home directory exists."""
    return hermes_home(config).is_dir()


def _has_content(value: Any) -> bool:
    return (isinstance(value, str) and bool(value.strip())) or (
        isinstance(value, list) and bool(value)
    )


def classify(record: dict[str, Any]) -> Verdict:
    """hosts.md §5 (also generic dialect 5): flat chat rows with role and content."""
    role = record.get("role")
    if role == "tool" or (role in ROLES and record.get("tool_call_id")):
        return Verdict.TOOL
    if role not in ROLES:
        return Verdict.DROP  # system, session_meta, unknown roles
    content = record.get("content")
    if isinstance(content, list):
        verdict = classify_blocks(content)
        if verdict is not Verdict.DROP:
            return verdict
    elif _has_content(content):
        return Verdict.MESSAGE
    return Verdict.TOOL if record.get("tool_calls") else Verdict.DROP


def to_items(record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items for a flat chat row."""
    if verdict is Verdict.TOOL and (record.get("role") == "tool" or record.get("tool_call_id")):
        content, is_error = unwrap_tool_output(record.get("content", ""))
        return tool_result(
            content,
            record.get("tool_call_id"),
            ctx,
            name=record.get("tool_name"),
            is_error=is_error,
        )
    role, content = record["role"], record.get("content")
    items = block_items(role, content, ctx) if isinstance(content, list) else []
    if isinstance(content, str):
        items = message(role, content)
    calls = parse_json_text(record.get("tool_calls"))
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
        args = parse_json_text(fn.get("arguments", {}))
        items.extend(tool_call(fn.get("name"), args, call.get("id"), ctx))
    return items


def unwrap_tool_output(content: Any) -> tuple[Any, bool | None]:
    """A tool row's text and error flag: Hermes stores `{"output", "exit_code", "error"}` JSON."""
    data = parse_json_text(content)
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return content, None
    text, error, code = data["output"], data.get("error"), data.get("exit_code")
    if isinstance(error, str) and error.strip():
        text = f"{text}\n[error] {error}" if text else f"[error] {error}"
    failed = bool(error) or (isinstance(code, int) and not isinstance(code, bool) and code != 0)
    if "exit_code" not in data and "error" not in data:
        return text, None
    return text, failed


class HermesSource(TranscriptSource):
    """Reader for the Hermes SQLite store (cursor = highest message row id read)."""

    host = HOST

    def default_location(self) -> Path | None:
        """$HERMES_HOME."""
        return hermes_home(self.config)

    def databases(self) -> list[tuple[str, Path]]:
        """(key prefix, path) for every state.db: the default one, then named profiles."""
        loc = self.location
        if loc is None:
            return []
        if loc.is_file():
            return [("", loc)]
        found = [("", loc / DB_NAME)] if (loc / DB_NAME).is_file() else []
        for db in sorted((loc / "profiles").glob(f"*/{DB_NAME}")):
            found.append((f"profiles/{db.parent.name}:", db))
        return found

    def list_sessions(self) -> list[SessionRef]:
        """One virtual stream per session id, newest activity first."""
        refs: list[SessionRef] = []
        for prefix, db in self.databases():
            try:
                refs.extend(self._list_db(prefix, db))
            except sqlite3.Error as exc:
                # Locked beyond the busy timeout, or not a database: say so, and leave its
                # sessions unlisted so that no cursor moves past them.
                self.problems.append(unreadable(db, exc))
        return newest_first(refs)

    def _list_db(self, prefix: str, db: Path) -> list[SessionRef]:
        with connect_ro(db) as conn:
            rows = grouped_sessions(conn, "messages", ("timestamp", "id"))
            if not rows:
                return []
            parents: dict[str, str] = {}
            if "parent_session_id" in table_columns(conn, "sessions"):
                parents = dict(
                    conn.execute(
                        "SELECT id, parent_session_id FROM sessions"
                        " WHERE parent_session_id IS NOT NULL"
                    ).fetchall()
                )
        return [
            SessionRef(
                self.host,
                key=f"{prefix}{sid}",
                session_id=str(sid),
                path=db,
                mtime=epoch_seconds(ts),
                signature=str(max_id),
                parent_id=parents.get(sid),
            )
            for sid, ts, max_id in rows
            if sid is not None
        ]

    def read(self, ref: SessionRef, entry: dict[str, Any] | None) -> ReadResult:
        """Rows with id above the cursor, as JSON objects without NULL columns."""
        pos = int((entry or {}).get("pos", 0))
        with reading(ref.path) as conn:
            present = table_columns(conn, "messages")
            cols = [c for c in ROW_COLUMNS if c in present]
            dup = "0"
            if "active" in present:
                # Compaction re-inserts retained context as new rows; a copy of a row already
                # mined and since deactivated is not new content.
                # Read together with its copy, a deactivated original gives way to the copy:
                # each message is mined once, and one compacted without a copy is kept.
                same = (
                    " AND o.role IS m.role AND o.content IS m.content"
                    " AND o.tool_calls IS m.tool_calls)"
                )
                dup = (
                    "(EXISTS (SELECT 1 FROM messages o WHERE o.session_id = m.session_id"
                    " AND o.id <= :pos AND o.active = 0" + same + " OR (m.active = 0 AND"
                    " EXISTS (SELECT 1 FROM messages o WHERE o.session_id = m.session_id"
                    " AND o.id > m.id AND o.active = 1" + same + "))"
                )
            select = ", ".join(["m.id", f"{dup} AS dup", *(f"m.{c}" for c in cols)])
            rows = conn.execute(
                f"SELECT {select} FROM messages m WHERE m.session_id = :sid AND m.id > :pos"
                " ORDER BY m.id",
                {"sid": ref.session_id, "pos": pos},
            ).fetchall()
        records = [
            {c: v for c, v in zip(cols, row[2:], strict=True) if v is not None}
            for row in rows
            if not row[1]
        ]
        cursor = {
            "pos": max([pos, *(row[0] for row in rows)]),
            "sig": ref.signature,
            "session_id": ref.session_id,
            "path": str(ref.path),
        }
        return ReadResult(records=records, cursor=cursor, extra_drops=len(rows) - len(records))

    # The module-level functions are the reader's rules; tests call them directly too.
    classify = staticmethod(classify)
    to_items = staticmethod(to_items)


SOURCE = HermesSource
