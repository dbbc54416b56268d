"""Which sessions were memorized already, read in proportion to what changed since last time.

Two places say so: the `Memwiki-Sessions:` trailers of the wiki's history and the records
of runs under `.memwiki/runs/`. Both only grow with the wiki's age (an hourly bridge makes
thousands of each in a year), and reading them all on every `memorize prepare` cost 220 ms
at 10,000 commits and 3,000 run records. What was read is kept in `.memwiki/memorized.json`
(a cache: deleting it only makes the next read whole again) with the commit it was read at
and, per committed run, the identity of its record file; the next read walks only the
commits after that one and opens only the records it has not seen. `memorize status` reads
the same entries (never writing them): a committed record is summed up there as status
shows it, so status opens only the records that changed since.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from ..fsutil import atomic_write_bytes
from . import runstate

if TYPE_CHECKING:
    from ..wiki import Wiki

CACHE_FILE = "memorized.json"
CACHE_FORMAT = 2  # 2: a committed record's entry also holds what `memorize status` shows


def cache_path(sidecar: Path) -> Path:
    """<wiki>/.memwiki/memorized.json."""
    return Path(sidecar) / CACHE_FILE


def _load(path: Path) -> dict[str, Any]:
    # Anything but this module's own shape is treated as no cache: it is read whole again.
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or raw.get("format") != CACHE_FORMAT:
        return {}
    head, history, runs = raw.get("head"), raw.get("history"), raw.get("runs")
    if not (isinstance(head, str) and isinstance(history, dict) and isinstance(runs, dict)):
        return {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in history.items()):
        return {}
    if not all(_is_entry(entry) for entry in runs.values()):
        return {}
    return raw


def _is_entry(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("stamp"), list)
        and all(isinstance(entry.get(k), list) for k in ("sessions", "files"))
        and all(isinstance(s, str) for s in entry["sessions"] + entry["files"])
        and all(isinstance(entry.get(k), str) for k in ("created", "updated"))
        and isinstance(entry.get("jobs"), int)
        and isinstance(entry.get("commit"), str | None)
    )


def _entry(stamp: list[int], state: runstate.RunState) -> dict[str, Any]:
    """A committed record as the cache keeps it: its identity and what status shows."""
    files = state.created_files + state.updated_files + state.deleted_files
    return {
        "stamp": stamp,
        "sessions": state.source_ids,
        "created": state.created,
        "updated": state.updated,
        "jobs": len(state.jobs),
        "files": sorted(files),
        "commit": state.merge_commit,
    }


def committed_records(sidecar: Path) -> dict[str, dict[str, Any]]:
    """{run id: entry} of the committed records the cache holds (read only; {} without one)."""
    return dict(_load(cache_path(sidecar)).get("runs", {}))


def unchanged(folder: str, entry: dict[str, Any]) -> bool:
    """Whether the record in a run's folder is still the file the cache's entry was read from."""
    return entry["stamp"] == _stamp(os.path.join(folder, runstate.STATE_FILE))


def _is_ancestor(repo: pygit2.Repository, old: str, head: pygit2.Oid) -> bool:
    try:
        return bool(repo.descendant_of(head, pygit2.Oid(hex=old)))
    except (KeyError, ValueError, pygit2.GitError):  # gone: history rewritten, a new clone
        return False


def _history(repo: pygit2.Repository, cached: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """(head, session id -> "in commit X") of the wiki's history, newest mention first."""
    if repo.head_is_unborn:
        return "", {}
    head = repo.head.target
    old, known = cached.get("head", ""), cached.get("history", {})
    if old == str(head):
        return old, dict(known)
    # Newest first: a session's merge commit is named, not the run commit below it.
    walker = repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL)
    if old and _is_ancestor(repo, old, head):
        walker.hide(pygit2.Oid(hex=old))
    else:
        known = {}  # reset, rebase or another history: what was read may name lost commits
    found: dict[str, str] = {}
    for commit in walker:
        for line in commit.message.splitlines():
            if line.startswith(runstate.SESSIONS_TRAILER):
                for sid in line[len(runstate.SESSIONS_TRAILER) :].split(","):
                    found.setdefault(sid.strip(), f"in commit {str(commit.id)[:7]}")
    for sid, where in known.items():  # older than every commit walked now
        found.setdefault(sid, where)
    return str(head), found


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    # An atomic write is a new inode: a record rewritten, or a run of the same id made after
    # a discard, is read again.
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def _runs(
    sidecar: Path, cached: dict[str, Any]
) -> tuple[list[tuple[str, list[str], str]], dict[str, Any]]:
    """([(run id, session ids, phase)], the committed records to keep) in run id order."""
    root = runstate.runs_root(sidecar)
    known = cached.get("runs", {})
    found: list[tuple[str, list[str], str]] = []
    keep: dict[str, Any] = {}
    try:
        names = sorted(e.name for e in os.scandir(root) if e.is_dir())
    except OSError:
        return [], {}
    for name in names:
        # os.path, not pathlib: thousands of records, and pathlib's joins cost most of it.
        stamp = _stamp(os.path.join(root, name, runstate.STATE_FILE))
        if stamp is None:
            continue  # a prepare killed before its first write
        entry = known.get(name)
        if entry is not None and entry["stamp"] == stamp:
            found.append((name, list(entry["sessions"]), runstate.COMMITTED))
            keep[name] = entry
            continue
        try:
            state = runstate.load_state(root / name)
        except (runstate.DamagedRun, OSError):
            continue
        if state is None or state.phase == runstate.PREPARING:
            continue
        found.append((state.run_id, state.source_ids, state.phase))
        if state.phase == runstate.COMMITTED:  # a committed record never changes again
            keep[name] = _entry(stamp, state)
    return found, keep


def memorized_sessions(wiki: Wiki) -> dict[str, str]:
    """Session id -> where it was memorized: a merge in the wiki's history or a run."""
    path = cache_path(wiki.sidecar)
    cached = _load(path)
    head, found = _history(wiki.repo, cached)
    history = dict(found)
    runs, keep = _runs(wiki.sidecar, cached)
    for run_id, sessions, phase in runs:
        # A committed run that changed nothing leaves no trailer, only its record.
        open_ = phase != runstate.COMMITTED
        where = f"{'in the open run' if open_ else 'by run'} {run_id}"
        for sid in sessions:
            found.setdefault(sid, where)
    # Written only into a sidecar that exists: prepare refuses a wiki whose `.memwiki/` is
    # not git-ignored, and a folder made here first would show up in the wiki as untracked.
    if (head, keep) != (cached.get("head"), cached.get("runs")) and path.parent.is_dir():
        record = {"format": CACHE_FORMAT, "head": head, "history": history, "runs": keep}
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with contextlib.suppress(OSError):  # a cache: lost, the next read is whole again
            atomic_write_bytes(path, data, sync_dir=False)
    return found
