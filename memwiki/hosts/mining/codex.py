"""OpenAI Codex CLI: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl (and archived_sessions)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...config import Config
from .base import JsonlSource, SessionRef, env_path, file_signature, walk_jsonl
from .records import (
    ROLES,
    TEXT_BLOCKS,
    Verdict,
    message,
    parse_json_text,
    parse_record,
    tool_call,
    tool_result,
)

HOST = "codex"
SELF_SESSION_VAR = "CODEX_THREAD_ID"
HOME_VARS = ("CODEX_HOME",)
# Harness text Codex injects as if the user had typed it (hosts.md §2). The fallback for
# rollouts without provenance: newer ones name each item's origin (content_item_kinds).
INJECTED_MARKERS = (
    "<environment_context>",
    "<turn_aborted>",
    "# AGENTS.md instructions",  # "… for <dir>" (project) or bare (the global file)
    "These AGENTS.md instructions replace all previously provided",  # a resumed session
    "<user_instructions>",
    "<permissions instructions>",
    "<recommended_plugins>",
)
TOOL_TYPES = frozenset(
    {
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
_UUID_TAIL = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)


def codex_home(config: Config) -> Path:
    """~/.codex, or CODEX_HOME."""
    return env_path(config, "CODEX_HOME") or config.home / ".codex"


def instruction_files(config: Config) -> list[Path]:
    """Both files the block may be in: AGENTS.override.md (it wins when it has text), AGENTS.md."""
    return [codex_home(config) / "AGENTS.override.md", codex_home(config) / "AGENTS.md"]


def instruction_file(config: Config) -> Path | None:
    """The file Codex reads: AGENTS.override.md when it holds text, else AGENTS.md."""
    override, plain = instruction_files(config)
    return override if _holds_text(override) else plain


def _holds_text(path: Path) -> bool:
    # Codex reads the first of the two that holds more than whitespace (codex-rs
    # agents_md.rs, load_global_instructions): an empty override is skipped. A block
    # written into an empty override would make Codex stop reading the user's AGENTS.md.
    try:
        return path.is_file() and bool(path.read_bytes().decode("utf-8", "replace").strip())
    except OSError:  # unreadable: Codex warns and reads AGENTS.md
        return False


def host_present(config: Config) -> bool:
    """True when the Codex home directory exists."""
    return codex_home(config).is_dir()


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") in TEXT_BLOCKS and isinstance(b.get("text"), str)
    ]


def is_injected(text: str) -> bool:
    """True when a text item starts (after leading whitespace) with a harness marker."""
    return text.lstrip().startswith(INJECTED_MARKERS)


def _item_kinds(payload: dict[str, Any]) -> list[Any] | None:
    # Codex 0.17x: internal_chat_message_metadata_passthrough.content_item_kinds, one kind
    # per content item ("user.text", "agents_md.instructions", "environments.…", …).
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    content = payload.get("content")
    if isinstance(kinds, list) and isinstance(content, list) and len(kinds) == len(content):
        return kinds
    return None


def _typed_by_user(text: str, kind: Any) -> bool:
    if isinstance(kind, str) and kind.startswith("user."):
        return True
    if isinstance(kind, str) and kind and kind != "unknown":
        return False  # a named harness origin: AGENTS.md, environment context, skills, …
    return not is_injected(text)  # no usable provenance: the markers decide


def user_texts(payload: dict[str, Any]) -> list[str]:
    """The text items the person typed: by provenance where present, else by markers."""
    content = payload.get("content")
    kinds = _item_kinds(payload)
    if kinds is None or not isinstance(content, list):
        return [t for t in _texts(content) if not is_injected(t)]
    return [
        b["text"]
        for b, kind in zip(content, kinds, strict=True)
        if isinstance(b, dict)
        and b.get("type") in TEXT_BLOCKS
        and isinstance(b.get("text"), str)
        and _typed_by_user(b["text"], kind)
    ]


def _is_tool_type(kind: Any) -> bool:
    return isinstance(kind, str) and (
        kind in TOOL_TYPES or "function_call" in kind or "tool" in kind
    )


def classify(record: dict[str, Any]) -> Verdict:
    """hosts.md §2: response_item messages and tool calls; injected context and the rest drop."""
    payload = record.get("payload")
    if not isinstance(payload, dict) or record.get("type") != "response_item":
        return Verdict.DROP  # session_meta, turn_context, event_msg echoes, compacted, …
    return classify_payload(payload)


def classify_payload(payload: dict[str, Any]) -> Verdict:
    """The verdict for a payload object, whatever envelope carried it (generic dialect 1)."""
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        if role not in ROLES:
            return Verdict.DROP  # developer and system prompts
        texts = _texts(payload.get("content"))
        # Per item: one item the person typed keeps the record.
        if role == "user" and texts and not user_texts(payload):
            return Verdict.DROP
        return Verdict.MESSAGE
    return Verdict.TOOL if _is_tool_type(kind) else Verdict.DROP


def to_items(record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """Canonical items for a kept response_item."""
    payload = record["payload"]
    kind = payload.get("type")
    if kind == "message":
        texts = _texts(payload.get("content"))
        if payload.get("role") == "user":
            texts = user_texts(payload)
        return message(payload["role"], "\n\n".join(texts))
    call_id = payload.get("call_id", payload.get("id"))
    if kind in ("function_call", "custom_tool_call"):
        args = payload.get("arguments", payload.get("input", {}))
        return tool_call(payload.get("name"), parse_json_text(args), call_id, ctx)
    if kind == "local_shell_call":
        return tool_call("local_shell", payload.get("action", {}), call_id, ctx)
    if kind == "web_search_call":
        return tool_call("web_search", payload.get("action", {}), call_id, ctx)
    output = payload.get("output", payload.get("content", ""))
    is_error = None
    if isinstance(output, dict) and "content" in output:
        success = output.get("success")
        is_error = (not success) if isinstance(success, bool) else None
        output = output["content"]
    return tool_result(output, call_id, ctx, is_error=is_error)


def session_id_of(path: Path) -> str:
    """session_meta.payload.id from line 1; else the stem's trailing UUID; else the stem."""
    try:
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError:
        first = b""
    # parse_record, as for every other line: a byte that is not UTF-8 in the header (its
    # instructions or cwd) must not cost the session its id.
    meta = parse_record(first) or {}
    if meta.get("type") == "session_meta" and isinstance(meta.get("payload"), dict):
        sid = meta["payload"].get("id")
        if isinstance(sid, str) and sid:
            return sid
    match = _UUID_TAIL.search(path.stem)
    return match.group(1) if match else path.stem


