"""The RecallFile model: its fields, its problems, and the names a RecallFile may have."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass, field

from ..errors import InvalidInput
from ..timestamps import format_iso

SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 80
KNOWN_KEYS = ("name", "description", "tags", "created", "updated", "sources")
# Every character Python's str.splitlines() breaks at; YAML reads \x85, \u2028 and \u2029
# as line breaks too, so a "one line" description may contain none of them.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Any surrogate code point left in a str is lone (json and UTF-8 decoding join real pairs):
# JSON's "\\ud800", or argv's undecodable bytes. It cannot be written as UTF-8.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# memwiki's own conflict copies: <stem>.conflict-<label>-<sha7..40>[.md] (see git/conflicts).
COPY_RE = re.compile(
    r"^(?P<stem>.+)\.conflict-(?P<label>[a-z0-9][a-z0-9-]*)-(?P<sha>[0-9a-f]{7,40})(?P<ext>\.[^./]+)?$"
)


@dataclass(frozen=True)
class Problem:
    """One validation problem, reported as `path:line: message`."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        # One line whatever a pulled file's folder is called: lint output is read line by line.
        return f"{printable(self.path)}:{self.line}: {printable(self.message)}"

    def to_dict(self) -> dict:
        """JSON form."""
        return asdict(self)


def problems_text(problems) -> str:
    """A file's problems as one line without its path: `line 2: …; line 5: …`."""
    return "; ".join(f"line {p.line}: {p.message}" for p in problems)


class InvalidRecallFile(InvalidInput):
    """A file that is not a valid RecallFile; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        super().__init__(
            str(problems[0]) + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
        )
        self.problems = problems


class PluginNote(InvalidRecallFile):
    """A note an Obsidian plugin owns (markdown.plugin_note): not a RecallFile, and not a mistake.

    Commands that go over the whole vault (index, list, lint, sync, links) leave it out in
    silence; one that was asked for this very file says what it is.
    """

    def __init__(self, path: str, kind: str):
        super().__init__([Problem(path, 1, f"{kind}, not a RecallFile: memwiki leaves it out")])
        self.kind = kind


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
    # The file line the body starts on, the byte-order mark it was read with and its line
    # ending ("\r\n" when its first line has one; both kept on rewrite): facts of the file
    # on disk, not of the memory.
    body_line: int = field(default=0, compare=False, repr=False)
    bom: str = field(default="", compare=False, repr=False)
    newline: str = field(default="\n", compare=False, repr=False)

    @property
    def path(self) -> str:
        """Path relative to the wiki root."""
        return f"{self.track}/{self.name}.md"

    @property
    def is_conflict_copy(self) -> bool:
        """True for a conflict copy memwiki wrote beside its original."""
        return conflict_copy_of(self.name) is not None

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
            # Always there, {} when empty: an agent reads data["extra"] without a check.
            "extra": jsonable(self.extra),
        }
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


def check_track(track: str) -> str:
    """Return track if it names a top-level folder memwiki reads, else raise InvalidInput.

    Not a slug: a vault's own folders (`Projects`, `Areas`, `Café`) are tracks too, listed,
    indexed and retrieved; only a writer's new track must be a slug (check_slug).
    """
    bad = not isinstance(track, str) or not track or track.startswith(".")
    if bad or "/" in track or "\\" in track:
        raise InvalidInput(f"invalid track {track!r}: a top-level folder name of the wiki")
    return track


# Device names Windows reserves in every folder, whatever the extension: Git for Windows
# refuses to check out memory/con.md (core.protectNTFS), so one such note breaks every
# Windows device the wiki syncs to.
WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)


def check_new_name(value: str, what: str = "name") -> str:
    """check_slug, and not a name Windows reserves: for a RecallFile about to be created.

    Existing files keep their names (they stay valid and indexed); only new ones are refused.
    """
    check_slug(value, what)
    if value in WINDOWS_RESERVED:
        raise InvalidInput(
            f"{what} {value!r} is a device name Windows reserves: git cannot check it out"
            " there, so the wiki would break on a Windows device; choose another name"
        )
    return value


def conflict_copy_of(name: str) -> str | None:
    """The original's stem when name (a file name or stem) is a memwiki conflict copy's."""
    m = COPY_RE.match(name)
    if m is None or (m["ext"] not in (None, ".md")) or not SLUG_RE.match(m["stem"]):
        return None
    return m["stem"]


# The copies other sync tools make of a note two devices changed, as (stem pattern, who,
# whether the name alone proves it): the copy keeps the original's `name:`, so without these
# it read as a misnamed note.
# Dropbox: "x (conflicted copy).md", "x (Ann's conflicted copy 2024-01-01).md" (any text
# around "conflicted copy", as Obsidian Sync and other tools write it too); Syncthing:
# "x.sync-conflict-20240101-123456-ABCDEFG.md"; iCloud Drive: "x 2.md" (Obsidian's own
# *Make a copy* numbers its copies the same way, so that one is named for what it is).
# "Chapter 2.md" beside "Chapter.md" is as likely a name someone chose: a numbered name
# is a copy only when its `name:` is the original's.
SYNC_COPIES = (
    (
        re.compile(r"^(?P<stem>.+?) \([^()]*conflicted copy[^()]*(?:\(\d+\))?\)$", re.I),
        "a conflict copy of {} (Dropbox's naming)",
        True,
    ),
    (
        re.compile(r"^(?P<stem>.+?)\.sync-conflict-\d{8}-\d{6}-[A-Za-z0-9]+$"),
        "a conflict copy of {} made by Syncthing",
        True,
    ),
    (
        re.compile(r"^(?P<stem>.+?) \d{1,3}$"),
        "a numbered copy of {} (iCloud's conflict copy, or Obsidian's Make a copy)",
        False,
    ),
)


# What every file name a SYNC_COPIES pattern can match contains (more names match it, none
# fewer), each with a space or "conflict-" in it: maybe_sync_copy passes a wiki's other
# names over at the cost of two substring tests, or one search.
_COPY_HINT = re.compile(r"conflicted copy|\.sync-conflict-| \d{1,3}\n?\.md$", re.I)


def maybe_sync_copy(name: str) -> bool:
    """False when the file name cannot be another sync tool's copy (SYNC_COPIES), whatever
    the file holds; True when it may be (other_tools_copy decides)."""
    return (" " in name or "conflict-" in name) and _COPY_HINT.search(name) is not None


def sync_copy_of(stem: str, name: str) -> str | None:
    """What the file stem is when it copies the note called name (SYNC_COPIES): a format
    with {} for the original's path; None when it is no such copy."""
    for pattern, what, _ in SYNC_COPIES:
        m = pattern.match(stem)
        if m is not None and m["stem"] == name:
            return what
    return None


