"""Session transcripts as the executor reads them: messages as markdown, everything as JSONL."""

from __future__ import annotations

import json

from . import templates
from .scrub import ScrubbedSession


def _unwrap(scrubbed: ScrubbedSession):
    # The type is the boundary: a plain Session (unscrubbed) is refused at run time too,
    # for callers that do not run a type checker.
    if not isinstance(scrubbed, ScrubbedSession):
        raise TypeError(f"transcripts are written from a ScrubbedSession, got {type(scrubbed)}")
    return scrubbed.session


def messages_markdown(scrubbed: ScrubbedSession, number: int) -> str:
    """The messages-only transcript (for the memory job)."""
    session = _unwrap(scrubbed)
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


def full_jsonl(scrubbed: ScrubbedSession) -> str:
    """The full transcript (for the skill job): one JSON object per item, tool activity included."""
    session = _unwrap(scrubbed)
    lines = []
    for index, item in enumerate(session.items):
        record = {"index": index, **item}
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=False))
    return "\n".join(lines) + "\n"
