"""What a commit changes, and the commit messages that say it: one type, one builder.

`classify` turns any libgit2 diff into `Changes` (created, updated, deleted, renamed);
`commit_message` and `merge_message` are the only places that word memwiki's commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pygit2

VERBS = ("created", "updated", "deleted", "renamed")


@dataclass(frozen=True)
class Change:
    """One path changed: status is created, updated, deleted or renamed (then old_path is set)."""

    status: str
    path: str
    old_path: str | None = None

    def to_dict(self) -> dict[str, str]:
        """JSON form: {status, path} and, for a rename, from."""
        out = {"status": self.status, "path": self.path}
        if self.old_path is not None:
            out["from"] = self.old_path
        return out


@dataclass
class Changes:
    """Every path a commit (or a staged index) changes, in diff order."""

    items: list[Change] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def _of(self, status: str) -> list[str]:
        return sorted(c.path for c in self.items if c.status == status)

    @property
    def created(self) -> list[str]:
        """Paths created, sorted."""
        return self._of("created")

    @property
    def updated(self) -> list[str]:
        """Paths updated, sorted."""
        return self._of("updated")

    @property
    def deleted(self) -> list[str]:
        """Paths deleted, sorted."""
        return self._of("deleted")

    @property
    def renamed(self) -> list[tuple[str, str]]:
        """(old, new) of every rename, sorted."""
        return sorted((c.old_path or "", c.path) for c in self.items if c.status == "renamed")

    def all(self) -> list[str]:
        """Every path touched (both sides of a rename), sorted."""
        paths = {c.path for c in self.items} | {c.old_path for c in self.items if c.old_path}
        return sorted(paths)


def classify(diff: pygit2.Diff, renames: bool = True) -> Changes:
    """The one classification of a diff: created, updated, deleted or (if asked) renamed."""
    if renames:
        diff.find_similar()
    items = []
    for delta in diff.deltas:
        status = delta.status_char()
        if status == "A":
            items.append(Change("created", delta.new_file.path))
        elif status == "D":
            items.append(Change("deleted", delta.old_file.path))
        elif status == "R":
            items.append(Change("renamed", delta.new_file.path, delta.old_file.path))
        else:
            items.append(Change("updated", delta.new_file.path))
    return Changes(items)


def _groups(changes: Iterable[Change], suffix: bool) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {verb: [] for verb in VERBS}

    def name(path: str) -> str:
        return path if suffix or not path.endswith(".md") else path[:-3]

    for c in changes:
        shown = f"{name(c.old_path)} -> {name(c.path)}" if c.old_path else name(c.path)
        groups[c.status].append(shown)
    return groups


def commit_message(
    prefix: str, changes: Changes, *, list_always: bool = False, trailers: str = ""
) -> str:
    """`<prefix>: created A; updated B` (counts and one line a file when too long).

    list_always (memorize's run commits) always adds the per-file body, with full paths.
    """
    short = {k: v for k, v in _groups(changes, False).items() if v}
    subject = f"{prefix}: " + "; ".join(f"{k} {', '.join(v)}" for k, v in short.items())
    if len(subject) > 72:
        subject = f"{prefix}: " + ", ".join(f"{k} {len(v)}" for k, v in short.items())
    elif not list_always:
        return subject + "\n" + (f"\n{trailers}" if trailers else "")
    listed = {k: v for k, v in _groups(changes, list_always).items() if v}
    body = [f"{k.capitalize()}: {p}" for k, v in listed.items() for p in sorted(v)]
    text = subject + "\n\n" + "\n".join(body) + "\n"
    return text + (f"\n{trailers}" if trailers else "")


def merge_message(title: str, conflicts: list[dict[str, Any]], trailers: str = "") -> str:
    """A merge commit's message: what it merges, then each conflict and what was kept."""
    lines = [title, ""]
    if conflicts:
        lines.append("Conflicts (both versions kept):")
        for c in conflicts:
            if c.get("copy"):
                # Which kind, when the copy is not simply "both changed it": a rename on one
                # or both sides, or a file against a folder, is otherwise not said anywhere.
                kind = "" if c.get("kind") in ("both-modified", "both-added") else f" ({c['kind']})"
                if c.get("other_name"):
                    kind = f" ({c['kind']}; theirs named it {c['other_name']})"
                lines.append(f"- {c['path']} -> {c['copy']}{kind}")
            else:
                lines.append(f"- {c['path']} ({c['kind']}, kept {c['kept']})")
        lines.append("")
    return "\n".join(lines) + ("\n" + trailers if trailers else "")
