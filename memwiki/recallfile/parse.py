"""Reading RecallFiles: decode, split (through the markdown layer), validate every field."""

from __future__ import annotations

import datetime as dt
import errno
import functools
import os
import posixpath
import stat
from pathlib import Path

from .. import markdown
from ..errors import InvalidInput
from .model import (
    KNOWN_KEYS,
    InvalidRecallFile,
    PluginNote,
    Problem,
    RecallFile,
    check_slug,
    conflict_copy_of,
    is_one_line,
    sync_copy_of,
    timestamp,
)

# Files larger than this are not indexed (lint reports them): the chunker and the embedder
# work through a file in windows, and this bounds the time one file can take. See docs/guide.md.
MAX_FILE_BYTES = 20 * 1024 * 1024
BINARY_PROBE = 8192  # a NUL byte in the first 8 KiB: binary, as git decides
# A frontmatter larger than this is not read (lint reports it): PyYAML takes about 6 s per
# MiB of keys, paid by every command that reads a file a teammate pushed. The frontmatter
# of a file over MAX_FILE_BYTES must close within the same 256 KiB (recallfile/stream.py).
MAX_FRONTMATTER_BYTES = 256 * 1024


def size_problem(size: int) -> str | None:
    """Why a file of this many bytes is not indexed, or None when it is small enough."""
    if size <= MAX_FILE_BYTES:
        return None
    limit = MAX_FILE_BYTES // (1024 * 1024)
    return f"{size / 1024**2:.1f} MiB is over the {limit} MiB limit for one file: split it"


