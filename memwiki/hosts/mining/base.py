"""The transcript-source interface every host adapter implements, and the host registry."""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from ...config import Config
from ...errors import InvalidInput
from .records import Verdict

# The one registry of hosts: name -> module in this package (each module is a Host).
REGISTRY = {
    "claude-code": "claude_code",
    "codex": "codex",
    "cursor": "cursor",
    "openclaw": "openclaw",
    "hermes": "hermes",
    "generic": "generic",
}
HOSTS = tuple(REGISTRY)
SCHEMA_VERSION = "1.0"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
SKIP_DIRS = frozenset({".cache", ".npm", ".git", "node_modules", "__pycache__"})


@dataclass(frozen=True)
class SessionRef:
    """One readable stream of records: a JSONL file or one session inside a database."""

    host: str
    key: str  # cursor key, unique per stream within a host
    session_id: str  # the id the host uses (owner session for subagent streams)
    path: Path  # the file or database holding it
    mtime: float  # last activity, for newest-first order
    signature: str  # changes whenever the stream may have grown
    parent_id: str | None = None
    aliases: tuple[str, ...] = ()  # other ids a skip list may name (e.g. OpenClaw cron job)

    def __post_init__(self) -> None:
        # Ids are often file names; see path_text. Mended here, where every ref is made, so
        # that a cursor key is the same string on every read.
        for name in ("key", "session_id", "parent_id"):
            value = getattr(self, name)
            if isinstance(value, str):  # a damaged database row may hold anything
                object.__setattr__(self, name, path_text(value))
        aliases = tuple(path_text(a) if isinstance(a, str) else a for a in self.aliases)
        object.__setattr__(self, "aliases", aliases)


def path_text(value: str) -> str:
    """A string taken from a file name, as text: each byte that is not UTF-8 written as \\xNN."""
    # The OS hands such bytes over as lone surrogates, which cannot be written as UTF-8: one
    # session file named with one made every `bridge prepare` of its host fail (exit 70).
    # \xNN rather than U+FFFD keeps two such names apart.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


