"""The resource job: the files a session worked on, verified, described, merged into project/<slug>.md.

1. prepare logs the paths a session's tool calls read or changed
   (`<run>/resources/touched-session-NN.txt`, one per line; the skill job may add more);
2. `memwiki memorize verify-resources RUN` keeps those that exist, lie inside the
   project's repository and are not ignored by git, at most MAX_RESOURCES per project,
   and writes `<run>/resources/<slug>.md`: one line per file for the executor to describe;
3. commit merges the described lines into the Resources section of `project/<slug>.md`
   in the run's workspace: new paths appended, changed descriptions replaced, every other
   byte of the file left as it was, so a person's edits to it survive.

Paths are stored relative to the repository root, which is the same on every device.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import markdown
from ..errors import InvalidInput, StateError
from ..fsutil import atomic_write_text
from ..project_file import RESOURCE_ENTRY, RESOURCES, resources_span
from .touched import RESOURCES_DIR, touched_log_path

MAX_RESOURCES = 50
VERIFIED_FILE = "verified.json"
SECTION = RESOURCES
ENTRY = RESOURCE_ENTRY


# ------------------------------------------------------------------ verify-resources


@dataclass
class ProjectResources:
    """The verified resources of one project in a run."""

    project: str
    root: str | None
    kept: list[str] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    file: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (one entry of `verify-resources --json`)."""
        return {
            "project": self.project,
            "root": self.root,
            "kept": list(self.kept),
            "dropped": [dict(d) for d in self.dropped],
            "file": self.file,
        }


def _ignored(root: Path, rels: list[str]) -> set[str]:
    """The repo-relative paths git ignores in the repository at root."""
    import pygit2  # memorize only, never the retrieve path

    try:
        repo = pygit2.Repository(str(root))
    except pygit2.GitError:
        return set()
    return {rel for rel in rels if repo.path_is_ignored(rel)}


def _is_text(path: str) -> bool:
    # A path project/<slug>.md can hold: a file name that is not UTF-8 cannot be written there.
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def verify_paths(
    candidates: Iterable[str], root: Path, base: Path | None = None, cap: int = MAX_RESOURCES
) -> tuple[list[str], list[dict[str, str]]]:
    """(kept repo-relative paths, dropped {path, reason}) for candidate paths of one repository."""
    root_real = Path(os.path.realpath(root))
    kept: list[str] = []
    dropped: list[dict[str, str]] = []
    seen: set[str] = set()
    pending: list[tuple[str, str]] = []
    for raw in candidates:
        raw = raw.strip()
        if not raw or raw in seen:
            continue
        seen.add(raw)
        if not _is_text(raw):
            shown = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            dropped.append({"path": shown, "reason": "not a UTF-8 path"})
            continue
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = (base or root) / path
        real = Path(os.path.realpath(path))
        if real != root_real and root_real not in real.parents:
            dropped.append({"path": raw, "reason": "outside the project's repository"})
            continue
        rel = real.relative_to(root_real).as_posix()
        if not _is_text(rel):  # a symlink to a file whose name is not UTF-8
            dropped.append({"path": raw, "reason": "not a UTF-8 path"})
            continue
        if rel == "." or rel.split("/")[0] == ".git":
            dropped.append({"path": raw, "reason": "not a file of the repository"})
            continue
        if not real.is_file():
            why = "missing" if not real.exists() else "not a file"
            dropped.append({"path": raw, "reason": why})
            continue
        if rel in {r for _, r in pending}:
            continue
        pending.append((raw, rel))
    ignored = _ignored(root_real, [rel for _, rel in pending])
    for raw, rel in pending:
        if rel in ignored:
            dropped.append({"path": raw, "reason": "ignored by git"})
        elif len(kept) >= cap:
            dropped.append({"path": raw, "reason": f"over the cap of {cap}"})
        else:
            kept.append(rel)
    return kept, dropped


