"""The conflict-copy scheme: resolve every conflict of a merge so that nothing is lost.

Used by memorize commit (label ``run-<id>``) and by sync (label ``remote``):

- both sides changed (or both added) a file: "ours" stays at its path and "theirs"
  is written beside it as ``<dir>/<stem>.conflict-<label>-<sha7><ext>``, where sha7 is
  the short id of theirs' blob. A markdown copy keeps its frontmatter keys, with
  ``name`` set to the copy's stem and ``conflict_of: <dir>/<stem>`` plus
  ``conflict_label: <label>`` added, so lint can point at it;
- one side deleted a file the other changed: the changed version stays;
- one side has a file where the other has a folder: the folder stays and the file is
  written beside it as a copy (git cannot hold both at one path);
- one side renamed a file (edited or not) that the other side edited: the rename stays,
  and the other side's version is written beside the new name as a copy; both sides
  renamed it to different names: ours stays, theirs is written beside it as a copy;
- a file inside a dot-folder (``.obsidian/``, ``.trash/``: an app's per-device state) gets
  no copy, since a new file there is a write into the app's own folder: ours wins, and
  theirs stays in git history (the merge commit's second parent);
- before any of that, a conflict that exists only because both sides stamped a new
  ``updated:`` timestamp is merged normally, keeping the later timestamp (and the
  earlier ``created:``, when both sides added one to a file that had none).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import TypeAlias

import pygit2

from .. import markdown
from ..errors import InvalidInput
from ..recallfile import COPY_RE
from ..timestamps import instant
from . import repo as gitstore
from .copies import walk

LABEL_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
# Stamps memorize commit writes on every changed file, and which of two values wins. The
# value's trailing blanks are stripped after the match: a lazy `(.*?)[ \t]*$` backtracks
# quadratically on a pulled line of spaces (seconds for 20 KB, in the middle of a sync).
_STAMPS = {
    "updated": (re.compile(r"^updated[ \t]*:[ \t]*+(.*)$", re.MULTILINE), max),
    "created": (re.compile(r"^created[ \t]*:[ \t]*+(.*)$", re.MULTILINE), min),
}


@dataclass(frozen=True)
class Conflict:
    """One resolved conflict: which version stayed at path and where the other one went."""

    path: str
    # both-modified | both-added | deleted-by-ours | deleted-by-theirs | file-and-folder |
    # renamed-and-edited (kept: the side that renamed; copy: the other side's edit) |
    # renamed-differently (kept: ours, whose new name stays; copy: theirs' version)
    kind: str
    kept: str  # ours | theirs (for file-and-folder: whose folder stayed)
    copy: str | None = None
    # renamed-differently: the name theirs gave the file, which no longer exists anywhere
    # (without it the report named only the copy, and nobody could tell what theirs wanted)
    other_name: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """JSON form."""
        return asdict(self)


def copy_path(path: str, label: str, blob_id: str, length: int = 7) -> str:
    """Where theirs' version of path goes: <dir>/<stem>.conflict-<label>-<sha><ext>."""
    p = PurePosixPath(path)
    name = f"{p.stem}.conflict-{label}-{blob_id[:length]}{p.suffix}"
    return str(p.with_name(name))


def _cut(text: str) -> tuple[str, str, str, str] | None:
    """(bom, opening line, frontmatter, closing line and body), or None without frontmatter."""
    bom, rest = markdown.strip_bom(text)
    parts = markdown.split_frontmatter(rest)
    if parts is None:
        return None
    opening = rest[: rest.index("\n") + 1]
    return bom, opening, parts.text, rest[len(opening) + len(parts.text) :]


