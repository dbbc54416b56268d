"""`memwiki hosts detect`: which agents are here, and whether memorize and retrieve work."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Config
from ..mining import claude_code, generic
from ..mining.base import HOSTS, get_source, host_api
from ..mining.records import parse_record
from . import claude_settings
from .inject import installed
from .textfile import read_text

SAMPLE_STREAMS = 3
SAMPLE_RECORDS = 200
DB_SUFFIXES = (".db", ".sqlite", ".vscdb")


@dataclass
class HostStatus:
    """What detect found for one host."""

    host: str
    found: bool  # some trace of the host exists on this machine
    memorize: bool  # a session log with at least one recognised conversation record
    session_location: str | None
    sessions: int
    sample: dict[str, int]  # verdict counts over the newest sessions' records
    retrieve: bool  # an instruction file memwiki can patch
    instruction_file: str | None
    installed: bool  # the managed block is in the instruction file
    hook_installed: bool | None  # claude-code only: the UserPromptSubmit hook is registered
    next_command: str | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "host": self.host,
            "found": self.found,
            "memorize": self.memorize,
            "session_location": self.session_location,
            "sessions": self.sessions,
            "sample": self.sample,
            "retrieve": self.retrieve,
            "instruction_file": self.instruction_file,
            "installed": self.installed,
            "hook_installed": self.hook_installed,
            "next_command": self.next_command,
            "notes": self.notes,
        }


def _sample(host: str, config: Config) -> tuple[str | None, int, Counter[str], list[str]]:
    source = get_source(host, config)
    location = source.location
    notes: list[str] = []
    counts: Counter[str] = Counter()
    try:
        refs = source.list_sessions()
    except Exception as exc:  # detection reports a broken store instead of failing
        return str(location) if location else None, 0, counts, [f"cannot list sessions: {exc}"]
    for ref in refs[:SAMPLE_STREAMS]:
        try:
            records = source.read(ref, None).records[:SAMPLE_RECORDS]
        except Exception as exc:  # same: one unreadable session must not hide the others
            notes.append(f"cannot read {ref.path}: {type(exc).__name__}")
            continue
        for raw in records:
            rec = parse_record(raw)
            counts[source.classify(rec).value if rec is not None else "drop"] += 1
    return str(location) if location else None, len(refs), counts, notes


def _next(host: str, st: HostStatus) -> str | None:
    if not st.found:
        return None
    if st.instruction_file is None and not st.installed:
        return f"memwiki install --host {host} --path ./AGENTS.md"
    if st.retrieve and not st.installed:
        return f"memwiki install --host {host}"
    if st.memorize:
        return f"memwiki bridge prepare --host {host}"
    return f"memwiki bridge prepare --host {host} --session-dir DIR"


def host_status(host: str, config: Config) -> HostStatus:
    """The status of one dedicated host at its default locations."""
    api = host_api(host)
    location, count, counts, notes = _sample(host, config)
    target = api.instruction_file(config)
    hook = None
    if host == claude_code.HOST:
        try:
            hook = claude_settings.hook_registered(read_text(claude_code.settings_file(config)))
        except Exception:  # an unreadable settings.json is reported by install, not here
            hook = False
    st = HostStatus(
        host=host,
        found=api.host_present(config) or count > 0,
        memorize=counts["message"] > 0,
        session_location=location,
        sessions=count,
        sample=dict(counts),
        retrieve=target is not None and target.parent.is_dir(),
        instruction_file=str(target) if target else None,
        installed=target is not None and installed(host, config),
        hook_installed=hook,
        next_command=None,
        notes=notes,
    )
    if target is None:
        st.notes.append("no user-level instruction file: install per project with --path")
    if st.found and count and not st.memorize:
        st.notes.append("sessions found, but no conversation record in the newest ones")
    st.next_command = _next(host, st)
    return st


def generic_status(config: Config, path: Path) -> HostStatus:
    """Sniff a directory of JSONL transcripts with the generic reader."""
    path = Path(path).expanduser()
    report = generic.sniff(path) if path.is_dir() else {"files": [], "verdicts": {}}
    notes = [f"{k}: {v} records" for k, v in sorted(report.get("dialects", {}).items())]
    memorize = bool(report.get("memorizable"))
    if not report["files"] and path.is_dir():
        if any(p.suffix in DB_SUFFIXES for p in path.rglob("*") if p.is_file()):
            notes.append("only databases here: this agent needs a dedicated adapter")
        else:
            notes.append("no *.jsonl files found")
    count = len(get_source("generic", config, path).list_sessions()) if path.is_dir() else 0
    return HostStatus(
        host="generic",
        found=path.is_dir(),
        memorize=memorize,
        session_location=str(path),
        sessions=count,
        sample=dict(report.get("verdicts", {})),
        retrieve=False,
        instruction_file=None,
        installed=False,
        hook_installed=None,
        next_command=(
            f"memwiki bridge prepare --host generic --session-dir {path}" if memorize else None
        ),
        notes=notes,
    )


def detect_hosts(config: Config, path: Path | None = None) -> list[HostStatus]:
    """Every dedicated host's status, plus the generic reader's verdict on path if given."""
    statuses = [host_status(h, config) for h in HOSTS if h != "generic"]
    if path is not None:
        statuses.append(generic_status(config, Path(path)))
    return statuses
