"""`memwiki hosts detect`: which agents are here, and whether memorize and retrieve work."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import MemwikiError
from ..executable import NAME, broken_paths, memwiki_executable
from ..mining import claude_code, generic
from ..mining.base import HOSTS, get_source, host_api, relative_home_vars
from ..mining.records import parse_record
from . import claude_settings
from .inject import install, installed, instruction_target
from .schedule import CLIENT, bridge_files
from .textfile import read_text
from .texts import template

SAMPLE_STREAMS = 3
SAMPLE_RECORDS = 200
DB_SUFFIXES = (".db", ".sqlite", ".vscdb")
VERSION_TIMEOUT_S = 15
# The first dotted version in `--version` output ("2.1.197 (Claude Code)", "v0.19.0 (…)").
_VERSION = re.compile(r"(?<![\d.])(\d+\.\d+(?:\.\d+)?)(?![\d.])")


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
    version: str | None = None  # the installed client's version (`<client> --version`)
    version_tested: bool | None = None  # within the versions make e2e passed with
    tested_versions: list[str] = field(default_factory=list)

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
            "version": self.version,
            "version_tested": self.version_tested,
            "tested_versions": self.tested_versions,
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
    notes.extend(source.problems)  # a locked or corrupt store, whose sessions are not counted
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
    if not st.sessions:
        return None  # nothing to mine yet (a note says so), and no other folder to name
    return f"memwiki bridge prepare --host {host} --session-dir DIR"


def tested_versions() -> dict[str, list[str]]:
    """Per host, the client versions the end-to-end suite passed with (client-versions.toml)."""
    data = tomllib.loads(template("client-versions.toml"))
    return {host: [str(v) for v in pin.get("passed", [])] for host, pin in data.items()}


def client_version(host: str, config: Config) -> str | None:
    """The installed client's version from `<client> --version`, or None when not found."""
    name = CLIENT.get(host)
    path = config.host_env.get("PATH")
    exe = shutil.which(name, path=path) if name and path else None
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--version"],
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(proc.stdout or proc.stderr or "")
    return match.group(1) if match else None


def _stale_paths(host: str, config: Config, target: Path | None) -> list[tuple[str, str]]:
    # install wrote absolute paths to memwiki; a moved or deleted virtualenv (or a pipx/uv
    # tool uninstalled) breaks them. Each note comes with the command that rewrites it.
    install_fix = f"memwiki install --host {host}"
    files = [(target, install_fix)] if target else []
    if host == claude_code.HOST:
        files.append((claude_code.settings_file(config), install_fix))
    if host in CLIENT:
        schedule_fix = f"memwiki schedule --host {host} --install"
        files.append((bridge_files(host, config).wrapper, schedule_fix))
        files.append((bridge_files(host, config).prompt, schedule_fix))
    stale = []
    for path, fix in files:
        try:
            text = read_text(path)
        except Exception:  # unreadable files are reported by install, not here
            continue
        for gone, why in broken_paths(text or "").items():
            stale.append((f"{path} runs {gone}, {why}: run `{fix}` again", fix))
    if host == claude_code.HOST:
        stale.extend(_bare_hook(claude_code.settings_file(config), install_fix))
    return stale


# The PATH Claude Code's hook may run with (started from a desktop launcher or a service).
MINIMAL_PATH = "/usr/bin:/bin"


def _bare_hook(settings: Path, fix: str) -> list[tuple[str, str]]:
    # A memwiki before 2026-12-08 installed with `pip install --user` wrote the bare
    # `memwiki hook claude-code` (its script is not beside python): `not found` on a
    # minimal PATH. Named only when install would now write an absolute path instead.
    exe = memwiki_executable()
    if exe is None or shutil.which(NAME, path=MINIMAL_PATH) is not None:
        return []
    try:
        data = json.loads(read_text(settings) or "{}")
        commands = claude_settings.hook_commands(data) if isinstance(data, dict) else []
    except Exception:  # an unreadable settings.json is reported by install, not here
        return []
    if not any(c.split()[:1] == [NAME] for c in commands):
        return []
    note = (
        f"{settings} runs a bare `{NAME}`, which a hook started with PATH={MINIMAL_PATH} "
        f"does not find (this one is {exe}): run `{fix}` again"
    )
    return [(note, fix)]