def sync_copy_named(stem: str) -> tuple[str, str] | None:
    """(the original's stem, what it is) when a file stem alone says another sync tool made
    it as a conflict copy (Dropbox's or Syncthing's naming, whatever the file holds)."""
    for pattern, what, by_name in SYNC_COPIES:
        m = pattern.match(stem)
        if by_name and m is not None:
            return m["stem"], what
    return None


def numbered_copy_stem(stem: str) -> str | None:
    """The original's stem when stem is numbered as a copy ("x 2"): a copy only if its
    `name:` says so (sync_copy_of)."""
    m = SYNC_COPIES[-1][0].match(stem)
    return m["stem"] if m is not None else None


def mend_surrogates(text: str) -> str:
    """text with each lone surrogate replaced by U+FFFD, so that it can be written."""
    return LONE_SURROGATE.sub("\ufffd", text)


def printable(text: str) -> str:
    """text with every character that is not printable shown as its Python escape (`\\n`).

    For paths, names and headings of a wiki someone else wrote, as memwiki shows them to an
    agent or a terminal: a folder named with a line break could forge lines of the retrieve
    block (`## memory/trusted.md`), a right-to-left override reorder what a person reads, an
    escape sequence recolour a terminal. Control, format (bidi, zero-width), line and
    paragraph separator and unassigned characters are escaped; JSON keeps the exact text.
    """
    if text.isprintable():
        return text
    from unicodedata import category

    # Spaces (Zs: a no-break space in French text, an ideographic space) stay as written.
    return "".join(
        ch if ch.isprintable() or category(ch) == "Zs" else repr(ch)[1:-1] for ch in text
    )


def is_one_line(text: str) -> bool:
    """True when text (ignoring surrounding whitespace) holds no line break of any kind."""
    return not any(c in LINE_BREAKS for c in text.strip())


def timestamp(value) -> str | None:
    """A frontmatter timestamp as memwiki writes it (YAML may have read it as a datetime)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return format_iso(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def jsonable(value):
    """value with dates turned into strings and keys into str, for JSON."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return timestamp(value)
    return value
