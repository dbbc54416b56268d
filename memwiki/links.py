"""Wikilinks: parse `[[...]]` links and `aliases`, resolve them as Obsidian does, build the graph.

Resolution follows Obsidian: a bare `[[name]]` matches a note by file name anywhere in the
vault, `[[folder/name]]` by the end of its path, `./` and `../` from the linking note's
folder, all case-insensitively and whatever the Unicode normalization (note_key); `.md`
may be written or left out. When several notes
match, the one in the linking note's folder wins, then the shortest path. One deliberate
addition: a name that matches no file resolves through the notes' `aliases` (Obsidian
itself only offers aliases while typing a link and writes `[[note|alias]]`), so that an
agent that writes `[[alias]]` gets a working link instead of a broken-link error.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING

from . import markdown
from .errors import NotFound
from .layout import CONFLICT_HEAD_BYTES as HEAD_BYTES
from .layout import RACY_NS
from .recallfile import COPY_RE, MAX_FILE_BYTES, Problem, read_note_bytes

if TYPE_CHECKING:
    from pathlib import Path

    from .wiki import Wiki

LINK_RE = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# Files Obsidian embeds or links as attachments (its "Accepted file formats"); a link to one
# of these is never a RecallFile link, present or not.
ATTACHMENT_EXTS = frozenset(
    ".avif .bmp .gif .jpeg .jpg .png .svg .webp .flac .m4a .mp3 .ogg .wav .3gp .webm .mkv "
    ".mov .mp4 .ogv .pdf .canvas .base".split()
)


@dataclass(frozen=True)
class Link:
    """One wikilink in one file, with the note it resolves to (None when broken)."""

    source: str
    line: int
    raw: str
    name: str
    heading: str | None
    label: str | None
    embed: bool
    target: str | None
    via_alias: bool = False

    @property
    def broken(self) -> bool:
        """True when the link resolves to no note."""
        return self.target is None

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "source": self.source,
            "line": self.line,
            "raw": self.raw,
            "name": self.name,
            "heading": self.heading,
            "label": self.label,
            "embed": self.embed,
            "target": self.target,
            "broken": self.broken,
            "via_alias": self.via_alias,
        }


# ------------------------------------------------------------------ parsing


def note_key(text: str) -> str:
    """How a note's name or path is matched: lower-cased and in Unicode NFC.

    macOS file systems and some editors write names decomposed (NFD: `cafe` + U+0301),
    while typed text and `[[links]]` are usually composed (NFC: `caf\u00e9`); Linux keeps
    the bytes as given, so `[[caf\u00e9]]` was a broken link to its own note. Only the
    comparison is normalized: files keep their names, and targets are paths as on disk.
    """
    return unicodedata.normalize("NFC", text).lower()


def parse_target(inner: str) -> tuple[str, str | None, str | None]:
    """The inside of `[[...]]` as (name, heading, label); name has no `.md`."""
    target, bar, label = inner.partition("|")
    target = target.removesuffix("\\")  # `[[a\|b]]`: a pipe escaped inside a table
    target, hashed, heading = target.partition("#")
    target = target.strip()
    if target.lower().endswith(".md"):
        target = target[:-3]
    return target, heading.strip() if hashed else None, label.strip() if bar else None


def scan(
    text: str, parts: markdown.Frontmatter | None | EllipsisType = ...
) -> list[tuple[int, str, str, bool]]:
    """Every wikilink outside code in a file's text: (line, raw, inner, embed).

    Frontmatter values count, as in Obsidian (a property `related: "[[people]]"` is a link
    in its backlinks and graph); YAML comment lines do not. parts: the text's
    markdown.split_frontmatter when the caller has it (the link cache splits each note once).
    """
    if isinstance(parts, EllipsisType):
        parts = markdown.split_frontmatter(text)
    body, first = (parts.body, parts.body_line) if parts else (markdown.strip_bom(text)[1], 1)
    found = []
    if parts is not None and "[[" in parts.text:
        for n, line in enumerate(parts.text.splitlines(), 2):
            if "[[" in line and not line.lstrip().startswith("#"):
                for m in LINK_RE.finditer(line):
                    found.append((n, m.group(0), m.group(2), m.group(1) == "!"))
    for n, line in enumerate(markdown.mask_code(body.splitlines()), first):
        if "[[" in line:
            for m in LINK_RE.finditer(line):
                found.append((n, m.group(0), m.group(2), m.group(1) == "!"))
    return found


def _aliases(parts: markdown.Frontmatter | None) -> list[str]:
    from .recallfile import InvalidRecallFile, load_frontmatter

    if parts is None or "aliases" not in parts.text:
        return []
    try:
        data = load_frontmatter(parts.text, "")
    except InvalidRecallFile:
        return []  # lint reports the frontmatter; its links still count
    value = data.get("aliases") if isinstance(data, dict) else None
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [
            str(v).strip() for v in value if isinstance(v, str | int | float) and str(v).strip()
        ]
    return []


# ------------------------------------------------------------------ caching

LINK_CACHE = "links.pkl"
_MARKERS = re.compile(rb"^(?:<{7}|>{7})(?: |$)", re.MULTILINE)
LINK_CACHE_VERSION = 4
# aliases, raw links, whether lint must parse the note itself rather than trust the
# index (its head names a `conflict_of` key, or it holds a git conflict marker: an index
# built before markers made a file invalid took such a file as valid), and what plugin
# owns the note (markdown.plugin_note), if one does
Scanned = tuple[tuple[str, ...], list[tuple[int, str, str, bool]], bool, str | None]


class LinkCache:
    """Each note's aliases and raw links, keyed by its size and mtime, in the sidecar.

    Parsing every note is what made `lint` grow with the wiki; with this cache a run reads
    only the notes whose stat changed since the last run. Like the index manifest, an entry
    whose mtime falls within the racy window before the cache was written is not trusted
    (the file may have changed again within the same mtime tick). A missing or damaged
    cache only costs speed: every note is read again.
    """

    def __init__(self, path):
        import pickle
        import time

        self.path = path
        # Before any note is read: the racy window of the cache this run writes ends here
        # (stamped at the save, a note read seconds earlier and edited in its mtime tick
        # was trusted for good, as index/freshness.py's ScanChanges.started_ns says).
        self.opened_ns = time.time_ns()
        self.entries: dict[str, tuple[int, int, Scanned]] = {}
        self.trusted_before = 0
        self.dirty = False
        try:
            version, written_ns, entries = pickle.loads(path.read_bytes())
            if version == LINK_CACHE_VERSION:
                self.entries = entries
                self.trusted_before = written_ns - RACY_NS
        except Exception:  # no cache yet, or damaged: start empty
            pass

    def get(self, root, rel: str) -> Scanned | None:
        """(aliases, raw links) of one note, from the cache when its stat still matches."""
        path = root / rel
        try:
            info = path.stat()
        except OSError:
            return None
        if info.st_size > MAX_FILE_BYTES:
            return None  # lint reports its size; its links are not read
        entry = self.entries.get(rel)
        stat = (info.st_size, info.st_mtime_ns)
        trusted = stat[1] < self.trusted_before and info.st_ctime_ns < self.trusted_before
        if entry is not None and entry[:2] == stat and trusted:  # ctime: see ListingCache
            return entry[2]
        try:
            data = read_note_bytes(path)  # a FIFO named x.md is refused, not waited on
        except OSError:
            return None
        text = data.decode("utf-8", "replace")
        parts = markdown.split_frontmatter(text)
        kind = markdown.plugin_note(parts.text) if parts else None
        if kind is not None:  # a drawing or a board: its links are not between RecallFiles
            found: Scanned = ((), [], False, kind)
        else:
            parse_again = b"conflict_of" in data[:HEAD_BYTES] or _MARKERS.search(data) is not None
            found = (tuple(_aliases(parts)), scan(text, parts), parse_again, None)
        self.entries[rel] = (*stat, found)
        self.dirty = True
        return found

    def save(self, notes: list[str]) -> None:
        """Write the cache back when anything changed (best effort: it is only a cache)."""
        import pickle

        wanted = set(notes)
        if len(self.entries) != len(wanted) or not wanted.issuperset(self.entries):
            self.entries = {k: v for k, v in self.entries.items() if k in wanted}
            self.dirty = True
        if not self.dirty:
            return
        from .fsutil import atomic_write_bytes

        data = (LINK_CACHE_VERSION, self.opened_ns, self.entries)
        with contextlib.suppress(OSError):
            atomic_write_bytes(self.path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))


# ----------------------------------------------------------------- resolving


class LinkIndex:
    """Every note of a wiki with its links resolved: the vault as Obsidian sees it."""

    def __init__(self, wiki: Wiki, paths: list[tuple[str, Path]] | None = None):
        """paths: wiki.iter_paths() when the caller has already listed them."""
        self.wiki = wiki
        self.root = wiki.root
        self.notes: list[str] = _note_paths(wiki, paths)
        self.parse_again: set[str] = set()  # notes lint parses itself (see Scanned)
        # Notes an Obsidian plugin owns, by path: linked like attachments, linking nothing.
        self.plugin_notes: dict[str, str] = {}
        self._by_stem: dict[str, list[str]] = {}
        self._by_alias: dict[str, list[str]] = {}
        self._file_keys: set[str] | None = None
        cache = LinkCache(wiki.sidecar / LINK_CACHE)
        scanned: dict[str, list[tuple[int, str, str, bool]]] = {}
        for rel in self.notes:
            self._by_stem.setdefault(note_key(posixpath.basename(rel)[:-3]), []).append(rel)
            found = cache.get(self.root, rel)
            if found is None:
                continue  # unreadable or too large: lint says so; no links, no aliases
            aliases, raw_links, parse_again, kind = found
            if kind is not None:
                self.plugin_notes[rel] = kind
                continue
            scanned[rel] = raw_links
            if parse_again:
                self.parse_again.add(rel)
            for alias in aliases:
                self._by_alias.setdefault(note_key(alias), []).append(rel)
        cache.save(self.notes)
        self.readable: set[str] = set(scanned)  # notes read now or known from the cache
        self.links: dict[str, list[Link]] = {}
        for rel, raw_links in scanned.items():
            # A conflict copy repeats its original's links; counting them twice misleads.
            if not COPY_RE.match(posixpath.basename(rel)):
                self.links[rel] = [lk for lk in self._links(rel, raw_links) if lk is not None]

    def _links(self, source: str, raw_links):
        for line, raw, inner, embed in raw_links:
            name, heading, label = parse_target(inner)
            target, via_alias = self.resolve(source, name)
            if target in self.plugin_notes or (target is None and self._is_attachment(name)):
                yield None
                continue
            yield Link(source, line, raw, name, heading, label, embed, target, via_alias)

    def resolve(self, source: str, name: str) -> tuple[str | None, bool]:
        """The note a link from source to name reaches, and whether only an alias matched."""
        if not name:
            return source, False  # [[#heading]]: a place in the note itself
        key = note_key(name)
        if "/" not in key:
            found = self._by_stem.get(key)
            if found:
                return _pick(source, found), False
            found = self._by_alias.get(key)
            return (_pick(source, found), True) if found else (None, False)
        if key.startswith(("./", "../")):
            key = posixpath.normpath(posixpath.join(posixpath.dirname(note_key(source)), key))
            if key.startswith("../"):
                return None, False  # outside the vault
            matches = [
                p for p in self._by_stem.get(posixpath.basename(key), []) if note_key(p[:-3]) == key
            ]
        else:
            key = key.lstrip("/")
            matches = [
                p
                for p in self._by_stem.get(posixpath.basename(key), [])
                if note_key(p[:-3]) == key or note_key(p[:-3]).endswith("/" + key)
            ]
        return (_pick(source, matches), False) if matches else (None, False)

    def _is_attachment(self, name: str) -> bool:
        ext = posixpath.splitext(name)[1].lower()
        if not ext or ext == ".md":
            return False
        if ext in ATTACHMENT_EXTS:
            return True
        if self._file_keys is None:
            self._file_keys = _other_files(self.root)
        key = note_key(name).lstrip("/")
        return any(f == key or f.endswith("/" + key) for f in self._file_keys)

    def outgoing(self, rel: str) -> list[Link]:
        """The links in one note, in file order."""
        return list(self.links.get(rel, []))

    def backlinks(self, rel: str) -> list[Link]:
        """The links in other notes that reach this one."""
        return [
            lk
            for source in sorted(self.links)
            if source != rel
            for lk in self.links[source]
            if lk.target == rel
        ]

    def graph(self) -> dict[str, set[str]]:
        """Each note's set of linked notes (self-links and broken links left out)."""
        return {
            rel: {lk.target for lk in links if lk.target and lk.target != rel}
            for rel, links in sorted(self.links.items())
        }