class CodexSource(JsonlSource):
    """Reader for Codex rollout files."""

    host = HOST

    def default_location(self) -> Path | None:
        """$CODEX_HOME (sessions/ and archived_sessions/ are both read)."""
        return codex_home(self.config)

    def sessions_in(self, root: Path) -> Iterable[SessionRef]:
        """Rollout files, newest first; keyed by session id so archiving a file keeps its cursor."""
        if self.session_dir is None:
            roots = [root / "sessions", root / "archived_sessions"]
        else:
            roots = [root]
        by_id: dict[str, SessionRef] = {}
        mined = self._mined_ids()
        for base in roots:
            for path in walk_jsonl(base):
                if not path.name.startswith("rollout-"):
                    continue
                sig, _ = file_signature(path)
                # A rollout unchanged since the cursor read it holds the id it had then:
                # the hourly prepare opens only the rollouts that changed, not thousands.
                sid = mined.get((str(path), sig)) or session_id_of(path)
                ref = self.ref_for(path, key=sid, session_id=sid)
                # A session both live and archived: the newer copy wins.
                if sid not in by_id or ref.mtime > by_id[sid].mtime:
                    by_id[sid] = ref
        return by_id.values()

    def _mined_ids(self) -> dict[tuple[str, str], str]:
        # (path, signature) -> session id, from the cursor entries the reads wrote.
        found = {}
        for entry in self.known.values():
            if isinstance(entry, dict):
                path, sig, sid = entry.get("path"), entry.get("sig"), entry.get("session_id")
                if isinstance(path, str) and isinstance(sid, str) and sid and sig != "missing":
                    found[(path, str(sig))] = sid
        return found

    # The module-level functions are the reader's rules; tests call them directly too.
    classify = staticmethod(classify)
    to_items = staticmethod(to_items)


SOURCE = CodexSource