def conflict_copy_text(data: bytes, copy_stem: str, original: str, label: str) -> bytes:
    """Theirs' markdown, with frontmatter renamed to the copy and pointing at the original."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # not text: the bytes are kept as they are
    marks = [f"conflict_of: {original}\n", f"conflict_label: {label}\n"]
    cut = _cut(text)
    if cut is None:
        bom, rest = markdown.strip_bom(text)
        head = ["---\n", f"name: {copy_stem}\n", *marks, "---\n"]
        return (bom + "".join(head) + rest).encode("utf-8")
    bom, opening, fm, tail = cut
    out: list[str] = []
    skipping = False
    named = False
    for line in fm.splitlines(keepends=True):
        key = markdown.key_of(line)
        if key is not None:
            skipping = key in ("name", "conflict_of", "conflict_label")
            if key == "name" and not named:
                out.append(f"name: {copy_stem}\n")
                named = True
        if not skipping:
            out.append(line)
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    if not named:
        out.insert(0, f"name: {copy_stem}\n")
    return "".join([bom, opening, *out, *marks, tail]).encode("utf-8")


def _stamp_value(text: str, key: str) -> str | None:
    cut = _cut(text)
    if cut is None:
        return None
    m = _STAMPS[key][0].search(cut[2])
    return m.group(1).rstrip(" \t") if m else None


def _pick(pick, a: str, b: str) -> str:
    """The later (max) or earlier (min) of two stamps, compared as instants when both parse.

    Bug it prevents: compared as text, `10:00:00+01:00` (09:00 UTC), which an editor
    plugin wrote in local time, beat memwiki's `09:30:00Z`, so the merge kept the earlier
    `updated:`.
    """
    when_a, when_b = instant(a), instant(b)
    if when_a is None or when_b is None:
        return pick(a, b)
    return a if pick(when_a, when_b) == when_a else b


def _set_stamp(text: str, key: str, value: str) -> str:
    cut = _cut(text)
    if cut is None:
        return text
    bom, opening, fm, tail = cut
    fm = _STAMPS[key][0].sub(lambda _: f"{key}: {value}", fm, count=1)
    return bom + opening + fm + tail


def _merge_ignoring_updated(
    repo: pygit2.Repository,
    anc: pygit2.IndexEntry | None,
    ours: pygit2.IndexEntry,
    theirs: pygit2.IndexEntry,
) -> bytes | None:
    """A clean text merge once both sides agree on their stamps (see the module doc); else None."""
    try:
        texts = [repo[e.id].data.decode("utf-8") if e else None for e in (anc, ours, theirs)]
    except UnicodeDecodeError:
        return None
    agreed: dict[str, str] = {}
    for key, (_, pick) in _STAMPS.items():
        found = [_stamp_value(t, key) for t in texts[1:] if t is not None]
        stamps = [v for v in found if v]
        if len(stamps) == 2 and stamps[0] != stamps[1]:
            agreed[key] = _pick(pick, stamps[0], stamps[1])
    if "updated" not in agreed:
        return None  # the timestamps are not what conflicts
    entries: list[pygit2.IndexEntry | None] = []
    for entry, text in zip((anc, ours, theirs), texts, strict=True):
        if entry is None or text is None:
            entries.append(None)
            continue
        for key, value in agreed.items():
            text = _set_stamp(text, key, value)
        blob = repo.create_blob(text.encode("utf-8"))
        entries.append(pygit2.IndexEntry(entry.path, blob, entry.mode))
    result = repo.merge_file_from_index(*entries)
    if not result.automergeable:
        return None
    return result.contents.encode("utf-8")


def _write_copy(
    repo: pygit2.Repository, index: pygit2.Index, theirs: pygit2.IndexEntry, label: str
) -> str:
    """Add theirs' version beside its path; a longer sha only if that name is already taken."""
    raw = repo[theirs.id].data
    original = str(PurePosixPath(theirs.path).with_suffix(""))
    for length in (7, 12, 40):
        target = copy_path(theirs.path, label, str(theirs.id), length)
        data = raw
        if target.endswith(".md"):
            data = conflict_copy_text(raw, PurePosixPath(target).stem, original, label)
        blob = repo.create_blob(data)
        taken = target in index and index[target].id != blob
        if not taken or length == 40:
            index.add(pygit2.IndexEntry(target, blob, theirs.mode))
            return target
    raise AssertionError("unreachable")


def resolve_conflicts(
    repo: pygit2.Repository, index: pygit2.Index, label: str
) -> tuple[pygit2.Oid, list[Conflict]]:
    """Resolve every conflict of a merge index (ours stays, theirs is copied); write the tree."""
    if not LABEL_RE.match(label):
        raise InvalidInput(f"conflict label {label!r} is not lowercase letters, digits, hyphens")
    resolved: list[Conflict] = []
    pending = list(index.conflicts) if index.conflicts is not None else []
    renames = _renames(repo, pending)
    moved = {
        e.path for _, _, kept, other in renames.values() for e in (kept, other) if e is not None
    }
    for anc, ours, theirs in pending:
        for entry in (anc, ours, theirs):
            if entry is not None and index.conflicts is not None and entry.path in index.conflicts:
                del index.conflicts[entry.path]
        alone = ours if theirs is None else theirs if ours is None else None
        if anc is None and alone is not None and alone.path in moved:
            continue  # the new name of a renamed file: resolved with its old name
        if anc is not None and anc.path in renames:
            resolved.append(_resolve_rename(repo, index, label, renames[anc.path], ours, theirs))
            continue
        if ours is not None and theirs is not None:
            merged = _merge_ignoring_updated(repo, anc, ours, theirs)
            if merged is not None:
                index.add(pygit2.IndexEntry(ours.path, repo.create_blob(merged), ours.mode))
                continue
            index.add(pygit2.IndexEntry(ours.path, ours.id, ours.mode))
            kind = "both-modified" if anc is not None else "both-added"
            if in_dot_folder(ours.path):
                resolved.append(Conflict(ours.path, kind, "ours"))
                continue
            target = _write_copy(repo, index, theirs, label)
            resolved.append(Conflict(ours.path, kind, "ours", target))
        elif ours is not None or theirs is not None:
            survivor, kept = (ours, "ours") if ours is not None else (theirs, "theirs")
            assert survivor is not None
            if _is_folder(index, survivor.path):
                # One side has a file where the other has a folder: git cannot hold both
                # at one path, so the folder stays and the file goes beside it.
                target = _write_copy(repo, index, survivor, label)
                folder_side = "theirs" if kept == "ours" else "ours"
                resolved.append(Conflict(survivor.path, "file-and-folder", folder_side, target))
                continue
            index.add(pygit2.IndexEntry(survivor.path, survivor.id, survivor.mode))
            kind = "deleted-by-theirs" if kept == "ours" else "deleted-by-ours"
            resolved.append(Conflict(survivor.path, kind, kept))
        # both sides deleted it: nothing to keep and nothing lost
    return index.write_tree(repo), resolved


