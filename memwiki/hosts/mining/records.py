"""Record helpers shared by the host readers: parsing, block rules, canonical items."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from ...recallfile import mend_surrogates

TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
TOOL_CALL_BLOCKS = frozenset({"tool_use", "toolCall", "tool_call"})
TOOL_RESULT_BLOCKS = frozenset({"tool_result"})
TOOL_BLOCKS = TOOL_CALL_BLOCKS | TOOL_RESULT_BLOCKS
ROLES = ("user", "assistant")


class Verdict(StrEnum):
    """Where a record goes: conversation, tool activity, or nowhere (hosts.md §0)."""

    MESSAGE = "message"
    TOOL = "tool"
    DROP = "drop"


def _reject_constant(name: str) -> Any:
    # NaN/Infinity would make the session payload invalid JSON downstream.
    raise ValueError(name)


def parse_record(raw: str | bytes | dict[str, Any]) -> dict[str, Any] | None:
    """One raw record as a JSON object, or None when it is not one (never raises)."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        # One byte that is not UTF-8 (a terminal paste, a binary tool output) would cost the
        # whole turn: read each such byte as U+FFFD and keep the rest of the line. A line
        # that is not JSON even so is still skipped.
        if not isinstance(raw, bytes):
            return None
        return parse_record(raw.decode("utf-8-sig", "replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    # JSON may escape a lone surrogate, and real clients write them: JavaScript's
    # JSON.stringify of a string cut in the middle of an emoji gives "\ud83d". Such a
    # string is not text (it cannot be written as UTF-8), and memorize rightly refuses it,
    # which would fail every prepare on the same line: mend it to U+FFFD here, once.
    marker = b"\\u" if isinstance(raw, bytes) else "\\u"
    return _mend_surrogates(value) if marker in raw else value  # type: ignore[operator]


def _mend_surrogates(value: dict[str, Any]) -> dict[str, Any]:
    """value with every string (keys too) free of lone surrogates; iterative, any depth."""
    root: list[Any] = [value]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str):
                    node[i] = mend_surrogates(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
        else:
            for key in list(node):
                v = node[key]
                if isinstance(v, str):
                    v = mend_surrogates(v)
                elif isinstance(v, dict | list):
                    stack.append(v)
                fixed = mend_surrogates(key)
                if fixed != key:
                    del node[key]
                node[fixed] = v
    return root[0]


def parse_json_text(value: Any) -> Any:
    """A JSON-encoded string decoded, or the value unchanged when it is not valid JSON."""
    if isinstance(value, str):
        try:
            return json.loads(value, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return value
    return value


def block_types(content: Any) -> set[str]:
    """The block types in a content list (empty for anything that is not a list)."""
    if not isinstance(content, list):
        return set()
    return {b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)}


def classify_blocks(content: Any, is_meta: bool = False) -> Verdict:
    """The Claude block rule (hosts.md §1 steps 2-5): prose wins, then tools, else drop."""
    if isinstance(content, str):
        return Verdict.DROP if is_meta else Verdict.MESSAGE
    kinds = block_types(content)
    if kinds & TEXT_BLOCKS:
        return Verdict.DROP if is_meta else Verdict.MESSAGE
    if kinds & TOOL_BLOCKS:
        return Verdict.TOOL
    return Verdict.DROP


def message(role: str, text: str) -> list[dict[str, Any]]:
    """A canonical message item, or nothing when the text is blank."""
    if role not in ROLES or not isinstance(text, str) or not text.strip():
        return []
    return [{"type": "message", "role": role, "content": text}]


def tool_call(name: Any, arguments: Any, call_id: Any, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """A canonical tool_call item; remembers the id so the result can carry the name."""
    name = name if isinstance(name, str) and name.strip() else "unknown"
    if isinstance(call_id, str) and call_id:
        ctx.setdefault("tools", {})[call_id] = name
    return [{"type": "tool_call", "name": name, "arguments": json_safe(arguments)}]


def tool_result(
    content: Any,
    call_id: Any,
    ctx: dict[str, Any],
    name: Any = None,
    is_error: Any = None,
) -> list[dict[str, Any]]:
    """A canonical tool_result item with the tool's name when it is known."""
    item: dict[str, Any] = {"type": "tool_result", "content": result_content(content)}
    if not isinstance(name, str) or not name:
        name = ctx.get("tools", {}).get(call_id) if isinstance(call_id, str) else None
    if isinstance(name, str) and name:
        item["name"] = name
    if isinstance(is_error, bool):
        item["is_error"] = is_error
    return [item]


def result_content(content: Any) -> Any:
    """Tool output as plain text when it is a block list; other JSON is kept as is."""
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and isinstance(block.get("type"), str):
                parts.append(f"[{block['type']}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return json_safe(content)


def json_safe(value: Any) -> Any:
    """Value if it is plain JSON data; otherwise its string form."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return str(value)


def block_items(role: str, content: Any, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items for a string or a list of Claude/pi-style blocks, in block order."""
    if isinstance(content, str):
        return message(role, content)
    if not isinstance(content, list):
        return []
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            items.extend(message(role, "\n\n".join(texts)))
            texts.clear()

    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in TEXT_BLOCKS and isinstance(block.get("text"), str):
            texts.append(block["text"])
            continue
        if kind in TOOL_CALL_BLOCKS:
            flush()
            args = block.get("input", block.get("arguments", {}))
            items.extend(tool_call(block.get("name"), parse_json_text(args), block.get("id"), ctx))
        elif kind in TOOL_RESULT_BLOCKS:
            flush()
            call_id = block.get("tool_use_id", block.get("id"))
            items.extend(
                tool_result(block.get("content", ""), call_id, ctx, is_error=block.get("is_error"))
            )
        # thinking, redacted_thinking, image and unknown blocks are left out on purpose:
        # reasoning is not what the user or the assistant said.
    flush()
    return items
