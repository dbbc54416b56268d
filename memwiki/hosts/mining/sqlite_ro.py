"""Read-only SQLite access to a host's live database: never take its write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import quote

from ...errors import StorageError

# Short, so that a reader facing a rollback-journal writer's commit gives up quickly.
BUSY_TIMEOUT_S = 2.0


def ro_uri(path: Path) -> str:
    """A percent-encoded read-only URI; a raw path with % or # would silently lose mode=ro."""
    return f"file:{quote(str(Path(path).resolve()), safe='/')}?mode=ro"


def text_of(raw: bytes) -> str:
    """Stored text as str, each byte that is not UTF-8 read as U+FFFD."""
    # A damaged page or a host bug can leave bytes that are not UTF-8 in a TEXT column (or a
    # compressed event): read them with replacement characters rather than fail on the whole
    # database, or hold a cursor before that row forever.
    return raw.decode("utf-8", "replace")


@contextmanager
def connect_ro(path: Path) -> Iterator[sqlite3.Connection]:
    """A short-lived read-only connection (closed on exit so no read lock lingers)."""
    conn = sqlite3.connect(ro_uri(path), uri=True, timeout=BUSY_TIMEOUT_S)
    conn.text_factory = text_of
    with closing(conn):
        conn.execute("PRAGMA query_only = ON")
        yield conn


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """connect_ro for reading a stream: a database that fails mid-read is one StorageError."""
    try:
        with connect_ro(path) as conn:
            yield conn
    except sqlite3.Error as exc:
        raise StorageError(f"{path}: cannot read the database: {exc}") from None


def unreadable(path: Path, exc: sqlite3.Error) -> str:
    """One line saying why a store could not be read, and that nothing in it was passed."""
    reason = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in reason or "busy" in reason):
        reason += f" (another process held it for over {BUSY_TIMEOUT_S:g} s; try again later)"
    return f"{path}: cannot read the database: {reason}; its sessions are not read now"


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of a table (empty when the table does not exist)."""
    try:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    except UnicodeDecodeError:  # a damaged schema: report it as the damaged database it is
        raise sqlite3.DatabaseError("database schema is not valid UTF-8") from None


def grouped_sessions(conn: sqlite3.Connection, table: str, columns: tuple[str, ...]) -> list:
    """(session_id, MAX(column) for each column) per session of table; [] without session_id."""
    if "session_id" not in table_columns(conn, table):
        return []
    maxima = ", ".join(f"MAX({c})" for c in columns)
    return conn.execute(f"SELECT session_id, {maxima} FROM {table} GROUP BY session_id").fetchall()


def epoch_seconds(value: object) -> float:
    """An epoch timestamp in seconds; numbers above 1e11 are milliseconds (hosts.md §7)."""
    if isinstance(value, int | float):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    return 0.0
