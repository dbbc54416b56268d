"""`memwiki install/uninstall --host H`: the managed block and, for Claude Code, the hook."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import InvalidInput, MemwikiError, NotFound, StateError, StorageError
from ..executable import memwiki_command
from ..mining import claude_code, codex
from ..mining.base import host_api
from . import block, claude_settings, written
from .textfile import check_writable, delete_file, read_text, write_text
from .texts import instruction_block, is_instruction_block


@dataclass
class FileChange:
    """What install or uninstall did (or, in a dry run, would do) to one file."""

    path: str
    kind: str  # "instruction" or "settings"
    action: str  # created, appended, updated, added, unchanged, removed, deleted, absent

    def to_dict(self) -> dict[str, str]:
        """JSON-serialisable form."""
        return {"path": self.path, "kind": self.kind, "action": self.action}


@dataclass
class InstallResult:
    """The outcome of install or uninstall for one host."""

    host: str
    dry_run: bool
    changes: list[FileChange] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when some file was (or would be) written or deleted."""
        return any(c.action not in ("unchanged", "absent") for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "host": self.host,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "changes": [c.to_dict() for c in self.changes],
        }


def instruction_target(host: str, config: Config, path: Path | None = None) -> Path:
    """The instruction file install patches: path if given, else the host's default."""
    if path is not None:
        return Path(path).expanduser()
    target = host_api(host).instruction_file(config)
    if host == codex.HOST and target is not None:
        target = _codex_target(config, target)
    if target is None:
        raise InvalidInput(
            f"{host} has no user-level instruction file; pass --path (e.g. ./AGENTS.md)"
        )
    return target


def _codex_target(config: Config, codex_reads: Path) -> Path:
    """AGENTS.override.md when it holds text of the user's, else AGENTS.md."""
    override, plain = codex.instruction_files(config)
    if codex_reads != override:
        return codex_reads
    # memwiki's own block is no reason to read the override: an older memwiki put it into
    # an empty override, and from then on Codex read that instead of the user's AGENTS.md.
    try:
        rest = block.remove_block(read_text(override) or "", str(override)) or ""
    except MemwikiError:  # not UTF-8, a stray marker: install will say so about the file
        return override
    return override if rest.strip() else plain


def block_files(host: str, config: Config, path: Path | None = None) -> list[Path]:
    """Every file the host's block may be in: install's target first, then the others.

    Codex reads AGENTS.override.md instead of AGENTS.md once it holds text, so a block
    installed before that is still in AGENTS.md: install moves it, uninstall and detect look
    in both.
    """
    target = instruction_target(host, config, path)
    if path is not None or host != codex.HOST:
        return [target]
    return [target, *(f for f in codex.instruction_files(config) if f != target)]


def _has_block(text: str | None, path: Path) -> bool:
    return text is not None and block.find_block(text, str(path)) is not None


def _need_parent(path: Path, host: str, config: Config) -> None:
    if path.parent.is_dir():
        return
    if host_api(host).host_present(config):
        # `~/.openclaw` without its workspace: installed, but never run far enough to make it
        raise NotFound(
            f"{path.parent} does not exist yet: run {host} once so that it makes it, "
            "then install again (or pass --path)"
        )
    raise NotFound(f"{path.parent} does not exist: is {host} installed? (or pass --path)")


def _remember_settings(config: Config, path: Path, before: str | None, after: str) -> None:
    record = written.load(config, written.CLAUDE_SETTINGS)
    entry = record.get(str(path))
    if not (isinstance(entry, dict) and entry.get("written") == written.digest(before)):
        # Only what the surgical removal could not give back is kept (the file did not
        # exist, was `{}` or empty, had an empty array): settings.json may hold secrets,
        # and a copy of it is kept only where it is needed. Else a refresh of our own
        # write: what was recorded of the original stays.
        exact = before is not None and claude_settings.remove_hook(after, str(path)) == before
        entry = {} if exact else {"original": before}
    record[str(path)] = {**entry, "written": written.digest(after)}
    written.save(config, written.CLAUDE_SETTINGS, record)


def _settings_without_hook(config: Config, path: Path, before: str) -> str | None:
    """The settings text uninstall leaves: the bytes from before install when the file is as
    install wrote it, else the text with the hook surgically removed (None: delete)."""
    entry = written.load(config, written.CLAUDE_SETTINGS).get(str(path))
    if (
        isinstance(entry, dict)
        and "original" in entry
        and entry.get("written") == written.digest(before)
    ):
        original = entry["original"]
        return original if isinstance(original, str) else None
    return claude_settings.remove_hook(before, str(path))


def _typed_text(config: Config, path: Path, text: str) -> bool:
    """True when a block in text holds words that memwiki did not write there."""
    mine = written.load(config, written.BLOCKS).get(str(path))
    return any(
        body.strip() and not is_instruction_block(body) and written.digest(body) != mine
        for body in block.bodies(text, str(path))
    )  # an emptied block holds nothing to lose


def _keep_typed_text(config: Config, path: Path, text: str | None, force: bool, verb: str) -> None:
    # A note typed between the markers (natural in an AGENTS.md) would be replaced or
    # deleted with the block, silently: refused unless the person says --force.
    if text is not None and not force and _typed_text(config, path, text):
        raise StateError(
            f"{path}: the memwiki block holds text memwiki did not write; move your text "
            f"out of the block ({block.BEGIN} ... {block.END}) or pass --force to {verb} it"
        )


