"""Checking a file too large to index without loading it whole (lint of a 50 MB file)."""

from __future__ import annotations

import codecs
from pathlib import Path

from .. import markdown
from .model import InvalidRecallFile, Problem
from .parse import BINARY_PROBE, binary_problem, parse, size_problem

HEAD_BYTES = 256 * 1024  # the frontmatter must close within this much of a large file
BLOCK = 1 << 20


def check_large(path: Path, track: str, rel: str, size: int) -> list[Problem]:
    """Every problem of a file over the size limit, read in 1 MiB blocks: the size first."""
    problems = [Problem(rel, 1, f"not indexed: {size_problem(size)}")]
    decoder = codecs.getincrementaldecoder("utf-8")()
    head: list[str] = []
    head_len = 0
    line = 1
    try:
        with open(path, "rb") as fh:
            first = True
            while block := fh.read(BLOCK):
                binary = binary_problem(block[:BINARY_PROBE]) if first else None
                if binary is not None:
                    return [*problems, Problem(rel, 1, binary)]
                first = False
                try:
                    text = decoder.decode(block)
                except UnicodeDecodeError as exc:
                    bad = line + block[: exc.start].count(b"\n")
                    return [*problems, Problem(rel, bad, "not valid UTF-8 text")]
                line += block.count(b"\n")
                if head_len < HEAD_BYTES:
                    head.append(text)
                    head_len += len(text)
    except OSError as exc:
        return [Problem(rel, 1, f"cannot read: {exc.strerror}")]
    return problems + _check_head("".join(head)[:HEAD_BYTES], track, path.stem, rel)


def _check_head(head: str, track: str, stem: str, rel: str) -> list[Problem]:
    """Validate the frontmatter found at the start of a large file."""
    parts = markdown.split_frontmatter(head)
    if parts is None and head.lstrip("\ufeff").startswith(("---\n", "---\r\n")):
        kib = HEAD_BYTES // 1024
        return [Problem(rel, 1, f"frontmatter not closed within the first {kib} KiB")]
    try:
        # The frontmatter and an empty body: the body of a large file is not checked line by
        # line here beyond its encoding.
        parse(head if parts is None else head[: len(head) - len(parts.body)], track, stem, rel)
    except InvalidRecallFile as exc:
        return exc.problems
    return []
