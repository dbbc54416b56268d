"""RecallFiles: markdown files with YAML frontmatter, parsed, validated and rewritten.

model (fields, problems, names), parse (read and validate), render (write, editing the
original frontmatter in place), payload (from agents' JSON). The markdown structure itself
(frontmatter delimiters, key lines) is memwiki.markdown's.
"""

from __future__ import annotations

from ..markdown import split_frontmatter
from ..timestamps import now_iso
from .model import (
    COPY_RE,
    KNOWN_KEYS,
    LINE_BREAKS,
    MAX_NAME,
    SLUG_RE,
    InvalidRecallFile,
    Problem,
    RecallFile,
    check_slug,
    conflict_copy_of,
    is_one_line,
)
from .parse import MAX_FILE_BYTES, decode, load_frontmatter, parse, read, size_problem, try_read
from .payload import PAYLOAD_KEYS, from_payload
from .render import render

__all__ = [
    "load_frontmatter",
    "COPY_RE",
    "KNOWN_KEYS",
    "LINE_BREAKS",
    "MAX_FILE_BYTES",
    "MAX_NAME",
    "PAYLOAD_KEYS",
    "SLUG_RE",
    "InvalidRecallFile",
    "Problem",
    "RecallFile",
    "check_slug",
    "conflict_copy_of",
    "decode",
    "from_payload",
    "is_one_line",
    "now_iso",
    "parse",
    "read",
    "render",
    "size_problem",
    "split_frontmatter",
    "try_read",
]
