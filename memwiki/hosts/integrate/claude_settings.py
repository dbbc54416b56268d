"""The UserPromptSubmit hook entry in Claude Code's settings.json, edited as text.

Edits are surgical (jsonspan): the rest of the file keeps its bytes, key order and
formatting, and removal is the exact inverse of the insertion. Two edge cases cannot be
told apart from the text alone and are resolved here towards "memwiki created it": a
pre-existing empty "UserPromptSubmit": [] (or "hooks": {}) that install filled is removed
whole, and a settings file that was exactly `{}` plus a newline is deleted. inject keeps
the bytes from before install and restores them instead while the file is unchanged.
"""

from __future__ import annotations

import json
import shlex
from pathlib import PurePath
from typing import Any

from ...errors import InvalidInput
from . import jsonspan as js

HOOK_COMMAND = "memwiki hook claude-code"
HOOK_ARGS = ("hook", "claude-code")
# Seconds Claude Code waits before giving up on the hook; the hook's own budget is shorter.
HOOK_TIMEOUT_S = 10
EVENT = "UserPromptSubmit"
BOM = "\ufeff"


def hook_command(memwiki: str = "memwiki") -> str:
    """The hook's command line for a memwiki executable (an absolute path from install)."""
    return f"{memwiki} {' '.join(HOOK_ARGS)}"


def hook_entry(command: str = HOOK_COMMAND) -> dict[str, Any]:
    """The command hook memwiki registers."""
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}


def _created_text(command: str = HOOK_COMMAND) -> str:
    return json.dumps({"hooks": {EVENT: [{"hooks": [hook_entry(command)]}]}}, indent=2) + "\n"


def is_hook_command(command: Any) -> bool:
    """True for memwiki's hook command, whatever path to memwiki it names."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (
        len(words) == 3 and PurePath(words[0]).name == "memwiki" and tuple(words[1:]) == HOOK_ARGS
    )


def _parse(text: str, label: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:  # the ValueError json.loads raises
        raise InvalidInput(f"{label}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{label}: the top level must be a JSON object")
    _refuse_duplicates(text, label)
    return data


def _refuse_duplicates(text: str, label: str) -> None:
    # json.loads keeps the last of two equal keys while Claude Code or an edit could act on
    # the first: memwiki would then change one member and read another (and lose the user's
    # entries on uninstall). Refused, like malformed JSON, where memwiki reads and edits.
    def once(container: js.Container, key: str, where: str) -> js.Child | None:
        found = [c for c in container.children if c.key == key]
        if len(found) > 1:
            raise InvalidInput(
                f'{label}: "{where}" appears {len(found)} times; keep one, then run memwiki again'
            )
        return found[0] if found else None

    hooks = once(js.root(text), "hooks", "hooks")
    if hooks is None or text[hooks.value_start] != "{":
        return
    event = once(js.scan(text, hooks.value_start), EVENT, f"hooks.{EVENT}")
    if event is None or text[event.value_start] != "[":
        return
    for group in js.scan(text, event.value_start).children:
        if text[group.value_start] == "{":
            once(js.scan(text, group.value_start), "hooks", f"hooks.{EVENT}[].hooks")


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and is_hook_command(hook.get("command"))


def hook_commands(data: dict[str, Any]) -> list[str]:
    """The command lines of memwiki's hook entries in parsed settings."""
    hooks = data.get("hooks")
    groups = hooks.get(EVENT) if isinstance(hooks, dict) else None
    return [
        h["command"]
        for g in (groups if isinstance(groups, list) else [])
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
        if _ours(h)
    ]


def has_hook(data: dict[str, Any]) -> bool:
    """True when the parsed settings already hold memwiki's hook."""
    return bool(hook_commands(data))


def hook_registered(text: str | None) -> bool:
    """True when settings.json text holds memwiki's hook (False for absent or broken files)."""
    if not text:
        return False
    try:
        return has_hook(_parse(_split_bom(text)[1], "settings.json"))
    except InvalidInput:
        return False


def _refresh(text: str, data: dict[str, Any], command: str) -> str:
    # Swap only the command string, so that the rest keeps its bytes and uninstall stays exact.
    for old in hook_commands(data):
        if old != command and json.dumps(old) in text:
            text = text.replace(json.dumps(old), json.dumps(command), 1)
    return text


def _split_bom(text: str) -> tuple[str, str]:
    # Claude Code reads a settings.json that starts with a UTF-8 BOM (2.1.197, checked with
    # the real client), as editors on Windows write it: edit what follows, keep the BOM.
    return (BOM, text[len(BOM) :]) if text.startswith(BOM) else ("", text)


def add_hook(text: str | None, label: str = "settings.json", command: str = HOOK_COMMAND) -> str:
    """settings.json text with memwiki's hook registered; an older path is refreshed in place."""
    bom, body = _split_bom(text or "")
    return bom + _add_hook(None if text is None else body, label, command)


def _add_hook(text: str | None, label: str, command: str) -> str:
    if text is None or not text.strip():
        return _created_text(command)
    data = _parse(text, label)
    if has_hook(data):
        return _refresh(text, data, command)
    unit = js.indent_unit(text)
    group = {"hooks": [hook_entry(command)]}
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
    hooks_c = js.scan(text, js.member(top, "hooks").value_start)  # type: ignore[union-attr]
    arr = js.scan(text, js.member(hooks_c, EVENT).value_start)  # type: ignore[union-attr]
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
        inner_c = js.scan(text, js.member(js.scan(text, el.value_start), "hooks").value_start)  # type: ignore[union-attr]
        pos = next(i for i, h in enumerate(inner) if _ours(h))
        return js.remove_child(text, inner_c, pos)
    return text


def remove_hook(text: str, label: str = "settings.json") -> str | None:
    """settings.json text without memwiki's hook; None when the file should be deleted."""
    bom, body = _split_bom(text)
    after = _remove_hook(body, label)
    # Install never writes a BOM: a file holding one was the user's, so it is kept.
    return bom + (after or "") if bom else after


def _remove_hook(text: str, label: str) -> str | None:
    data = _parse(text, label)
    if not has_hook(data):
        return text
    if any(text == _created_text(c) for c in hook_commands(data)):
        return None
    while has_hook(_parse(text, label)):
        text = _remove_one(text)
    # Containers emptied by the removal held only memwiki's entry: take them away too.
    top, hooks_c, arr = _event_array(text)
    if not arr.children:
        index = next(i for i, c in enumerate(hooks_c.children) if c.key == EVENT)
        text = js.remove_child(text, hooks_c, index)
        top = js.root(text)
        hooks_c = js.scan(text, js.member(top, "hooks").value_start)  # type: ignore[union-attr]
        if not hooks_c.children:
            index = next(i for i, c in enumerate(top.children) if c.key == "hooks")
            text = js.remove_child(text, top, index)
    return text