Entry: TypeAlias = pygit2.IndexEntry


# (kind, the side whose name stays, its entry at the new name, the other side's version:
# its own new name's entry, or None when it is that side's stage at the old path)
Rename: TypeAlias = tuple[str, str, Entry, Entry | None]


def _renames(repo: pygit2.Repository, pending: list) -> dict[str, Rename]:
    """{old path: Rename} for each file one side renamed (edited or not) while the other
    side edited it, or renamed it to another name. libgit2 leaves the old path without the
    renaming side's stage, and each new path as a conflict of its side alone."""
    alone: dict[str, list[Entry]] = {
        "ours": [o for a, o, t in pending if a is None and t is None and o is not None],
        "theirs": [t for a, o, t in pending if a is None and o is None and t is not None],
    }

    def renamed_to(side: str, old: pygit2.Blob) -> Entry | None:
        return next(
            (
                e
                for e in alone[side]
                if gitstore.similarity(old, repo[e.id].data) >= gitstore.RENAME_SIMILARITY
            ),
            None,
        )

    found: dict[str, Rename] = {}
    for anc, ours, theirs in pending:
        if anc is None or (ours is not None and theirs is not None):
            continue
        old = repo[anc.id]
        if ours is None and theirs is None:  # both renamed it, to different names
            mine, other = renamed_to("ours", old), renamed_to("theirs", old)
            if mine is not None and other is not None:
                alone["ours"].remove(mine)
                alone["theirs"].remove(other)
                found[anc.path] = ("renamed-differently", "ours", mine, other)
            continue
        side = "ours" if ours is None else "theirs"  # the side that no longer has the old path
        entry = renamed_to(side, old)
        if entry is not None:
            alone[side].remove(entry)
            found[anc.path] = ("renamed-and-edited", side, entry, None)
    return found


def _resolve_rename(
    repo: pygit2.Repository,
    index: pygit2.Index,
    label: str,
    rename: Rename,
    ours: Entry | None,
    theirs: Entry | None,
) -> Conflict:
    """One new name stays; the other side's version goes beside it as a conflict copy.

    Bug it prevents: both files were kept, an edit against a rename brought the old name
    back, two renames left two names, each reported as "deleted-by-...": duplicate notes
    that nothing pointed out.
    """
    kind, side, kept, other = rename
    if other is None:
        other = theirs if side == "ours" else ours
    assert other is not None
    index.add(Entry(kept.path, kept.id, kept.mode))
    if in_dot_folder(kept.path):
        return Conflict(kept.path, kind, side)
    copy = _write_copy(repo, index, Entry(kept.path, other.id, other.mode), label)
    other_name = other.path if kind == "renamed-differently" else None
    return Conflict(kept.path, kind, side, copy, other_name)


def _is_folder(index: pygit2.Index, path: str) -> bool:
    """True when the merged index holds files below path (the other side made it a folder)."""
    prefix = path + "/"
    return any(e.path.startswith(prefix) for e in index)


def in_dot_folder(path: str) -> bool:
    """True for a path inside a folder whose name starts with a dot."""
    return any(part.startswith(".") for part in PurePosixPath(path).parts[:-1])


def find_conflict_copies(root: Path) -> list[Path]:
    """Every conflict copy anywhere in a wiki's work tree (not in .git or .memwiki), sorted."""
    root = Path(root)
    found: list[Path] = []
    for folder, name in walk(root):
        if ".conflict-" in name and COPY_RE.match(name) and (folder / name).is_file():
            found.append(folder / name)
    return sorted(found)
