"""OpenClaw: per-agent SQLite transcripts, plus legacy per-session JSONL files."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...config import Config
from . import openclaw_config
from .base import JsonlSource, ReadResult, SessionRef, newest_first
from .records import ROLES, TOOL_CALL_BLOCKS, Verdict, block_items, block_types, tool_result
from .sqlite_ro import (
    connect_ro,
    epoch_seconds,
    grouped_sessions,
    reading,
    table_columns,
    text_of,
    unreadable,
)

HOST = "openclaw"
SELF_SESSION_VAR = None  # the wrapper names the run's session itself (BRIDGE_SESSION_PREFIX)
HOME_VARS = (
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_HOME",
    "OPENCLAW_CONFIG_PATH",
    "OPENCLAW_WORKSPACE_DIR",
    "OPENCLAW_PROFILE",
)
DB_RELPATH = ("agent", "openclaw-agent.sqlite")
# OpenClaw's own list of the agent databases it wrote (agent_databases: agent_id, path, the
# path relative to the state directory or absolute): `session.store` in openclaw.json puts an
# agent's database outside agents/<id>/agent/, and this is where OpenClaw records it.
REGISTRY_RELPATH = ("state", "openclaw.sqlite")
# The session ids memwiki's scheduled OpenClaw runs use: the wrapper passes one per run,
# this prefix plus a timestamp and its process id (the invocation names it, not a transcript).
BRIDGE_SESSION_PREFIX = "memwiki-bridge-"
BRIDGE_SESSION_ID = "memwiki-bridge"  # the fixed id of earlier versions, still skipped


def state_dir(config: Config) -> Path:
    """OPENCLAW_STATE_DIR, else ~/.openclaw under OPENCLAW_HOME (which replaces HOME)."""
    return openclaw_config.user_path(config, "OPENCLAW_STATE_DIR") or (
        openclaw_config.openclaw_home(config) / ".openclaw"
    )


def instruction_file(config: Config) -> Path | None:
    """AGENTS.md in the default agent's workspace (openclaw.json may move it)."""
    return openclaw_config.workspace(config, state_dir(config)) / "AGENTS.md"


def host_present(config: Config) -> bool:
    """True when the OpenClaw state directory exists."""
    return state_dir(config).is_dir()


def classify(record: dict[str, Any]) -> Verdict:
    """hosts.md §4: user/assistant messages; toolResult and toolCall-only entries are TOOL."""
    msg = record.get("message")
    if record.get("type") != "message" or not isinstance(msg, dict):
        return Verdict.DROP  # session header, model_change, compaction, branch_summary, …
    role = msg.get("role")
    if role in ("toolResult", "tool"):
        return Verdict.TOOL
    if role not in ROLES:
        return Verdict.DROP
    kinds = block_types(msg.get("content"))
    if role == "assistant" and kinds and kinds <= TOOL_CALL_BLOCKS | {"thinking"}:
        return Verdict.TOOL if kinds & TOOL_CALL_BLOCKS else Verdict.DROP
    return Verdict.MESSAGE


