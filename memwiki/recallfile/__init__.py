"""RecallFiles: markdown files with YAML frontmatter, parsed, validated and rewritten.

model (fields, problems, names), parse (read and validate), render (write, editing the
original frontmatter in place), payload (from agents' JSON). The markdown structure itself
(frontmatter delimiters, key lines) is memwiki.markdown's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..markdown import split_frontmatter
from ..timestamps import now_iso
from .model import (
    COPY_RE,
    KNOWN_KEYS,
    LINE_BREAKS,
    LONE_SURROGATE,
    MAX_NAME,
    SLUG_RE,
    InvalidRecallFile,
    PluginNote,
    Problem,
    RecallFile,
    check_new_name,
    check_slug,
    check_track,
    conflict_copy_of,
    is_one_line,
    mend_surrogates,
    printable,
    problems_text,
)
from .parse import (
    MAX_FILE_BYTES,
    decode,
    load_frontmatter,
    parse,
    read,
    read_note_bytes,
    size_problem,
    try_read,
)

if TYPE_CHECKING:
    from .payload import PAYLOAD_KEYS, from_payload
    from .render import check_rendered, render

# Imported on first use: the index reads files through parse alone, and a retrieve that
# finds an edited file would otherwise import the payload and render modules too.
_LAZY = {
    "PAYLOAD_KEYS": "payload",
    "from_payload": "payload",
    "render": "render",
    "check_rendered": "render",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "load_frontmatter",
    "COPY_RE",
    "KNOWN_KEYS",
    "PluginNote",
    "LINE_BREAKS",
    "LONE_SURROGATE",
    "MAX_FILE_BYTES",
    "MAX_NAME",
    "PAYLOAD_KEYS",
    "SLUG_RE",
    "InvalidRecallFile",
    "Problem",
    "problems_text",
    "RecallFile",
    "check_rendered",
    "check_new_name",
    "check_slug",
    "check_track",
    "conflict_copy_of",
    "decode",
    "from_payload",
    "is_one_line",
    "mend_surrogates",
    "printable",
    "now_iso",
    "parse",
    "read",
    "read_note_bytes",
    "render",
    "size_problem",
    "split_frontmatter",
    "try_read",
]
