"""Claude Code: ~/.claude/projects/<slug>/<sessionId>.jsonl plus nested subagent streams."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from .base import JsonlSource, SessionRef, env_path, walk_jsonl
from .records import ROLES, Verdict, block_items, classify_blocks

HOST = "claude-code"
SELF_SESSION_VAR = "CLAUDE_CODE_SESSION_ID"
HOME_VARS = ("CLAUDE_CONFIG_DIR",)


def config_dir(config: Config) -> Path:
    """~/.claude, or CLAUDE_CONFIG_DIR which moves the whole tree."""
    return env_path(config, "CLAUDE_CONFIG_DIR") or config.home / ".claude"


def instruction_file(config: Config) -> Path | None:
    """The user-level CLAUDE.md."""
    return config_dir(config) / "CLAUDE.md"


def settings_file(config: Config) -> Path:
    """The user-level settings.json that holds hooks."""
    return config_dir(config) / "settings.json"


def host_present(config: Config) -> bool:
    """True when Claude Code's config directory exists."""
    return config_dir(config).is_dir()


def is_subagent(record: dict[str, Any]) -> bool:
    """True for a subagent's record: its "user" is the parent agent, not the person."""
    return record.get("isSidechain") is True or isinstance(record.get("agentId"), str)


def classify(record: dict[str, Any]) -> Verdict:
    """hosts.md §1: the block types decide, never the role (tool output is logged as user).

    A subagent's conversation is the parent agent's tool call (its prompt is the parent's
    words), so it is tool activity: kept in the full transcript, never mined as the user's.
    """
    msg = record.get("message")
    if record.get("type") not in ROLES or not isinstance(msg, dict):
        return Verdict.DROP  # attachment, queue-operation, last-prompt, mode, summary, ...
    verdict = classify_blocks(msg.get("content"), is_meta=bool(record.get("isMeta")))
    if verdict is Verdict.MESSAGE and is_subagent(record):
        return Verdict.TOOL
    return verdict


def to_items(record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items: prose as messages, tool blocks as calls/results, thinking left out."""
    msg = record["message"]
    role = str(msg.get("role") if msg.get("role") in ROLES else record.get("type"))
    items = block_items(role, msg.get("content"), ctx)
    if is_subagent(record):
        items = [_subagent_item(it) for it in items]
    return items


def _subagent_item(item: dict[str, Any]) -> dict[str, Any]:
    # The parent's prompt becomes a call of the subagent, its prose the subagent's output.
    if item["type"] != "message":
        return item
    if item["role"] == "user":
        return {"type": "tool_call", "name": "subagent", "arguments": {"prompt": item["content"]}}
    return {"type": "tool_result", "name": "subagent", "content": item["content"]}


class ClaudeCodeSource(JsonlSource):
    """Reader for Claude Code project transcripts."""

    host = HOST

    def default_location(self) -> Path | None:
        """<claude config dir>/projects."""
        return config_dir(self.config) / "projects"

    def sessions_in(self, root: Path) -> Iterable[SessionRef]:
        """Main transcripts and subagent transcripts, newest first."""
        # session_dir may name one project (slug) directory instead of the projects root.
        project_mode = any(p.is_file() for p in root.glob("*.jsonl"))
        refs = []
        for path in walk_jsonl(root):
            parts = path.relative_to(root).parts
            if not project_mode:
                if len(parts) < 2:
                    continue
                parts = parts[1:]  # drop the slug
            ref = self._ref(path, parts)
            if ref is not None:
                refs.append(ref)
        return refs

    def _ref(self, path: Path, parts: tuple[str, ...]) -> SessionRef | None:
        if len(parts) == 1:
            return self.ref_for(path, key=path.stem, session_id=path.stem)
        # The owner is the first directory under the slug, however deep the nesting goes.
        if "subagents" in parts and path.name.startswith("agent-"):
            owner = parts[0]
            return self.ref_for(path, key="/".join(parts)[: -len(".jsonl")], session_id=owner)
        return None  # journal.jsonl and other non-session files

    # The module-level functions are the reader's rules; tests call them directly too.
    classify = staticmethod(classify)
    to_items = staticmethod(to_items)


SOURCE = ClaudeCodeSource
