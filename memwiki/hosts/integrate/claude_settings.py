"""The UserPromptSubmit hook entry in Claude Code's settings.json, edited as text.

Edits are surgical (jsonspan): the rest of the file keeps its bytes, key order and
formatting, and removal is the exact inverse of the insertion. Two edge cases cannot be
told apart without remembering the past and are resolved towards "memwiki created it":
a pre-existing empty "UserPromptSubmit": [] (or "hooks": {}) that install filled is
removed whole, and a settings file that was exactly `{}` plus a newline is deleted.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import InvalidInput
from . import jsonspan as js

HOOK_COMMAND = "memwiki hook claude-code"
# Seconds Claude Code waits before giving up on the hook; the hook's own budget is shorter.
HOOK_TIMEOUT_S = 10
EVENT = "UserPromptSubmit"


def hook_entry() -> dict[str, Any]:
    """The command hook memwiki registers."""
    return {"type": "command", "command": HOOK_COMMAND, "timeout": HOOK_TIMEOUT_S}


def _created_text() -> str:
    return json.dumps({"hooks": {EVENT: [{"hooks": [hook_entry()]}]}}, indent=2) + "\n"


def _parse(text: str, label: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{label}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{label}: the top level must be a JSON object")
    return data


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and hook.get("command") == HOOK_COMMAND


def has_hook(data: dict[str, Any]) -> bool:
    """True when the parsed settings already hold memwiki's hook."""
    hooks = data.get("hooks")
    groups = hooks.get(EVENT) if isinstance(hooks, dict) else None
    return any(
        _ours(h)
        for g in (groups if isinstance(groups, list) else [])
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
    )


def hook_registered(text: str | None) -> bool:
    """True when settings.json text holds memwiki's hook (False for absent or broken files)."""
    if not text:
        return False
    try:
        return has_hook(_parse(text, "settings.json"))
    except InvalidInput:
        return False


def add_hook(text: str | None, label: str = "settings.json") -> str:
    """settings.json text with memwiki's hook registered (unchanged if it already is)."""
    if text is None or not text.strip():
        return _created_text()
    data = _parse(text, label)
    if has_hook(data):
        return text
    unit = js.indent_unit(text)
    group = {"hooks": [hook_entry()]}
    top = js.root(text)
    hooks = js.member(top, "hooks")
    if hooks is None:
        return js.insert_child(text, top, js.dumps_entry({EVENT: [group]}, unit, "hooks"))
    if not isinstance(data["hooks"], dict):
        raise InvalidInput(f'{label}: "hooks" must be an object')
    hooks_c = js.scan(text, hooks.value_start)
    event = js.member(hooks_c, EVENT)
    if event is None:
        return js.insert_child(text, hooks_c, js.dumps_entry([group], unit, EVENT))
    if not isinstance(data["hooks"][EVENT], list):
        raise InvalidInput(f'{label}: "hooks.{EVENT}" must be an array')
    return js.insert_child(text, js.scan(text, event.value_start), js.dumps_entry(group, unit))


def _event_array(text: str) -> tuple[js.Container, js.Container, js.Container]:
    top = js.root(text)
    hooks_c = js.scan(text, js.member(top, "hooks").value_start)
    arr = js.scan(text, js.member(hooks_c, EVENT).value_start)
    return top, hooks_c, arr


def _remove_one(text: str) -> str:
    _, _, arr = _event_array(text)
    for index, el in enumerate(arr.children):
        group = json.loads(text[el.value_start : el.end])
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(_ours(h) for h in inner):
            continue
        if len(inner) == 1 and set(group) == {"hooks"}:
            return js.remove_child(text, arr, index)
        inner_c = js.scan(text, js.member(js.scan(text, el.value_start), "hooks").value_start)
        pos = next(i for i, h in enumerate(inner) if _ours(h))
        return js.remove_child(text, inner_c, pos)
    return text


def remove_hook(text: str, label: str = "settings.json") -> str | None:
    """settings.json text without memwiki's hook; None when the file should be deleted."""
    data = _parse(text, label)
    if not has_hook(data):
        return text
    if text == _created_text():
        return None
    while has_hook(_parse(text, label)):
        text = _remove_one(text)
    # Containers emptied by the removal held only memwiki's entry: take them away too.
    top, hooks_c, arr = _event_array(text)
    if not arr.children:
        index = next(i for i, c in enumerate(hooks_c.children) if c.key == EVENT)
        text = js.remove_child(text, hooks_c, index)
        top = js.root(text)
        hooks_c = js.scan(text, js.member(top, "hooks").value_start)
        if not hooks_c.children:
            index = next(i for i, c in enumerate(top.children) if c.key == "hooks")
            text = js.remove_child(text, top, index)
    return text
