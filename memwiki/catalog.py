"""Listing a wiki's RecallFiles page by page: entries, pages and the opaque keyset cursor."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InvalidInput
from .recallfile import Problem

if TYPE_CHECKING:
    from .index.listing import ListingCache


@dataclass(frozen=True)
class Entry:
    """A RecallFile as listed: enough to show it without reading its body."""

    track: str
    name: str
    description: str
    tags: list[str]
    updated: str | None
    path: str

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "track": self.track,
            "name": self.name,
            "path": self.path,
            "description": self.description,
            "tags": self.tags,
            "updated": self.updated,
        }


@dataclass
class Page:
    """One page of list_recall_files, plus the files that could not be read."""

    items: list[Entry]
    next_cursor: str | None
    skipped: list[Problem] = field(default_factory=list)


def _encode_cursor(track: str, name: str, rel: str) -> str:
    raw = json.dumps([track, name, rel]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        track, name, *rel = json.loads(raw)
        if len(rel) > 1 or not all(isinstance(v, str) for v in (track, name, *rel)):
            raise ValueError(cursor)  # a hand-made cursor of other values: not ours
        # A two-part cursor (older memwiki) sorts before every path of its (track, name).
        return str(track), str(name), str(rel[0]) if rel else ""
    except (ValueError, TypeError):
        raise InvalidInput(
            f"invalid cursor {cursor!r}: pass a next_cursor from a previous page"
        ) from None


def list_page(
    root: Path,
    paths: Iterable[tuple[str, Path]],
    listing: ListingCache,
    cursor: str | None,
    limit: int,
) -> Page:
    """One page of the (track, path) pairs given, ordered by (track, name, path)."""
    if not isinstance(limit, int) or isinstance(limit, bool):  # was a TypeError
        raise InvalidInput(f"limit must be an integer, not {type(limit).__name__}")
    if limit < 1:
        raise InvalidInput("limit must be at least 1")
    after = _decode_cursor(cursor) if cursor else None
    items: list[Entry] = []
    skipped: list[Problem] = []
    # The relative path completes the key: two files with one stem in nested folders
    # of a track (a lint error, but it happens) must not hide each other across pages.
    prefix = f"{root}{os.sep}"  # paths are root/...: cheaper than Path.relative_to per file
    keyed = sorted(((t, p.stem, str(p).removeprefix(prefix)), p) for t, p in paths)
    next_cursor = None
    last: tuple[str, str, str] | None = None
    listing.pin()  # one manifest check for the page, not one per file
    try:
        for key, path in keyed:
            if after is not None and key <= after:
                continue
            if len(items) == limit and last is not None:
                next_cursor = _encode_cursor(*last)
                break
            rel = key[2]
            # From the index manifest when it still describes the file, else parsed.
            fields, problems = listing.describe(key[0], rel, path)
            if fields is None:
                skipped.extend(problems)
                continue
            items.append(Entry(key[0], *fields, path=rel))
            last = key
    finally:
        listing.unpin()
    return Page(items, next_cursor, skipped)
