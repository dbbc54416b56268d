"""`memwiki schedule --host H`: a marked user-crontab entry running the bridging wrapper.

The crontab edits are pure functions over the crontab text; only read_crontab and
write_crontab run the `crontab` command.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import InvalidInput, NotFound, StorageError
from ..executable import client_command, memwiki_command, memwiki_executable
from ..mining import openclaw
from ..mining.base import host_api, host_module, relative_home_vars
from .textfile import delete_file, write_text
from .texts import render, task_prompt, template

# The host's headless mode, reading the task prompt from $PROMPT (set by the wrapper).
# {client} is the client's executable and {memwiki} memwiki's, both absolute when install
# finds them: cron's PATH holds neither. Flags are those of the versions in
# tests/e2e/versions.toml (make e2e runs each of these command lines).
HEADLESS = {
    "claude-code": (
        '{client} -p "$PROMPT" --allowedTools {allow_memwiki} Read Edit Write Glob Grep'
    ),
    # Codex's workspace-write sandbox mounts .git read-only, and bridge commit writes the
    # wiki's git refs: the run needs the full-access sandbox (exec never asks approvals).
    "codex": '{client} exec --sandbox danger-full-access --skip-git-repo-check "$PROMPT"',
    "cursor": '{client} --trust -p "$PROMPT"',
    "hermes": '{client} -z "$PROMPT"',
    # --local: without it `openclaw agent` goes through a gateway, whose tools see neither
    # the wrapper's environment nor its directory. A session id per run: a fixed one would
    # append every run to one session and resend the earlier runs' history to the model.
    "openclaw": (
        "{client} agent --local --agent main"
        f' --session-id "{openclaw.BRIDGE_SESSION_PREFIX}$(date +%Y%m%d%H%M%S)-$$"'
        ' --message "$PROMPT"'
    ),
}
CLIENT = {
    "claude-code": "claude",
    "codex": "codex",
    "cursor": "cursor-agent",
    "hermes": "hermes",
    "openclaw": "openclaw",
}
# Hourly, at a different minute per host so that two hosts' runs rarely overlap.
MINUTE = {"claude-code": 7, "codex": 17, "cursor": 27, "openclaw": 37, "hermes": 47}
CRONTAB = ("crontab",)


@dataclass(frozen=True)
class BridgeFiles:
    """The files a scheduled host run uses, in <config dir>/bridge/."""

    wrapper: Path
    prompt: Path
    lock: Path
    log: Path


@dataclass
class ScheduleResult:
    """What schedule install/uninstall did."""

    host: str
    entry: str
    action: str  # installed, updated, unchanged, removed, absent
    files: list[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"host": self.host, "entry": self.entry, "action": self.action, "files": self.files}


def marker(host: str) -> str:
    """The comment that marks memwiki's crontab line for a host."""
    return f"# memwiki:bridge:{host}"


def _check(host: str) -> None:
    host_module(host)
    if host not in HEADLESS:
        raise InvalidInput(f"{host} has no headless mode to schedule; run its task prompt yourself")


def bridge_files(host: str, config: Config) -> BridgeFiles:
    """Where the wrapper, prompt, lock and log of a host's scheduled run live."""
    base = config.config_file.parent / "bridge"
    return BridgeFiles(
        base / f"{host}.sh", base / f"{host}.prompt.md", base / f"{host}.lock", base / f"{host}.log"
    )


def memwiki_bin() -> Path:
    """The memwiki executable of this installation (cron has no useful PATH)."""
    return memwiki_executable() or Path("memwiki")


def headless_command(host: str, config: Config) -> str:
    """The host's headless command line with absolute client and memwiki paths filled in."""
    _check(host)
    exe = memwiki_executable()
    return HEADLESS[host].format(
        client=client_command(CLIENT[host], config.host_env.get("PATH")),
        memwiki=memwiki_command(),
        # Claude Code matches the command's first word, so the pattern names the same path.
        allow_memwiki=shlex.quote(f"Bash({exe or 'memwiki'}:*)"),
    )


# The scheduled run's log (the agent's whole output, every hour) is rotated by the wrapper
# past this many bytes: before, it grew by each run's output for ever.
BRIDGE_LOG_LIMIT = 1024 * 1024


def render_wrapper(host: str, config: Config, headless: str | None = None) -> str:
    """The wrapper script text for a host (headless overrides the host's command line)."""
    _check(host)
    files = bridge_files(host, config)
    q = shlex.quote
    return render(
        template("bridge-wrapper.sh"),
        HOST=host,
        MEMWIKI=memwiki_command(),
        WIKI=q(str(config.wiki_path)),
        BIN_DIR=q(str(memwiki_bin().parent)) if memwiki_bin().is_absolute() else '"$PATH"',
        INSTALL_PATH=q(config.host_env.get("PATH") or "/usr/bin:/bin"),
        PROMPT_FILE=q(str(files.prompt)),
        LOCK=q(str(files.lock)),
        LOG=q(str(files.log)),
        LOG_LIMIT=str(BRIDGE_LOG_LIMIT),
        WORKDIR=q(str(config.wiki_path)),
        HEADLESS=headless if headless is not None else headless_command(host, config),
        HOME_EXPORTS=home_exports(host, config),
    )


