"""Strict validation of canonical session payloads (schema 1.0).

A payload is ``{"schema_version": "1.0", "items": [...]}``. Every rule here fails
with a one-line :class:`InvalidInput` naming the file, the item index and the field;
nothing is ever ignored, because a silently dropped field is a silently lost memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InvalidInput

SCHEMA_VERSION = "1.0"
MAX_PAYLOADS = 10
STDIN = "-"

_TOP_KEYS = {"schema_version", "items"}
_ITEM_KEYS = {
    "message": {"type", "role", "content"},
    "tool_call": {"type", "name", "arguments"},
    "tool_result": {"type", "content", "name", "is_error"},
}
_ROLES = ("user", "assistant")


@dataclass
class Session:
    """One validated session: where it came from and its items, in order."""

    label: str  # the file path as given, or "<stdin>"
    source_id: str  # stable id used in trailers and `sources:` frontmatter
    sha256: str  # of the payload bytes as read
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The message items only."""
        return [it for it in self.items if it["type"] == "message"]


def _fail(label: str, where: str, why: str) -> InvalidInput:
    return InvalidInput(f"{label}: {where}: {why}" if where else f"{label}: {why}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # json.loads would keep the last one; a duplicate key is ambiguous input.
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def decode_payload(data: bytes, label: str) -> Any:
    """Decode UTF-8 JSON bytes strictly (no NaN, no duplicate keys)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(label, "", f"not valid UTF-8 at byte {exc.start}") from None
    text = text.removeprefix("\ufeff")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _fail(
            label, "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise _fail(label, "", f"invalid JSON: {exc}") from None


def _check_keys(obj: dict[str, Any], allowed: set[str], label: str, where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        path = f"{where}.{unknown[0]}" if where else unknown[0]
        raise _fail(label, path, f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _non_empty_string(item: dict[str, Any], key: str, label: str, where: str) -> str:
    if key not in item:
        raise _fail(label, f"{where}.{key}", "required field is missing")
    value = item[key]
    if not isinstance(value, str):
        raise _fail(label, f"{where}.{key}", f"must be a string, got {_type_name(value)}")
    if not value.strip():
        raise _fail(label, f"{where}.{key}", "must not be empty")
    return value


def _validate_item(raw: Any, index: int, label: str) -> dict[str, Any]:
    where = f"items[{index}]"
    if not isinstance(raw, dict):
        raise _fail(label, where, f"must be an object, got {_type_name(raw)}")
    kind = raw.get("type")
    if "type" not in raw:
        raise _fail(label, f"{where}.type", "required field is missing")
    if kind not in _ITEM_KEYS:
        raise _fail(label, f"{where}.type", f"must be one of {', '.join(_ITEM_KEYS)}, got {kind!r}")
    _check_keys(raw, _ITEM_KEYS[kind], label, where)
    if kind == "message":
        role = raw.get("role")
        if "role" not in raw:
            raise _fail(label, f"{where}.role", "required field is missing")
        if role not in _ROLES:
            raise _fail(label, f"{where}.role", f'must be "user" or "assistant", got {role!r}')
        content = _non_empty_string(raw, "content", label, where)
        return {"type": kind, "role": role, "content": content}
    if kind == "tool_call":
        name = _non_empty_string(raw, "name", label, where)
        return {"type": kind, "name": name, "arguments": raw.get("arguments", {})}
    if "content" not in raw:
        raise _fail(label, f"{where}.content", "required field is missing")
    item: dict[str, Any] = {"type": kind, "content": raw["content"]}
    if "name" in raw:
        if not isinstance(raw["name"], str):
            raise _fail(label, f"{where}.name", f"must be a string, got {_type_name(raw['name'])}")
        item["name"] = raw["name"]
    if "is_error" in raw:
        if not isinstance(raw["is_error"], bool):
            raise _fail(
                label, f"{where}.is_error", f"must be a boolean, got {_type_name(raw['is_error'])}"
            )
        item["is_error"] = raw["is_error"]
    return item


def _check_text(value: Any, label: str, where: str) -> None:
    # JSON can escape a lone surrogate ("\udce9", how Python writes a non-UTF-8 file name);
    # it is not text, and every file of a run is UTF-8: refuse it here, by its place.
    # Iterative: tool arguments may nest as deep as the JSON decoder allowed.
    stack = [(value, where)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = f"\\u{ord(value[exc.start]):04x}"
                raise _fail(
                    label, where, f"not valid Unicode text (lone surrogate {bad})"
                ) from None
        elif isinstance(value, dict):
            for key, v in value.items():
                stack.append((key, where))
                stack.append((v, f"{where}.{key}"))
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{n}]") for n, v in enumerate(value))


def validate_payload(doc: Any, label: str) -> list[dict[str, Any]]:
    """Validate one decoded payload and return its normalised items."""
    if not isinstance(doc, dict):
        raise _fail(label, "", f"payload must be a JSON object, got {_type_name(doc)}")
    _check_keys(doc, _TOP_KEYS, label, "")
    if "schema_version" in doc and doc["schema_version"] != SCHEMA_VERSION:
        raise _fail(
            label,
            "schema_version",
            f'only "{SCHEMA_VERSION}" is supported, got {doc["schema_version"]!r}',
        )
    if "items" not in doc:
        raise _fail(label, "items", "required field is missing")
    raw_items = doc["items"]
    if not isinstance(raw_items, list):
        raise _fail(label, "items", f"must be an array, got {_type_name(raw_items)}")
    if not raw_items:
        raise _fail(label, "items", "must not be empty")
    items = [_validate_item(raw, i, label) for i, raw in enumerate(raw_items)]
    for i, item in enumerate(items):
        _check_text(item, label, f"items[{i}]")
    if not any(it["type"] == "message" for it in items):
        raise _fail(label, "items", "at least one message item is required")
    return items


def parse_session(data: bytes, label: str) -> Session:
    """Decode and validate one payload's bytes into a Session."""
    items = validate_payload(decode_payload(data, label), label)
    digest = hashlib.sha256(data).hexdigest()
    return Session(label=label, source_id=f"payload:{digest[:12]}", sha256=digest, items=items)


def load_sessions(inputs: Sequence[str | Path], stdin: BinaryIO | None = None) -> list[Session]:
    """Read and validate every payload (files, or '-' for stdin) before anything is created."""
    names = [str(p) for p in inputs]
    if not names:
        raise InvalidInput("memorize prepare needs 1 to 10 payload files, got none")
    if STDIN in names and len(names) > 1:
        raise InvalidInput("'-' (a payload on stdin) cannot be combined with payload files")
    if len(names) > MAX_PAYLOADS:
        raise InvalidInput(
            f"memorize prepare takes 1 to {MAX_PAYLOADS} payload files, got {len(names)}"
        )
    sessions: list[Session] = []
    for name in names:
        if name == STDIN:
            if stdin is None:
                raise InvalidInput("'-' given but no stdin stream is available")
            data, label = stdin.read(), "<stdin>"
        else:
            path = Path(name)
            if not path.is_file():
                raise InvalidInput(f"{name}: no such payload file")
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise InvalidInput(f"{name}: cannot read payload: {exc.strerror}") from None
            label = name
        sessions.append(parse_session(data, label))
    return sessions