def _version_notes(st: HostStatus, host: str, config: Config) -> None:
    st.tested_versions = tested_versions().get(host, [])
    st.version = client_version(host, config) if st.tested_versions else None
    if st.version is None or not st.tested_versions:
        return
    st.version_tested = st.version in st.tested_versions
    if not st.version_tested:
        st.notes.append(
            f"{host} {st.version} is not a version memwiki's end-to-end suite passed with "
            f"({', '.join(st.tested_versions)}): its log format may have drifted"
        )


def host_status(host: str, config: Config) -> HostStatus:
    """The status of one dedicated host at its default locations."""
    api = host_api(host)
    location, count, counts, notes = _sample(host, config)
    try:
        target = instruction_target(host, config) if api.instruction_file(config) else None
        unknown = None
    except MemwikiError as exc:  # e.g. an openclaw.json memwiki cannot follow
        target, unknown = None, exc
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
    if unknown is not None:
        st.notes.append(f"install would stop: {unknown}")
    elif target is None:
        st.notes.append("no user-level instruction file: install per project with --path")
    stale = st.installed and target is not None and not installed(host, config, target)
    if stale:
        # Codex: the block went into AGENTS.md before AGENTS.override.md, which wins, had text.
        st.notes.append(
            f"the block is in a file {host} does not read while {target} has text: "
            f"run `memwiki install --host {host}` to move it there"
        )
    if st.retrieve and st.found:
        try:  # what install would say about these files, said here before the user runs it
            install(host, config, dry_run=True)
        except MemwikiError as exc:
            st.notes.append(f"install would stop: {exc}")
    if st.found and count and not st.memorize:
        st.notes.append("sessions found, but no conversation record in the newest ones")
    elif st.found and not count:
        st.notes.append(f"no sessions yet: they are mined once {host} has been used")
    stale_paths = _stale_paths(host, config, target)
    st.notes.extend(note for note, _ in stale_paths)
    for name, value in relative_home_vars(host, config):
        st.notes.append(
            f"{name}={value!r} is not an absolute path: {host} reads it in the folder it "
            f"starts in (a '~' is a folder named '~' there), here {Path(value).absolute()}; "
            "set it to an absolute path"
        )
    _version_notes(st, host, config)
    # A hook or schedule running a memwiki that is gone fails on every prompt or every
    # hour: rewriting it comes before mining (next_command was None or `bridge prepare`).
    fixes = [fix for _, fix in stale_paths]
    if stale:
        st.next_command = f"memwiki install --host {host}"
    else:
        st.next_command = fixes[0] if fixes else _next(host, st)
    return st


def generic_status(config: Config, path: Path) -> HostStatus:
    """Sniff a directory of JSONL transcripts with the generic reader."""
    path = Path(path).expanduser()
    report = generic.sniff(path) if path.is_dir() else {"files": [], "verdicts": {}}
    notes = [
        f"{k}: {v} record{'' if v == 1 else 's'}"
        for k, v in sorted(report.get("dialects", {}).items())
    ]
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


def broken_installs(config: Config) -> list[str]:
    """Per file install or schedule wrote, a note when the memwiki it runs cannot run."""
    notes: list[str] = []
    for host in HOSTS:
        if host == "generic":
            continue
        try:
            target = (
                instruction_target(host, config)
                if host_api(host).instruction_file(config)
                else None
            )
        except MemwikiError:  # a config memwiki cannot follow: detect says so
            target = None
        notes.extend(note for note, _ in _stale_paths(host, config, target))
    return notes
