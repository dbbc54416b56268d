"""RecallFiles: parse, validate and render markdown files with YAML frontmatter.

A rewrite keeps every byte it does not have to change: unknown frontmatter keys
stay exactly as the person (or Obsidian) wrote them, and the body is never
reflowed. Only the blocks of known keys whose values changed are re-rendered.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InvalidInput

SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 80
KNOWN_KEYS = ("name", "description", "tags", "created", "updated", "sources")
# Every character Python's str.splitlines() breaks at; YAML reads \x85, \u2028 and \u2029
# as line breaks too, so a "one line" description may contain none of them.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# A top-level key line; "- x: y" is an entry of a flush-left block sequence, not a key.
_KEY_LINE = re.compile(r"^(?!- )([^\s#:][^:]*):(\s|$)")


@dataclass(frozen=True)
class Problem:
    """One validation problem, reported as `path:line: message`."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    def to_dict(self) -> dict:
        """JSON form."""
        return {"path": self.path, "line": self.line, "message": self.message}


class InvalidRecallFile(InvalidInput):
    """A file that is not a valid RecallFile; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        super().__init__(
            str(problems[0]) + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
        )
        self.problems = problems


@dataclass
class RecallFile:
    """One memory or skill file: frontmatter fields plus the markdown body."""

    track: str
    name: str
    description: str
    body: str = ""
    tags: list[str] = field(default_factory=list)
    created: str | None = None
    updated: str | None = None
    sources: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    # The frontmatter text as read from disk; a rewrite edits it in place.
    raw_frontmatter: str | None = field(default=None, compare=False, repr=False)

    @property
    def path(self) -> str:
        """Path relative to the wiki root."""
        return f"{self.track}/{self.name}.md"

    def to_dict(self, with_body: bool = True) -> dict:
        """JSON form."""
        data = {
            "track": self.track,
            "name": self.name,
            "path": self.path,
            "description": self.description,
            "tags": list(self.tags),
            "created": self.created,
            "updated": self.updated,
            "sources": list(self.sources),
        }
        if self.extra:
            data["extra"] = _jsonable(self.extra)
        if with_body:
            data["body"] = self.body
        return data


def check_slug(value: str, what: str = "name") -> str:
    """Return value if it is a valid slug, else raise InvalidInput."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} is missing")
    if len(value) > MAX_NAME:
        raise InvalidInput(f"{what} {value[:40]!r}… is longer than {MAX_NAME} characters")
    if not SLUG_RE.match(value):
        raise InvalidInput(
            f"{what} {value!r} is not a slug (lowercase letters, digits and single hyphens)"
        )
    return value


def is_one_line(text: str) -> bool:
    """True when text (ignoring surrounding whitespace) holds no line break of any kind."""
    return not any(c in LINE_BREAKS for c in text.strip())


