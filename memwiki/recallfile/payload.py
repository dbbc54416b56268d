"""RecallFiles from agents' JSON payloads (`commit_results`), validated field by field."""

from __future__ import annotations

from ..errors import InvalidInput
from ..timestamps import ISO_Z
from .model import RecallFile, check_slug, is_one_line

PAYLOAD_KEYS = {"name", "track", "description", "content", "tags", "sources", "created", "updated"}


def from_payload(item, where: str = "recall file") -> RecallFile:
    """A RecallFile from a commit_results payload entry, validated field by field."""
    if not isinstance(item, dict):
        raise InvalidInput(f"{where}: must be an object")
    unknown = sorted(set(item) - PAYLOAD_KEYS)
    if unknown:
        raise InvalidInput(f"{where}: unknown field {unknown[0]!r}")
    for key in ("track", "name", "description"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise InvalidInput(f"{where}.{key}: missing or not a string")
    try:
        check_slug(item["track"], "track")
        check_slug(item["name"])
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.message}") from None
    content = item.get("content", "")
    if not isinstance(content, str):
        raise InvalidInput(f"{where}.content: must be a string")
    for key in ("tags", "sources"):
        value = item.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(f"{where}.{key}: must be a list of strings")
    if not is_one_line(item["description"]):
        raise InvalidInput(f"{where}.description: must be one line")
    created = item.get("created")
    if created is not None and not (isinstance(created, str) and ISO_Z.match(created)):
        # "yesterday", or a value with a line break that added frontmatter keys, was taken
        raise InvalidInput(f"{where}.created: must be a timestamp like 2026-11-02T10:14:00Z")
    return RecallFile(
        track=item["track"],
        name=item["name"],
        description=item["description"].strip(),
        body=content if content.endswith("\n") or not content else content + "\n",
        tags=list(item.get("tags", [])),
        sources=list(item.get("sources", [])),
        created=item.get("created"),
    )