def _pick(source: str, candidates: list[str]) -> str:
    folder = posixpath.dirname(source)
    return min(candidates, key=lambda p: (posixpath.dirname(p) != folder, p.count("/"), p))


def _note_paths(wiki: Wiki, paths=None) -> list[str]:
    """Every markdown note of the vault: the tracks' files and loose files at the root."""
    root = f"{wiki.root}{os.sep}"
    found = wiki.iter_paths() if paths is None else paths
    rels = [str(p).removeprefix(root).replace(os.sep, "/") for _, p in found]
    for path in sorted(wiki.root.glob("*.md")):
        if not path.name.startswith(".") and path.is_file() and not path.is_symlink():
            rels.append(path.name)
    return sorted(set(rels))


def _other_files(root) -> set[str]:
    """The relative paths (as note_key gives them) of the non-markdown files outside dot-folders."""
    found = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(directory, root)
        for f in files:
            if not f.startswith(".") and not f.endswith(".md"):
                found.add(note_key(posixpath.normpath(posixpath.join(rel.replace(os.sep, "/"), f))))
    return found


# ----------------------------------------------------------------- the API


def _rel_of(wiki: Wiki, track: str, name: str) -> str:
    path = wiki.path_of(track, name)
    if not path.is_file():
        raise NotFound(f"no RecallFile {track}/{name}")
    return path.relative_to(wiki.root).as_posix()


def outgoing(wiki: Wiki, track: str, name: str) -> list[Link]:
    """The wikilinks in track/name, in file order (target None when broken)."""
    return LinkIndex(wiki).outgoing(_rel_of(wiki, track, name))


def link_graph(wiki: Wiki) -> dict[str, set[str]]:
    """Every note's relative path mapped to the notes it links to."""
    return LinkIndex(wiki).graph()


def broken_links(
    wiki: Wiki, paths: set[str] | None = None, index: LinkIndex | None = None
) -> list[Problem]:
    """`path:line: broken link [[x]]` for every link that reaches no note (only in paths if given)."""
    index = index or LinkIndex(wiki)
    return [
        Problem(rel, lk.line, f"broken link {lk.raw}")
        for rel, links in index.links.items()
        if paths is None or rel in paths
        for lk in links
        if lk.broken
    ]