def project_file_entries(text: str) -> dict[str, str]:
    """The Resources entries of a project file: {path: description}."""
    lines = text.splitlines()
    span = resources_span(lines)
    if span is None:
        return {}
    out: dict[str, str] = {}
    for line in lines[span[0] : span[1]]:
        m = ENTRY.match(line)
        if m:
            out.setdefault(m.group(2), (m.group(3) or "").strip())
    return out


def write_describe_file(target: Path, item: ProjectResources, known: dict[str, str]) -> None:
    """<run>/resources/<slug>.md: one entry per kept path, with its current description."""
    from . import templates

    entries = "\n".join(f"- `{p}` — {known.get(p, '')}".rstrip() for p in item.kept)
    text = templates.render(
        "resources_list.md", project=item.project, entries=entries or "(no files)"
    )
    atomic_write_text(target, text)


def _sessions_by_project(state) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, session in enumerate(state.sessions, start=1):
        if session.get("project"):
            groups.setdefault(session["project"], []).append((number, session))
    return groups


def verify_run(
    run_directory: Path, state, workspace: Path, root_override: str | None = None
) -> list[ProjectResources]:
    """Verify every project's logged paths of a run and write the files the executor describes."""
    groups = _sessions_by_project(state)
    if root_override and len(groups) > 1:
        raise InvalidInput("--root needs a run with a single project")
    if not groups:
        raise StateError(f"run {state.run_id} has no project: there are no resources to verify")
    out = []
    verified: dict[str, list[str]] = {}
    for slug, sessions in sorted(groups.items()):
        root = root_override or next((s.get("root") for _, s in sessions if s.get("root")), None)
        item = ProjectResources(slug, root)
        candidates: list[tuple[str, Path | None]] = []
        for number, session in sessions:
            log = touched_log_path(run_directory, number)
            # The executor may add lines: bytes that are not UTF-8 come through as surrogates
            # and are dropped by verify_paths with a reason, never a crash.
            data = log.read_bytes() if log.is_file() else b""
            lines = data.decode("utf-8", "surrogateescape").splitlines()
            cwd = Path(session["cwd"]) if session.get("cwd") else None
            candidates.extend((line, cwd) for line in lines)
        if root is None or not Path(root).is_dir():
            item.dropped = [
                {"path": c, "reason": "no checkout of the project on this device (use --root)"}
                for c, _ in candidates
            ]
        else:
            kept, dropped = _verify_mixed(candidates, Path(root))
            item.kept, item.dropped = kept, dropped
        project_file = workspace / "project" / f"{slug}.md"
        known = (
            project_file_entries(project_file.read_text(encoding="utf-8", errors="replace"))
            if project_file.is_file()
            else {}
        )
        target = Path(run_directory) / RESOURCES_DIR / f"{slug}.md"
        write_describe_file(target, item, known)
        item.file = str(target)
        verified[slug] = item.kept
        out.append(item)
    atomic_write_text(
        Path(run_directory) / RESOURCES_DIR / VERIFIED_FILE,
        json.dumps(verified, indent=2, sort_keys=True) + "\n",
    )
    return out


def _verify_mixed(candidates: list[tuple[str, Path | None]], root: Path):
    # Relative paths are relative to their session's directory (else the root); the cap
    # applies to the project as a whole, in the order the sessions logged them.
    resolved = [
        raw if os.path.isabs(raw) or base is None else str(base / raw) for raw, base in candidates
    ]
    return verify_paths(resolved, root)


# ------------------------------------------------------------------ merge (commit)