def decode(data: bytes, path: str) -> str:
    """Decode UTF-8 or raise InvalidRecallFile naming the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidRecallFile([Problem(path, line, "not valid UTF-8 text")]) from None


def binary_problem(head: bytes) -> str | None:
    """Why a file whose first bytes are head is not text memwiki reads, or None.

    A note saved as UTF-16 (Windows Notepad's "Unicode", some exporters) has a NUL in every
    other byte: it was called a binary file, which sends a person looking for an image.
    """
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text: memwiki reads UTF-8, save the file as UTF-8"
    if b"\x00" in head[:BINARY_PROBE]:
        return "binary file, not markdown"
    return None


def parse(text: str | bytes, track: str, stem: str, path: str | None = None) -> RecallFile:
    """Parse and validate a RecallFile's text; raises InvalidRecallFile with every problem."""
    path = path or f"{track}/{stem}.md"
    if isinstance(text, bytes):
        if (binary := binary_problem(text[:BINARY_PROBE])) is not None:
            raise InvalidRecallFile([Problem(path, 1, binary)])
        text = decode(text, path)
    bom, text = markdown.strip_bom(text)
    if not text.strip():
        raise InvalidRecallFile([Problem(path, 1, "empty file")])
    parts = markdown.split_frontmatter(text)
    if parts is None:
        # A conflict around the frontmatter hides its first '---': say what is really wrong.
        conflicts = _conflicts(markdown.conflict_markers(text, skip_code=False), path)
        msg = "missing frontmatter: the file must start with a '---' line and close it with '---'"
        raise InvalidRecallFile(conflicts or [Problem(path, 1, msg)])
    fm_text = parts.text
    kind = markdown.plugin_note(fm_text)
    if kind is not None:  # before the YAML: a drawing's frontmatter is not memwiki's to judge
        raise PluginNote(path, kind)
    conflicts = _conflicts(markdown.conflict_markers(fm_text, 2, skip_code=False), path)
    if conflicts:  # before the YAML, which would only say it cannot read them
        raise InvalidRecallFile(conflicts)
    data = load_frontmatter(fm_text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidRecallFile(
            [Problem(path, 2, "frontmatter is not a mapping of keys to values")]
        )
    problems = _validate_fields(data, fm_text, stem, path)
    if markdown.duplicate_key_suspects(fm_text):
        problems += _duplicate_keys(fm_text, path)
    problems += _conflicts(markdown.conflict_markers(parts.body, parts.body_line), path)
    if problems:
        raise InvalidRecallFile(problems)
    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    return RecallFile(
        track=track,
        name=data["name"],
        description=data["description"].strip(),
        body=parts.body,
        tags=[str(t) for t in data.get("tags") or []],
        created=timestamp(data.get("created")),
        updated=timestamp(data.get("updated")),
        sources=[str(s) for s in data.get("sources") or []],
        extra=extra,
        raw_frontmatter=fm_text,
        body_line=parts.body_line,
        bom=bom,
        newline="\r\n" if text.startswith("---\r\n") else "\n",
    )


def load_frontmatter(fm_text: str, path: str):
    """The frontmatter's YAML as yaml.safe_load reads it; InvalidRecallFile when it cannot.

    Plain frontmatter is read without PyYAML (plain_yaml: its import is most of what a
    retrieve's update of one edited file costs); anything else by PyYAML, imported here.
    """
    from . import plain_yaml  # here: its regular expressions are compiled only when needed

    # A character is at most 4 bytes: the text is encoded to count only when it may be over.
    if len(fm_text) * 4 > MAX_FRONTMATTER_BYTES:
        size = len(fm_text.encode("utf-8", "surrogatepass"))
        if size > MAX_FRONTMATTER_BYTES:
            limit = MAX_FRONTMATTER_BYTES // 1024
            message = f"frontmatter is {size / 1024:.0f} KiB, over the {limit} KiB limit: move text to the body"
            raise InvalidRecallFile([Problem(path, 2, message)])
    data = plain_yaml.load(fm_text)
    if data is not plain_yaml.OTHER:
        return data
    import yaml

    try:
        return yaml.load(fm_text, Loader=_no_alias_loader())  # a SafeLoader: no tags run code
    except yaml.YAMLError as exc:
        raise InvalidRecallFile([_yaml_problem(exc, fm_text, path)]) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        # PyYAML's constructors raise these for a timestamp like 2026-13-45 or an
        # absurdly large or deeply nested value.
        message = f"invalid YAML in frontmatter: {type(exc).__name__}: {str(exc)[:120]}"
        raise InvalidRecallFile([Problem(path, 2, message)]) from None


@functools.cache
def _no_alias_loader():
    """yaml.SafeLoader refusing aliases (`*name`), built on first use (PyYAML is imported lazily).

    safe_load keeps an alias as a shared reference, so nine lines of nested aliases ("a
    billion laughs") load in microseconds, but every consumer that walks the value (the JSON
    of `show --json`, a rewrite's YAML dump) expands it: 16 s and 860 MB for seven levels,
    forever for nine. A pulled file's frontmatter is read by every colleague's agent, so an
    alias is refused where the YAML is read, with its line, and the file is not indexed.
    """
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"alias *{event.anchor} (memwiki does not read YAML anchors and aliases: "
                    "write the value out)",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

    return NoAliasLoader


def _conflicts(found: list[tuple[int, int]], path: str) -> list[Problem]:
    """A git conflict left in the file (sync, the pre-commit hook and retrieve refuse it)."""
    return [
        Problem(
            path,
            first,
            f"unresolved git conflict (lines {first}-{last}): keep what you want and "
            "delete the marker lines",
        )
        if last > first
        else Problem(path, first, "git conflict marker left in the file: resolve and delete it")
        for first, last in found
    ]


def _duplicate_keys(fm_text: str, path: str) -> list[Problem]:
    """A top-level key written twice: YAML keeps the last silently, and a rewrite edits both."""
    import yaml

    try:
        node = yaml.compose(fm_text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []  # load_frontmatter read it; a reader that disagrees is not a duplicate
    if not isinstance(node, yaml.MappingNode):
        return []
    first: dict[tuple[str, str], int] = {}
    problems = []
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag.endswith(":merge"):
            continue
        line = key.start_mark.line + 2
        seen = first.setdefault((key.tag, key.value), line)
        if seen != line:
            problems.append(
                Problem(
                    path,
                    line,
                    f"duplicate key {key.value!r} in frontmatter (first on line {seen}): "
                    "YAML keeps only the last one; delete one of them",
                )
            )
    return problems


def _yaml_problem(exc, fm_text: str, path: str) -> Problem:
    mark = getattr(exc, "problem_mark", None)
    context = getattr(exc, "context_mark", None)
    # For an unclosed quote or bracket PyYAML notices the problem only later (at the
    # next key, or the end of the frontmatter); the line to fix is where it opened.
    unclosed = any(w in (getattr(exc, "context", None) or "") for w in ("flow", "quoted"))
    if context is not None and (unclosed or mark is None or mark.line >= fm_text.count("\n")):
        mark = context
    line = mark.line + 2 if mark is not None else 2
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return Problem(path, line, f"invalid YAML in frontmatter: {problem}")


def _validate_fields(data: dict, fm_text: str, stem: str, path: str) -> list[Problem]:
    problems: list[Problem] = []

    def add(key: str, message: str) -> None:
        problems.append(Problem(path, markdown.key_line(fm_text, key), message))

    name = data.get("name")
    if name is None or name == "":
        add("name", "missing 'name' in frontmatter")
    elif not isinstance(name, str):
        add("name", "'name' must be a string")
    elif name == stem and conflict_copy_of(stem) is not None:
        pass  # a conflict copy memwiki wrote: not a slug on purpose, and indexed as it is
    else:
        try:
            check_slug(name)
        except InvalidInput as exc:
            add("name", exc.message)
        else:
            if name != stem and (copy := sync_copy_of(stem, name)) is not None:
                original = posixpath.join(posixpath.dirname(path), f"{name}.md")
                add(
                    "name",
                    copy.format(original) + ": merge what you want to keep into that "
                    "file, then delete this one (or give this note a name of its own)",
                )
            elif name != stem:
                add("name", f"name {name!r} does not match the file name {stem!r}")
    desc = data.get("description")
    if desc is None or (isinstance(desc, str) and not desc.strip()):
        add("description", "missing 'description' in frontmatter")
    elif not isinstance(desc, str):
        add("description", "'description' must be a string")
    elif not is_one_line(desc):
        add("description", "'description' must be one line")
    for key in ("tags", "sources"):
        value = data.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str | int | float) for v in value)
        ):
            add(key, f"'{key}' must be a list of strings")
    for key in ("created", "updated"):
        value = data.get(key)
        if value is not None and not isinstance(value, str | dt.date | dt.datetime):
            add(key, f"'{key}' must be a timestamp like 2026-11-02T10:14:00Z")
    from ..project import check_frontmatter  # `project:`/`projects:` (docs/guide.md, Projects)

    for key, message in check_frontmatter(data):
        add(key, message)
    return problems


def read_note_bytes(path: str | os.PathLike, limit: int = -1) -> bytes:
    """A note's bytes (the first limit of them, with limit >= 0); OSError when it is not a
    regular file.

    Bug it prevents: a FIFO named `x.md` in a vault hung `memwiki list`, `lint`, `show` and
    `links` for good, waiting for a writer on its other end (open blocks). Opened without
    blocking, a FIFO, a socket or a device is refused before a byte is read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)")
        return fh.read(limit)


def read(path: Path, track: str, rel: str | None = None) -> RecallFile:
    """Read and parse a RecallFile from disk."""
    path = Path(path)
    return parse(read_note_bytes(path), track=track, stem=path.stem, path=rel or str(path))


def try_read(path: Path, track: str, rel: str) -> tuple[RecallFile | None, list[Problem]]:
    """Read a RecallFile, or say why it cannot be read (for commands that go on with the rest).

    A plugin's own note (PluginNote) is (None, []): not a RecallFile, and nothing to fix.
    """
    try:
        return read(path, track, rel), []
    except PluginNote:
        return None, []
    except InvalidRecallFile as exc:
        return None, exc.problems
    except OSError as exc:
        return None, [Problem(rel, 1, f"cannot read: {exc.strerror}")]
