"""Session transcripts as the executor reads them: messages as markdown, everything as JSONL."""

from __future__ import annotations

import json

from . import templates
from .schema import Session


def messages_markdown(session: Session, number: int) -> str:
    """The messages-only transcript (for the memory job)."""
    blocks = []
    for index, item in enumerate(session.items):
        if item["type"] != "message":
            continue
        content = item["content"].rstrip("\n")
        blocks.append(f"### [{index}] {item['role']}\n\n{content}\n")
    return templates.render(
        "transcript.md",
        session_number=number,
        source_id=session.source_id,
        label=session.label,
        message_count=len(blocks),
        item_count=len(session.items),
        messages="\n".join(blocks),
    )


def full_jsonl(session: Session) -> str:
    """The full transcript (for the skill job): one JSON object per item, tool activity included."""
    lines = []
    for index, item in enumerate(session.items):
        record = {"index": index, **item}
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=False))
    return "\n".join(lines) + "\n"