def home_exports(host: str, config: Config) -> str:
    """Shell lines exporting the host's home variables as set where schedule --install ran."""
    # cron starts without CLAUDE_CONFIG_DIR, CODEX_HOME, …: without them the agent and
    # `bridge prepare` in the run would use the default homes, not the person's.
    values = [(v, (config.host_env.get(v) or "").strip()) for v in host_api(host).HOME_VARS]
    # The wrapper runs in the run's workspace: a relative value (or a literal "~") would name
    # a folder there. Exported as the absolute folder memwiki read where it was installed.
    relative = dict(relative_home_vars(host, config))
    values = [(v, os.path.abspath(x) if v in relative else x) for v, x in values]
    lines = [f"export {name}={shlex.quote(value)}" for name, value in values if value]
    return "\n".join(lines) or "# (none of them was set)"


def schedule_entry(host: str, config: Config) -> str:
    """The crontab line (no newline) that runs the host's wrapper every hour."""
    _check(host)
    files = bridge_files(host, config)
    command = f"/bin/sh {shlex.quote(str(files.wrapper))} >> {shlex.quote(str(files.log))} 2>&1"
    # In a crontab, an unescaped % ends the command.
    return f"{MINUTE[host]} * * * * {command.replace('%', chr(92) + '%')} {marker(host)}"


def _ours(line: str, host: str) -> bool:
    return line.rstrip("\r\n").endswith(marker(host))


def crontab_with_entry(text: str, host: str, entry: str) -> str:
    """Crontab text holding entry: replaces memwiki's line for host in place, else appends it."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _ours(line, host):
            ending = line[len(line.rstrip("\r\n")) :] or "\n"
            lines[i] = entry + ending
            return "".join(ln for j, ln in enumerate(lines) if j <= i or not _ours(ln, host))
    # cron ignores a last line without its newline, so one is added before the entry.
    if text and not text.endswith("\n"):
        text += "\n"
    return text + entry + "\n"


def crontab_without_entry(text: str, host: str) -> str:
    """Crontab text without memwiki's line for host (every other byte kept)."""
    return "".join(ln for ln in text.splitlines(keepends=True) if not _ours(ln, host))


def read_crontab(cmd: Sequence[str] = CRONTAB) -> str:
    """The current user's crontab ("" when there is none)."""
    try:
        proc = subprocess.run(
            [*cmd, "-l"], capture_output=True, encoding="utf-8", errors="replace", timeout=30
        )
    except FileNotFoundError:
        raise NotFound("the crontab command is not installed") from None
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower():
            return ""
        raise StorageError(f"crontab -l failed: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout


def write_crontab(text: str, cmd: Sequence[str] = CRONTAB) -> None:
    """Replace the current user's crontab with text (an empty text removes the crontab)."""
    args = [*cmd, "-r"] if not text.strip() else [*cmd, "-"]
    try:
        proc = subprocess.run(
            args, input=text, capture_output=True, encoding="utf-8", errors="replace", timeout=30
        )
    except FileNotFoundError:
        raise NotFound("the crontab command is not installed") from None
    if proc.returncode != 0 and "no crontab" not in proc.stderr.lower():
        raise StorageError(f"crontab {args[-1]} failed: {proc.stderr.strip()[:200]}")


def install_schedule(
    host: str, config: Config, cmd: Sequence[str] = CRONTAB, headless: str | None = None
) -> ScheduleResult:
    """Write the wrapper and prompt files and add (or refresh) the crontab entry."""
    entry = schedule_entry(host, config)
    files = bridge_files(host, config)
    # Read first: without a crontab command nothing is installed, so nothing is written.
    current = read_crontab(cmd)
    write_text(files.prompt, task_prompt(host, memwiki_command()))
    write_text(files.wrapper, render_wrapper(host, config, headless))
    new = crontab_with_entry(current, host, entry)
    if new == current:
        action = "unchanged"
    else:
        action = "updated" if any(_ours(ln, host) for ln in current.splitlines()) else "installed"
        write_crontab(new, cmd)
    return ScheduleResult(host, entry, action, [str(files.wrapper), str(files.prompt)])


def uninstall_schedule(host: str, config: Config, cmd: Sequence[str] = CRONTAB) -> ScheduleResult:
    """Remove the crontab entry and the files install_schedule wrote."""
    entry = schedule_entry(host, config)
    files = bridge_files(host, config)
    try:
        current = read_crontab(cmd)
    except NotFound:
        current = None  # no crontab command: no entry can exist, but files may
    new = crontab_without_entry(current or "", host)
    action = "absent" if current is None or new == current else "removed"
    if action == "removed":
        write_crontab(new, cmd)
    removed = [str(p) for p in (files.wrapper, files.prompt, files.lock) if p.exists()]
    for path in (files.wrapper, files.prompt, files.lock):
        delete_file(path)
    return ScheduleResult(host, entry, action, removed)