def _remember_block(config: Config, path: Path, text: str) -> None:
    record = written.load(config, written.BLOCKS)
    mine = written.digest(block.bodies(text, str(path))[0])
    if record.get(str(path)) != mine:
        written.save(config, written.BLOCKS, {**record, str(path): mine})


def _stale_blocks(
    host: str, config: Config, path: Path | None, target: Path
) -> list[tuple[Path, str | None, str]]:
    """(file, its text without the block or None to delete, action) for each file other than
    target that holds the host's block; worked out before anything is written."""
    found = []
    for other in block_files(host, config, path)[1:]:
        text = read_text(other)
        if text is not None and _has_block(text, other):
            after = block.remove_block(text, str(other))
            found.append((other, after, "deleted" if after is None else "removed"))
    return found


def _write_or_delete(target: Path, after: str | None) -> None:
    if after is None:
        delete_file(target)
    else:
        write_text(target, after)


def install(
    host: str,
    config: Config,
    path: Path | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> InstallResult:
    """Plant (or refresh in place) the managed block; for claude-code also register the hook.

    force: replace a block that holds text memwiki did not write (refused otherwise)."""
    result = InstallResult(host, dry_run)
    target = instruction_target(host, config, path)
    _need_parent(target, host, config)
    before = read_text(target)
    _keep_typed_text(config, target, before, force, "replace")
    # The absolute path, refreshed on every install: agents run tools in a login shell.
    after = block.apply_block(before, instruction_block(memwiki_command()), str(target))
    if before is None:
        action = "created"
    elif after == before:
        action = "unchanged"
    else:
        action = "updated" if block.find_block(before, str(target)) else "appended"
    result.changes.append(FileChange(str(target), "instruction", action))
    # A block left in a file the host no longer reads (Codex's AGENTS.md once the override
    # holds text) is stale: install moves the block, so the user never has two.
    stale = _stale_blocks(host, config, path, target)
    for stale_file, _, _ in stale:
        _keep_typed_text(config, stale_file, read_text(stale_file), force, "remove")
    result.changes.extend(FileChange(str(f), "instruction", a) for f, _, a in stale)
    settings_after = None
    if host == claude_code.HOST:
        settings = claude_code.settings_file(config)
        s_before = read_text(settings)
        settings_after = claude_settings.add_hook(
            s_before, str(settings), claude_settings.hook_command(memwiki_command())
        )
        if s_before is None:
            s_action = "created"
        elif settings_after == s_before:
            s_action = "unchanged"
        else:  # a hook naming another memwiki (moved, reinstalled) is refreshed in place
            s_action = "updated" if claude_settings.hook_registered(s_before) else "added"
        result.changes.append(FileChange(str(settings), "settings", s_action))
    # A read-only file among them refuses the whole install before anything is written.
    for change in result.changes:
        if change.action != "unchanged":
            check_writable(Path(change.path))
    if dry_run:
        return result
    if action != "unchanged":
        write_text(target, after)
    _remember_block(config, target, after)
    for stale_file, stale_after, _ in stale:  # after the new block is in place, never before
        _write_or_delete(stale_file, stale_after)
    written.forget(config, written.BLOCKS, [f for f, _, _ in stale])
    if settings_after is not None and result.changes[-1].action != "unchanged":
        settings = claude_code.settings_file(config)
        _remember_settings(config, settings, s_before, settings_after)
        write_text(settings, settings_after)
    return result


def uninstall(
    host: str,
    config: Config,
    path: Path | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> InstallResult:
    """Remove exactly what install added: the block (or the file it created) and the hook.

    force: remove a block that holds text memwiki did not write (refused otherwise)."""
    result = InstallResult(host, dry_run)
    candidates = block_files(host, config, path)
    holding = [f for f in candidates if _has_block(read_text(f), f)]
    # The file(s) holding the block; with none, install's target (reported as unchanged).
    files = [(f, "instruction") for f in holding or candidates[:1]]
    if host == claude_code.HOST:
        files.append((claude_code.settings_file(config), "settings"))
    # Every file is worked out before any is written: a file memwiki refuses to edit (a
    # duplicate key, a stray marker) leaves all of them as they were.
    edits: list[tuple[Path, str | None]] = []
    for target, kind in files:
        before = read_text(target)
        if before is None:
            result.changes.append(FileChange(str(target), kind, "absent"))
            continue
        if kind == "instruction":
            _keep_typed_text(config, target, before, force, "delete")
            after = block.remove_block(before, str(target))
        else:
            after = _settings_without_hook(config, target, before)
        action = "deleted" if after is None else ("unchanged" if after == before else "removed")
        result.changes.append(FileChange(str(target), kind, action))
        if action != "unchanged":
            check_writable(target)
            edits.append((target, after))
    for target, after in [] if dry_run else edits:
        _write_or_delete(target, after)
    if not dry_run:
        written.forget(config, written.BLOCKS, [f for f, kind in files if kind == "instruction"])
    if not dry_run and host == claude_code.HOST:
        written.forget(config, written.CLAUDE_SETTINGS, [claude_code.settings_file(config)])
    return result


def installed(host: str, config: Config, path: Path | None = None) -> bool:
    """True when one of the host's instruction files holds the managed block."""
    try:
        return any(_has_block(read_text(f), f) for f in block_files(host, config, path))
    except (InvalidInput, StorageError):
        return False