@dataclass
class SessionSlice:
    """What is new in one stream since its cursor: the canonical session and bookkeeping."""

    host: str
    session_id: str
    key: str
    source_path: str
    cursor: dict[str, Any]  # the stream's new cursor entry, to store once committed
    counts: dict[str, int]
    session: dict[str, Any] | None  # schema 1.0 session, or None when no message is new
    cwd: str | None = None  # the session's working directory, when the host records it
    problems: list[str] = field(default_factory=list)  # records that could not be decoded
    # The file line of the first record that is not a JSON object (counts["not_json"]).
    not_json_line: int | None = None

    @property
    def memorizable(self) -> bool:
        """True when the slice holds at least one message worth memorizing."""
        return self.session is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (the session itself included)."""
        return {
            "host": self.host,
            "session_id": self.session_id,
            "key": self.key,
            "source_path": self.source_path,
            "cursor": self.cursor,
            "counts": self.counts,
            "session": self.session,
            "cwd": self.cwd,
        }


@dataclass
class ReadResult:
    """Raw records after a cursor plus the cursor entry that follows them."""

    records: list[Any]
    cursor: dict[str, Any]
    extra_drops: int = 0  # records the reader itself recognised as duplicates
    # Records that could not be decoded (e.g. a compressed event that does not unpack): the
    # cursor stops before the first one, so they are offered again, never silently passed.
    undecodable: list[str] = field(default_factory=list)
    # The 1-based line of each record in its file (JSONL sources), to say where a bad one is.
    lines: list[int] | None = None


class TranscriptSource(ABC):
    """Where a host keeps its sessions and how to read and classify their records."""

    host: str = ""

    def __init__(self, config: Config, session_dir: Path | None = None):
        self.config = config
        self.session_dir = Path(session_dir).expanduser() if session_dir else None
        # Stores list_sessions could not open (locked, corrupt): their sessions are left out
        # of the listing, so their cursors stay, and the caller reports them to the user.
        self.problems: list[str] = []
        # The cursor's stream entries (remember): what listing may take from them unread.
        self.known: dict[str, Any] = {}

    def remember(self, streams: dict[str, Any]) -> None:
        """Give the source the cursor's stream entries before it lists sessions."""
        self.known = streams

    @abstractmethod
    def default_location(self) -> Path | None:
        """The host's default session location, from config.home and config.host_env."""

    @property
    def location(self) -> Path | None:
        """The explicit session_dir if given, else the default location."""
        return self.session_dir or self.default_location()

    def root_dir(self) -> Path | None:
        """The location when it is an existing directory; None means nothing to list."""
        root = self.location
        return root if root is not None and root.is_dir() else None

    @abstractmethod
    def list_sessions(self) -> list[SessionRef]:
        """Every stream found, newest first."""

    @abstractmethod
    def read(self, ref: SessionRef, entry: dict[str, Any] | None) -> ReadResult:
        """The records after the cursor entry (None = from the start)."""

    @abstractmethod
    def classify(self, record: dict[str, Any]) -> Verdict:
        """MESSAGE, TOOL or DROP for one parsed record."""

    @abstractmethod
    def to_items(
        self, record: dict[str, Any], verdict: Verdict, ctx: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Canonical schema-1.0 items for a kept record."""

    def recognizes(self, record: dict[str, Any]) -> bool:
        """False when the record's shape is unknown to this reader (counted as unrecognized)."""
        return True

    def unchanged(self, ref: SessionRef, entry: dict[str, Any] | None) -> bool:
        """True when the stream cannot have grown since the cursor entry was taken."""
        return entry is not None and bool(entry) and entry.get("sig") == ref.signature


class Host(Protocol):
    """What every host module declares (claude_code, codex, …): the one host interface."""

    HOST: str
    # The variable naming the session a scheduled run is in (hosts.md §9), or None.
    SELF_SESSION_VAR: str | None
    # The variables that move the host's files (its config home, state, workspace): the
    # scheduled run must see the same ones, and cron starts without them.
    HOME_VARS: tuple[str, ...]
    SOURCE: type[TranscriptSource]  # the module's transcript source class

    def instruction_file(self, config: Config) -> Path | None:
        """The user-level instruction file the managed block goes into (None: per project)."""
        ...

    def host_present(self, config: Config) -> bool:
        """True when some trace of the host exists on this machine."""
        ...


def host_module(host: str) -> str:
    """The module name for a host, or InvalidInput for an unknown host."""
    if host not in REGISTRY:
        raise InvalidInput(f"unknown host {host!r} (known: {', '.join(HOSTS)})")
    return REGISTRY[host]


def host_api(host: str) -> Host:
    """The host's module, typed as the Host interface."""
    return cast(Host, importlib.import_module(f"{__package__}.{host_module(host)}"))


def get_source(host: str, config: Config, session_dir: Path | None = None) -> TranscriptSource:
    """The transcript source for a host name."""
    return host_api(host).SOURCE(config, session_dir)


def env_path(config: Config, name: str) -> Path | None:
    """A host's home variable as the folder its client opens, or None when unset or blank."""
    value = (config.host_env.get(name) or "").strip()
    # Taken literally, as Claude Code 2.1.197, Codex 0.171.0 and Hermes 0.19 take it (seen in
    # real runs): no "~" expansion, and a relative value (a "~/x" a systemd unit or a quoted
    # dotenv line leaves) is a folder under the working directory. Expanding "~" read a
    # folder the client never wrote; detect notes such a value (relative_home_vars).
    return Path(os.path.abspath(value)) if value else None


def relative_home_vars(host: str, config: Config) -> list[tuple[str, str]]:
    """(variable, value) of the host's home variables set to a path that is not absolute."""
    found = []
    for name in host_api(host).HOME_VARS:
        value = (config.host_env.get(name) or "").strip()
        # OPENCLAW_PROFILE is a name, and OpenClaw itself expands a leading "~" in its paths.
        if name == "OPENCLAW_PROFILE" or (host == "openclaw" and value.startswith("~")):
            continue
        if value and not os.path.isabs(value):
            found.append((name, value))
    return found


def file_signature(path: Path) -> tuple[str, float]:
    """(size:mtime_ns, mtime) of a file, or ("missing", 0) when it vanished."""
    try:
        st = path.stat()
    except OSError:
        return "missing", 0.0
    return f"{st.st_size}:{st.st_mtime_ns}", st.st_mtime


def walk_jsonl(root: Path) -> Iterable[Path]:
    """Every *.jsonl file under root, skipping tooling directories."""
    if not root.is_dir():
        return
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            # scandir, not iterdir: the entry types come with the listing, so a history of
            # thousands of sessions costs no stat per entry to walk (each file's signature
            # is its one stat). Same readdir order as before, so the same refs.
            with os.scandir(current) as found:
                entries = list(found)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    stack.append(current / entry.name)
            # len > 6: a bare ".jsonl" is a dotfile without a suffix (Path.suffix rule)
            elif entry.name.endswith(".jsonl") and len(entry.name) > 6 and entry.is_file():
                yield current / entry.name


def newest_first(refs: Iterable[SessionRef]) -> list[SessionRef]:
    """Refs sorted by last activity, newest first (key breaks ties for a stable order)."""
    return sorted(refs, key=lambda r: (-r.mtime, r.key))


def read_jsonl_lines(path: Path, start: int) -> tuple[list[bytes], int]:
    """Complete lines after the first `start` ones, and the new line count."""
    lines, count, _ = read_jsonl_tail(path, start)
    return lines, count


def read_jsonl_tail(
    path: Path, start: int, offset: int | None = None
) -> tuple[list[bytes], int, int | None]:
    """Complete lines after the first `start` ones, the new line count and the byte offset
    after them (None for a UTF-16 log, which is decoded whole).

    offset, the byte offset the cursor recorded after its `start` lines, lets the read
    begin there: a session of hundreds of MB that grew by a few lines is read from its
    end, not counted through from its first line. Without it (a cursor older than the
    offset), or when the file no longer ends a line there, the lines are counted. A last
    line without its newline is still being written by the host: leave it for the next
    read. A file with fewer lines than the cursor was rewritten: start over.
    """
    try:
        with path.open("rb") as f:
            if f.read(2) in UTF16_BOMS:
                # Windows PowerShell's `>` writes UTF-16 (a generic export): split on b"\n",
                # every line after the first was misaligned and skipped as not JSON.
                f.seek(0)
                data = f.read().decode("utf-16", "replace").encode("utf-8", "replace")
                complete = data[: data.rfind(b"\n") + 1]
                found = complete.split(b"\n")[:-1] if complete else []
                if len(found) < start:
                    return read_jsonl_tail(path, 0)
                return found[start:], len(found), None
            if offset is not None and _ends_line(f, start, offset):
                f.seek(offset)
                count = start
            else:
                f.seek(0)
                count = offset = 0
            # Line by line: a log of hundreds of MB is never held whole (only what is
            # after the cursor), and the cursor's lines are only counted.
            lines: list[bytes] = []
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                if count >= start:
                    lines.append(raw[:-1])
                count += 1
                offset += len(raw)
    except OSError:
        # Nothing read, the cursor stays at start; no offset, since one counted part of the
        # way through would not be start's (the next read counts the lines again).
        return [], start, None
    if count < start:
        return read_jsonl_tail(path, 0)
    return lines, count, offset


def _ends_line(f: Any, start: int, offset: int) -> bool:
    # The cursor's offset is usable where a line ends (or at 0 for no line): a file cut
    # shorter or rewritten is counted again instead, as a cursor without offset is.
    if offset <= 0 or start <= 0:
        return offset == 0 and start == 0
    f.seek(offset - 1)
    return bool(f.read(1) == b"\n")


class JsonlSource(TranscriptSource):
    """A source whose streams are append-only JSONL files (cursor = complete line count)."""

    def list_sessions(self) -> list[SessionRef]:
        """Every stream under the location, newest first; none when the location is missing."""
        root = self.root_dir()
        return [] if root is None else newest_first(self.sessions_in(root))

    @abstractmethod
    def sessions_in(self, root: Path) -> Iterable[SessionRef]:
        """The streams below an existing location directory, in any order."""

    def ref_for(self, path: Path, key: str, session_id: str, **extra: Any) -> SessionRef:
        """A SessionRef for one JSONL file."""
        sig, mtime = file_signature(path)
        return SessionRef(self.host, key, session_id, path, mtime, sig, **extra)

    def read(self, ref: SessionRef, entry: dict[str, Any] | None) -> ReadResult:
        """Complete lines after the cursor's line count."""
        start = int((entry or {}).get("pos", 0))
        known = (entry or {}).get("off")
        lines, total, offset = read_jsonl_tail(
            ref.path, start, known if isinstance(known, int) else None
        )
        cursor = {
            "pos": total,
            "sig": ref.signature,
            "session_id": ref.session_id,
            "path": str(ref.path),
        }
        if offset is not None:
            cursor["off"] = offset  # bytes of the `pos` lines: the next read starts there
        kept = [(n, ln) for n, ln in enumerate(lines, start=start + 1) if ln.strip()]
        return ReadResult(records=[ln for _, ln in kept], cursor=cursor, lines=[n for n, _ in kept])