def to_items(record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items for a kept message entry."""
    msg = record["message"]
    if msg.get("role") in ("toolResult", "tool"):
        return tool_result(
            msg.get("content", ""),
            msg.get("toolCallId"),
            ctx,
            name=msg.get("toolName"),
            is_error=msg.get("isError"),
        )
    return block_items(msg["role"], msg.get("content"), ctx)


def _legacy_skipped(path: Path) -> bool:
    name = path.name
    return (
        name.endswith(".trajectory.jsonl")
        or ".checkpoint." in name
        or "session-sqlite-import-archive" in path.parts
    )


class OpenClawSource(JsonlSource):
    """Reader for OpenClaw agent stores (database rows win over legacy files)."""

    host = HOST

    def default_location(self) -> Path | None:
        """The state directory (agents/ below it)."""
        return state_dir(self.config)

    def list_sessions(self) -> list[SessionRef]:
        """Every stream of the state directory and of the `--profile` ones beside it."""
        refs = super().list_sessions()
        # Session ids are UUIDs: one seen already is a copy of that folder (a backup someone
        # named ~/.openclaw-old), not a session to mine twice.
        seen = {r.session_id for r in refs}
        for root in self._profile_states():
            prefix = f"{root.name}:"  # no "/": read() finds the session id after the first
            for ref in self.sessions_in(root):
                if ref.session_id not in seen:
                    seen.add(ref.session_id)
                    refs.append(
                        replace(ref, key=prefix + ref.key, session_id=prefix + ref.session_id)
                    )
        return newest_first(refs)

    def _profile_states(self) -> list[Path]:
        """~/.openclaw-<name>: where `openclaw --profile <name>` (or --dev) keeps everything.

        The flag sets OPENCLAW_STATE_DIR inside that one openclaw process only (2026.9.6
        cli/profile applyCliProfileEnv, seen in a real run), so nothing exported names it.
        """
        if self.session_dir is not None or openclaw_config.user_path(
            self.config, "OPENCLAW_STATE_DIR"
        ):
            return []
        home = openclaw_config.openclaw_home(self.config)
        try:
            found = sorted(home.glob(".openclaw-*"))
        except OSError:
            return []
        return [
            d
            for d in found
            if openclaw_config.profile_name(d.name.removeprefix(".openclaw-")) and d.is_dir()
        ]

    def sessions_in(self, root: Path) -> Iterable[SessionRef]:
        """Database sessions and legacy JSONL sessions of every agent."""
        agents = root / "agents"
        agent_dirs = sorted(p for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else []
        refs: dict[str, SessionRef] = {}
        for agent, db in self._databases(root, agent_dirs):
            try:
                refs.update({r.key: r for r in self._list_db(agent, db)})
            except sqlite3.Error as exc:
                # Reported, and its sessions left unlisted: no cursor moves past them.
                # Its legacy JSONL files are listed as usual below.
                self.problems.append(unreadable(db, exc))
        for agent_dir in agent_dirs:
            for path in sorted((agent_dir / "sessions").rglob("*.jsonl")):
                key = f"{agent_dir.name}/{path.stem}"
                if _legacy_skipped(path) or key in refs:
                    continue  # trace-only, duplicate, already imported, or in the database
                aliases = (path.stem, *_bridge_alias(path.stem))
                refs[key] = self.ref_for(path, key=key, session_id=key, aliases=aliases)
        return refs.values()

    def _databases(self, root: Path, agent_dirs: list[Path]) -> list[tuple[str, Path]]:
        """(agent, database): agents/<agent>/agent/, then those only the registry names."""
        found = [(d.name, d.joinpath(*DB_RELPATH)) for d in agent_dirs]
        found = [(agent, db) for agent, db in found if db.is_file()]
        registry = root.joinpath(*REGISTRY_RELPATH)
        if not registry.is_file():
            return found
        try:
            with connect_ro(registry) as conn:
                rows = []
                if {"agent_id", "path"} <= table_columns(conn, "agent_databases"):
                    rows = conn.execute("SELECT agent_id, path FROM agent_databases").fetchall()
        except sqlite3.Error as exc:  # the databases under agents/ are still read
            self.problems.append(unreadable(registry, exc))
            return found
        seen = {_same_file(db) for _, db in found}
        for agent, stored in rows:
            if not isinstance(agent, str) or not isinstance(stored, str) or not stored:
                continue  # a damaged row names no database
            db = root / stored  # an absolute stored path replaces root
            if db.is_file() and _same_file(db) not in seen:
                seen.add(_same_file(db))
                found.append((agent, db))
        return found

    def _list_db(self, agent: str, db: Path) -> list[SessionRef]:
        with connect_ro(db) as conn:
            rows = grouped_sessions(conn, "transcript_events", ("seq", "created_at"))
            if not rows:
                return []
            keys: dict[str, Any] = {}
            if "session_key" in table_columns(conn, "session_windows"):
                keys = dict(conn.execute("SELECT session_id, session_key FROM session_windows"))
            gens = _generations(conn)
        refs = []
        for sid, max_seq, created in rows:
            aliases = [str(sid), *_bridge_alias(str(sid))]
            parts = str(keys.get(sid) or "").split(":")
            # agent:<agentId>:cron:<jobId>:run:<sessionId> — a registered job id claims its runs.
            if len(parts) >= 4 and parts[0] == "agent" and parts[2] == "cron":
                aliases.append(f"cron:{parts[3]}")
            gen = gens.get(sid, "")
            refs.append(
                SessionRef(
                    self.host,
                    key=f"{agent}/{sid}",
                    session_id=f"{agent}/{sid}",
                    path=db,
                    mtime=epoch_seconds(created),
                    signature=f"{gen}:{max_seq}",
                    aliases=tuple(aliases),
                )
            )
        return refs

    def read(self, ref: SessionRef, entry: dict[str, Any] | None) -> ReadResult:
        """Database rows after the cursor's seq (a new rewrite generation restarts it)."""
        if ref.path.suffix == ".jsonl":
            return super().read(ref, entry)
        raw_sid = ref.session_id.split("/", 1)[1]
        entry = entry or {}
        with reading(ref.path) as conn:
            gen = _generations(conn).get(raw_sid, "")
            same = str(entry.get("generation", "")) == gen or (
                entry.get("generation") in (0, None) and gen == ""
            )
            # seq starts at 0 (the session header): "nothing read yet" is -1.
            pos = int(entry.get("pos", -1)) if same else -1
            zstd = "event_zstd" in table_columns(conn, "transcript_events")
            rows = conn.execute(
                "SELECT seq, event_json, "
                + ("event_zstd" if zstd else "NULL")
                + " FROM transcript_events WHERE session_id = ? AND seq > ? ORDER BY seq",
                (raw_sid, pos),
            ).fetchall()
        records: list[Any] = []
        bad: list[str] = []
        last = pos
        for seq, text, packed in rows:
            if not isinstance(seq, int):
                continue  # a damaged row: seq is the cursor, so it cannot be a position
            event = text if text is not None else _unpack(packed)
            if event is None:
                bad.append(f"seq {seq}: event_json is NULL and event_zstd does not decode")
                break  # the cursor stays before it: the next read tries again
            records.append(event)
            last = seq
        cursor = {
            "pos": last,
            "generation": gen,
            "sig": ref.signature if not bad else f"{ref.signature}:partial",
            "session_id": ref.session_id,
            "path": str(ref.path),
        }
        return ReadResult(records=records, cursor=cursor, undecodable=bad)

    # The module-level functions are the reader's rules; tests call them directly too.
    classify = staticmethod(classify)
    to_items = staticmethod(to_items)


def _same_file(path: Path) -> Path:
    # The registry and the directory walk may spell one database differently (symlinks, ..).
    try:
        return path.resolve()
    except OSError:
        return path


def _bridge_alias(sid: str) -> list[str]:
    # Every per-run session of the scheduled run answers to the one claimed id.
    return [BRIDGE_SESSION_ID] if sid.startswith(BRIDGE_SESSION_PREFIX) else []


def _unpack(packed: Any) -> str | None:
    """An event stored compressed (events of about 1 KB and more), or None if it won't decode."""
    if not isinstance(packed, bytes):
        return None
    import zstandard  # only OpenClaw stores need it

    try:
        data = zstandard.ZstdDecompressor().decompress(packed)
    except zstandard.ZstdError:
        return None
    # Decoded as event_json's TEXT is: strict decoding called an event with one byte that is
    # not UTF-8 undecodable, and held the cursor before it forever.
    return text_of(data)


def _generations(conn: sqlite3.Connection) -> dict[Any, str]:
    # generation is TEXT holding an opaque id (a hex string in 2026.9): compared, never parsed.
    if "generation" not in table_columns(conn, "transcript_rewrite_watermarks"):
        return {}
    return {
        sid: "" if gen is None else str(gen)
        for sid, gen in conn.execute(
            "SELECT session_id, generation FROM transcript_rewrite_watermarks"
        )
    }


SOURCE = OpenClawSource