def merge_entries(text: str, entries: dict[str, str]) -> str:
    """text with entries merged into its Resources section; nothing else changes.

    A path already listed keeps its line unless the description differs (then only that
    line is rewritten, keeping its bullet); new paths are appended after the section's
    last entry. Without a Resources section one is appended at the end.
    """
    if not entries:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines()
    span = resources_span(lines)
    if span is None:
        body = text if text.endswith(("\n", "\r")) or not text else text + newline
        block = [f"## {SECTION}", ""] + [f"- `{p}` — {d}" for p, d in entries.items()]
        fence = markdown.closing_fence(lines)
        if fence is not None:
            block.insert(0, fence)  # or the new heading would be code, found by no one
        sep = "" if body.endswith(newline * 2) or not body else newline
        return body + sep + newline.join(block) + newline
    start, end = span
    listed: dict[str, int] = {}
    last_entry = None
    for i in range(start, end):
        m = ENTRY.match(lines[i])
        if m:
            listed.setdefault(m.group(2), i)
            last_entry = i
    for path, description in entries.items():
        if path in listed:
            i = listed[path]
            m = ENTRY.match(lines[i])
            assert m is not None
            if (m.group(3) or "").strip() != description:
                lines[i] = f"{m.group(1)}`{path}` — {description}"
    new = [f"- `{p}` — {d}" for p, d in entries.items() if p not in listed]
    if new:
        if last_entry is None:
            # No entry yet: after the section's prose (or its heading), set off by blank lines.
            content = [i for i in range(start, end) if lines[i].strip()]
            if content:
                at, insert = content[-1] + 1, ["", *new]
            elif start < end:
                at, insert = start + 1, list(new)
            else:
                at, insert = start, ["", *new]
            if at < len(lines) and lines[at].strip():
                insert.append("")
            lines[at:at] = insert
        else:
            lines[last_entry + 1 : last_entry + 1] = new
    trailing = newline if text.endswith(("\n", "\r")) else ""
    return newline.join(lines) + trailing


def described(describe_file: Path, allowed: list[str]) -> dict[str, str]:
    """The executor's one-line descriptions from <run>/resources/<slug>.md (verified paths only)."""
    out: dict[str, str] = {}
    try:
        text = describe_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    allow = set(allowed)
    for line in text.splitlines():
        m = ENTRY.match(line)
        if m and m.group(2) in allow and (m.group(3) or "").strip():
            out.setdefault(m.group(2), " ".join((m.group(3) or "").split())[:300])
    return out


def merge_run(run_directory: Path, workspace: Path) -> list[str]:
    """Merge every described resource list of a run into the workspace; the paths changed."""
    from . import templates

    verified_path = Path(run_directory) / RESOURCES_DIR / VERIFIED_FILE
    if not verified_path.is_file():
        return []
    try:
        verified = json.loads(verified_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    changed = []
    for slug, allowed in sorted(verified.items()):
        entries = described(Path(run_directory) / RESOURCES_DIR / f"{slug}.md", allowed)
        if not entries or not isinstance(allowed, list):
            continue
        target = Path(workspace) / "project" / f"{slug}.md"
        if target.is_symlink():
            continue  # commit's validation refuses it anyway; never write through a link
        try:
            old = target.read_text(encoding="utf-8") if target.is_file() else None
        except UnicodeDecodeError as exc:
            # Never rewrite bytes we cannot read: the run stays open until the file is fixed.
            raise InvalidInput(
                f"project/{slug}.md is not valid UTF-8 (byte {exc.start}): fix it in {target}, "
                "then run commit again (its resources were not merged)"
            ) from None
        base = old if old is not None else templates.render("project_file.md", project=slug)
        new = merge_entries(base, entries)
        if new != old:
            atomic_write_text(target, new)
            changed.append(f"project/{slug}.md")
    return changed


def verify_resources(wiki, run_id: str, root: str | None = None) -> list[ProjectResources]:
    """`memwiki memorize verify-resources RUN`: verify an open run's logged paths, per project."""
    from . import runstate

    directory = runstate.require_run_dir(wiki.sidecar, run_id)
    state = runstate.load_state(directory)
    if state is None or state.phase != runstate.PREPARED:
        raise StateError(
            f"run {run_id} is not open for the executor (see `memwiki memorize status`)"
        )
    workspace = directory / runstate.WORKSPACE
    return verify_run(directory, state, workspace, str(Path(root).resolve()) if root else None)
