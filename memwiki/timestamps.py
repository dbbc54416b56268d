"""The one timestamp format memwiki writes: UTC to the second, as 2026-11-02T10:14:00Z."""

from __future__ import annotations

import datetime as dt
import re

FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# A compact form for names (run ids, file names): 20261102-101400.
COMPACT = "%Y%m%d-%H%M%S"
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def now_iso() -> str:
    """The current UTC time as 2026-11-02T10:14:00Z."""
    return format_iso(dt.datetime.now(dt.UTC))


def now_compact() -> str:
    """The current UTC time as 20261102-101400, for names."""
    return dt.datetime.now(dt.UTC).strftime(COMPACT)


def format_iso(value: dt.datetime) -> str:
    """A datetime as 2026-11-02T10:14:00Z (an aware one converted to UTC first)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    return value.strftime(FORMAT)


def instant(value: str) -> dt.datetime | None:
    """An ISO 8601 stamp (a date, a time with or without an offset) as an aware UTC
    datetime, or None; one without an offset is read as UTC."""
    text = value.strip().strip("'\"")
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


def from_epoch(seconds: float) -> str:
    """A POSIX time as 2026-11-02T10:14:00Z."""
    return format_iso(dt.datetime.fromtimestamp(seconds, dt.UTC))