def now_iso() -> str:
    """The current UTC time as 2026-11-02T10:14:00Z."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _timestamp(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return _timestamp(value)
    return value


# ---------------------------------------------------------------- parsing


def split_frontmatter(text: str) -> tuple[str, str, int] | None:
    """Split into (frontmatter text, body, body's first line number); None without frontmatter."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    return None


def decode(data: bytes, path: str) -> str:
    """Decode UTF-8 or raise InvalidRecallFile naming the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidRecallFile([Problem(path, line, "not valid UTF-8 text")]) from None


def parse(text: str | bytes, track: str, stem: str, path: str | None = None) -> RecallFile:
    """Parse and validate a RecallFile's text; raises InvalidRecallFile with every problem."""
    import yaml  # imported here: the retrieval hot path reads no frontmatter when nothing changed

    path = path or f"{track}/{stem}.md"
    if isinstance(text, bytes):
        if b"\x00" in text[:8192]:
            raise InvalidRecallFile([Problem(path, 1, "binary file, not markdown")])
        text = decode(text, path)
    if not text.strip():
        raise InvalidRecallFile([Problem(path, 1, "empty file")])
    parts = split_frontmatter(text)
    if parts is None:
        msg = "missing frontmatter: the file must start with a '---' line and close it with '---'"
        raise InvalidRecallFile([Problem(path, 1, msg)])
    fm_text, body, _ = parts
    try:
        data = yaml.safe_load(fm_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        context = getattr(exc, "context_mark", None)
        # For an unclosed quote or bracket PyYAML notices the problem only later (at the
        # next key, or the end of the frontmatter); the line to fix is where it opened.
        unclosed = any(w in (getattr(exc, "context", None) or "") for w in ("flow", "quoted"))
        if context is not None and (unclosed or mark is None or mark.line >= fm_text.count("\n")):
            mark = context
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InvalidRecallFile(
            [Problem(path, line, f"invalid YAML in frontmatter: {problem}")]
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidRecallFile(
            [Problem(path, 2, "frontmatter is not a mapping of keys to values")]
        )
    problems = _validate_fields(data, fm_text, track, stem, path)
    if problems:
        raise InvalidRecallFile(problems)
    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    return RecallFile(
        track=track,
        name=data["name"],
        description=data["description"].strip(),
        body=body,
        tags=[str(t) for t in data.get("tags") or []],
        created=_timestamp(data.get("created")),
        updated=_timestamp(data.get("updated")),
        sources=[str(s) for s in data.get("sources") or []],
        extra=extra,
        raw_frontmatter=fm_text,
    )


def _key_line(fm_text: str, key: str) -> int:
    for i, line in enumerate(fm_text.splitlines()):
        m = _KEY_LINE.match(line)
        if m and m.group(1).strip() == key:
            return i + 2
    return 2


def _validate_fields(data: dict, fm_text: str, track: str, stem: str, path: str) -> list[Problem]:
    problems: list[Problem] = []

    def add(key: str, message: str) -> None:
        problems.append(Problem(path, _key_line(fm_text, key), message))

    name = data.get("name")
    if name is None or name == "":
        add("name", "missing 'name' in frontmatter")
    elif not isinstance(name, str):
        add("name", "'name' must be a string")
    else:
        try:
            check_slug(name)
        except InvalidInput as exc:
            add("name", exc.message)
        else:
            if name != stem:
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
    from .project import check_frontmatter  # `project:`/`projects:` (docs/guide.md, Projects)

    for key, message in check_frontmatter(data):
        add(key, message)
    return problems


# -------------------------------------------------------------- rendering


def _unicode_ok(value) -> bool:
    # PyYAML writes \x85, \u2028 and \u2029 raw when allow_unicode is on, and reading them
    # back turns them into line breaks; such values are written with escapes instead.
    if isinstance(value, str):
        return not any(c in value for c in "\x85\u2028\u2029")
    if isinstance(value, dict):
        return all(_unicode_ok(k) and _unicode_ok(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_unicode_ok(v) for v in value)
    return True


def _render_value(key: str, value) -> str:
    import yaml

    if key in ("created", "updated") and isinstance(value, str) and _ISO_Z.match(value):
        return f"{key}: {value}\n"
    unicode = _unicode_ok(value)
    if isinstance(value, list):
        # Obsidian-style inline list: tags: [release, billing]
        inline = yaml.safe_dump(value, default_flow_style=True, allow_unicode=unicode, width=10**6)
        return f"{key}: {inline.strip()}\n"
    return yaml.safe_dump({key: value}, allow_unicode=unicode, sort_keys=False, width=10**6)


_ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _known_values(rf: RecallFile) -> dict:
    values = {"name": rf.name, "description": rf.description}
    if rf.tags:
        values["tags"] = list(rf.tags)
    if rf.created:
        values["created"] = rf.created
    if rf.updated:
        values["updated"] = rf.updated
    if rf.sources:
        values["sources"] = list(rf.sources)
    return values


def _blocks(fm_text: str) -> list[tuple[str | None, str]]:
    """Cut frontmatter into top-level key blocks (key, text).

    Comment and blank lines at the left margin between two keys are blocks of their own
    (key None), so re-rendering a known key never drops a comment written about the next
    one; they join the key above only when an indented line of that key's value follows.
    """
    blocks: list[tuple[str | None, str]] = []
    pending: list[str] = []
    for line in fm_text.splitlines(keepends=True):
        m = _KEY_LINE.match(line)
        if m:
            if pending:
                blocks.append((None, "".join(pending)))
                pending = []
            blocks.append((m.group(1).strip(), line))
        elif line.startswith("#") or not line.strip():
            pending.append(line)
        elif blocks and blocks[-1][0] is not None:
            key, text = blocks[-1]
            blocks[-1] = (key, text + "".join(pending) + line)
            pending = []
        else:
            blocks.append((None, "".join(pending) + line))
            pending = []
    if pending:
        blocks.append((None, "".join(pending)))
    return blocks


def render(rf: RecallFile) -> str:
    """Render a RecallFile to text, editing the original frontmatter in place when there is one."""
    import yaml

    known = _known_values(rf)
    if rf.raw_frontmatter is None:
        fm = "".join(_render_value(k, v) for k, v in known.items())
        if rf.extra:
            extra = _jsonable(rf.extra)
            fm += yaml.safe_dump(
                extra, allow_unicode=_unicode_ok(extra), sort_keys=False, width=10**6
            )
    else:
        fm = _edit_frontmatter(rf.raw_frontmatter, known)
    return f"---\n{fm}---\n{rf.body}"


def _edit_frontmatter(raw: str, known: dict) -> str:
    import yaml

    try:
        old = yaml.safe_load(raw) or {}
    except yaml.YAMLError:
        old = {}
    out: list[str] = []
    seen: set[str] = set()
    for key, text in _blocks(raw):
        if key in KNOWN_KEYS:
            seen.add(key)
            if key not in known:
                continue  # the caller cleared it
            old_value = old.get(key)
            if key in ("created", "updated"):
                old_value = _timestamp(old_value)
            elif key in ("tags", "sources") and isinstance(old_value, list):
                old_value = [str(v) for v in old_value]
            elif key == "description" and isinstance(old_value, str):
                old_value = old_value.strip()
            out.append(text if old_value == known[key] else _render_value(key, known[key]))
        else:
            out.append(text)
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    out.extend(_render_value(k, v) for k, v in known.items() if k not in seen)
    return "".join(out)


def read(path: Path, track: str, rel: str | None = None) -> RecallFile:
    """Read and parse a RecallFile from disk."""
    path = Path(path)
    return parse(path.read_bytes(), track=track, stem=path.stem, path=rel or str(path))


def try_read(path: Path, track: str, rel: str) -> tuple[RecallFile | None, list[Problem]]:
    """Read a RecallFile, or say why it cannot be read (for commands that go on with the rest)."""
    try:
        return read(path, track, rel), []
    except InvalidRecallFile as exc:
        return None, exc.problems
    except OSError as exc:
        return None, [Problem(rel, 1, f"cannot read: {exc.strerror}")]


PAYLOAD_KEYS = {"name", "track", "description", "content", "tags", "sources", "created", "updated"}


def from_payload(item, where: str = "recall file") -> RecallFile:
    """A RecallFile from a commit_results payload entry, validated field by field."""
    if not isinstance(item, dict):
        raise InvalidInput(f"{where}: must be an object")
    unknown = sorted(set(item) - PAYLOAD_KEYS)
    if unknown:
        raise InvalidInput(f"{where}: unknown field {unknown[0]!r}")
    for key in ("track", "name", "description"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise InvalidInput(f"{where}.{key}: missing or not a string")
    try:
        check_slug(item["track"], "track")
        check_slug(item["name"])
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.message}") from None
    content = item.get("content", "")
    if not isinstance(content, str):
        raise InvalidInput(f"{where}.content: must be a string")
    for key in ("tags", "sources"):
        value = item.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(f"{where}.{key}: must be a list of strings")
    if not is_one_line(item["description"]):
        raise InvalidInput(f"{where}.description: must be one line")
    return RecallFile(
        track=item["track"],
        name=item["name"],
        description=item["description"].strip(),
        body=content if content.endswith("\n") or not content else content + "\n",
        tags=list(item.get("tags", [])),
        sources=list(item.get("sources", [])),
        created=item.get("created"),
    )
