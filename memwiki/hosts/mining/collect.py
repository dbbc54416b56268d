"""Slicing what is new in a host's sessions into canonical schema-1.0 sessions."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import StorageError
from .base import (
    HOSTS,
    SCHEMA_VERSION,
    SessionRef,
    SessionSlice,
    TranscriptSource,
    get_source,
    host_api,
    path_text,
)
from .records import Verdict, parse_record
from .workdirs import slice_cwd

# What reading a host's store may raise: reported per stream, never an internal error.
READ_ERRORS = (StorageError, OSError, ValueError, UnicodeDecodeError, KeyError, TypeError)


def read_errors() -> tuple[type[Exception], ...]:
    """READ_ERRORS and, once a database reader has imported sqlite3, sqlite3.Error.

    Evaluated in the except clause, when something was raised: only the host being read is
    imported, so a JSONL host's `bridge prepare` imports neither sqlite3 nor the other hosts
    (~15 ms of a cold run that finds nothing new).
    """
    sqlite3 = sys.modules.get("sqlite3")
    return READ_ERRORS if sqlite3 is None else (*READ_ERRORS, sqlite3.Error)


def self_session_vars() -> dict[str, str]:
    """Host -> the variable naming the session a scheduled run is in (hosts.md §9)."""
    return {h: var for h in HOSTS if (var := host_api(h).SELF_SESSION_VAR) is not None}


def read_slice(
    source: TranscriptSource, ref: SessionRef, entry: dict[str, Any] | None
) -> SessionSlice:
    """Read one stream after its cursor entry and convert the kept records."""
    result = source.read(ref, entry)
    # Every record read is counted as message, tool or drop; undecodable ones were not read
    # past (the cursor stops before them) and are counted apart.
    counts = {"message": 0, "tool": 0, "drop": result.extra_drops, "unrecognized": 0}
    if result.undecodable:
        counts["undecodable"] = len(result.undecodable)
    items: list[dict[str, Any]] = []
    ctx: dict[str, Any] = {}
    parsed = []  # each record parsed once: the working directory is looked up in them too
    not_json_line = None
    for number, raw in enumerate(result.records):
        record = parse_record(raw)
        if record is not None:
            parsed.append(record)
        else:
            # A complete line that is not a JSON object (a log cut short by a crash, a disk
            # error) never becomes one: it is passed over for good, so it is reported.
            counts["not_json"] = counts.get("not_json", 0) + 1
            if not_json_line is None and result.lines:
                not_json_line = result.lines[number]
        if record is None or not source.recognizes(record):
            counts["drop"] += 1
            counts["unrecognized"] += 1
            continue
        verdict = source.classify(record)
        counts[verdict.value] += 1
        if verdict is not Verdict.DROP:
            items.extend(source.to_items(record, verdict, ctx))
    has_message = any(it["type"] == "message" for it in items)
    session = {"schema_version": SCHEMA_VERSION, "items": items} if has_message else None
    return SessionSlice(
        host=source.host,
        session_id=ref.session_id,
        key=ref.key,
        source_path=path_text(str(ref.path)),
        cursor=result.cursor,
        counts=counts,
        session=session,
        cwd=slice_cwd(parsed, ref.path) if session is not None else None,
        problems=list(result.undecodable),
        not_json_line=not_json_line,
    )


def _skipped(ref: SessionRef, skip: set[str]) -> bool:
    return ref.session_id in skip or ref.key in skip or any(a in skip for a in ref.aliases)


def _with_children(refs: list[SessionRef], skip: set[str]) -> set[str]:
    # A Hermes compression split starts a child session of a claimed one: claim it too.
    skip = set(skip)
    grew = True
    while grew:
        grew = False
        for ref in refs:
            if ref.parent_id in skip and ref.session_id not in skip:
                skip.add(ref.session_id)
                grew = True
    return skip


def collect_new_sessions(
    host: str,
    config: Config,
    cursor_state: dict[str, Any],
    session_dir: Path | None = None,
    max_sessions: int = 10,
    skip_session_ids: Iterable[str] = (),
    warnings: list[str] | None = None,
) -> list[SessionSlice]:
    """New content since the cursor, newest first, at most max_sessions memorizable slices.

    Streams that advanced without any new message come back too, with session=None, so
    the caller can record their cursor; only slices with .memorizable go to memorize.
    Self sessions (skip_session_ids and the state's claimed list) are passed over,
    never ending the scan. A store or stream that cannot be read is reported in warnings
    and passed over with its cursor unchanged: one broken session never stops the others.
    """
    warnings = warnings if warnings is not None else []
    source = get_source(host, config, session_dir)
    streams = cursor_state.get("streams", {})
    source.remember(streams)
    try:
        refs = source.list_sessions()
    except read_errors() as exc:
        warnings.append(f"warning: cannot list {host} sessions: {type(exc).__name__}: {exc}")
        return []
    warnings.extend(f"warning: {host}: {problem}" for problem in source.problems)
    skip = _with_children(refs, set(skip_session_ids) | set(cursor_state.get("claimed", [])))
    out: list[SessionSlice] = []
    taken = 0
    for ref in refs:
        if taken >= max_sessions:
            break
        if _skipped(ref, skip):
            continue
        entry = streams.get(ref.key)
        if source.unchanged(ref, entry):
            continue
        try:
            sl = read_slice(source, ref, entry)
        except read_errors() as exc:
            warnings.append(
                f"warning: cannot read {host} session {ref.session_id}: {type(exc).__name__}: {exc}"
            )
            continue
        if sl.problems:
            warnings.append(
                f"warning: {host} session {ref.session_id}: {len(sl.problems)} record(s) "
                f"could not be decoded ({sl.problems[0]}); the cursor stops before them"
            )
        if entry is not None and sl.cursor == entry:
            continue
        out.append(sl)
        taken += sl.memorizable
    bad = [sl for sl in out if sl.counts.get("not_json")]
    if bad:
        lines = sum(sl.counts["not_json"] for sl in bad)
        line = bad[0].not_json_line
        warnings.append(
            f"warning: {host}: skipped {lines} line(s) that are not JSON objects in {len(bad)} "
            f"session(s) (first: {bad[0].source_path}{f', line {line}' if line else ''})"
        )
    return out


def self_session_ids(config: Config, host: str | None = None) -> set[str]:
    """The current host session ids when this is the scheduled bridging run; else empty."""
    if not config.bridging_run:
        return set()
    hosts = [host] if host else [*self_session_vars(), "openclaw"]
    ids = {(config.host_env.get(host_api(h).SELF_SESSION_VAR or "") or "").strip() for h in hosts}
    if "openclaw" in hosts:
        from .openclaw import BRIDGE_SESSION_ID

        # The wrapper starts OpenClaw with this explicit session id: the invocation names it.
        ids.add(BRIDGE_SESSION_ID)
    return {i for i in ids if i}


def self_session_warning(config: Config, host: str) -> str | None:
    """A one-line warning when a scheduled run cannot tell which session is its own."""
    if not config.bridging_run:
        return None
    var = host_api(host).SELF_SESSION_VAR
    if var is None or config.host_env.get(var, "").strip():
        return None
    return (
        f"warning: scheduled {host} run but {var} is empty: "
        "this run's own session cannot be skipped and may be mined next time"
    )
