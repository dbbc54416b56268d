"""Lint: every problem in a wiki's files, as `path:line: message`."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import markdown
from . import recallfile as rfmod
from .fsutil import link_target_ok, list_folder
from .index.listing import ListingCache
from .links import LinkIndex, broken_links, note_key
from .recallfile import COPY_RE, Problem
from .recallfile.stream import check_large
from .wiki_files import track_files

if TYPE_CHECKING:
    from .wiki import Wiki


def lint_wiki(wiki: Wiki, paths: list[str] | None = None) -> list[Problem]:
    """Validate RecallFiles (all, or only the given relative paths), their wikilinks and the layout."""
    problems: list[Problem] = []
    by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
    wanted = set(paths) if paths is not None else None
    listing = ListingCache(wiki.sidecar / "index", frozen=True)
    # The whole wiki: its work tree listed once, for the notes, the copies and the symlinks.
    tree = WorkTree(wiki.root) if wanted is None else None
    notes = list(track_files(wiki.root, listdir=tree.listdir if tree else list_folder))
    # Every note's links, aliases and head, from the link cache for notes whose stat matches.
    links = LinkIndex(wiki, notes)
    root = f"{wiki.root}{os.sep}"
    for track, path in notes:
        rel = str(path).removeprefix(root)
        if rel in links.plugin_notes:
            continue  # a drawing or a board: not a RecallFile, and nothing to fix
        by_name[(track, note_key(path.stem))].append(rel)  # as a link names it
        if wanted is not None and rel not in wanted:
            continue
        copy = COPY_RE.match(path.name)
        if copy:  # its name is not a slug on purpose: say what it is, not that the name is bad
            problems.append(
                Problem(
                    rel,
                    1,
                    f"unresolved conflict copy of {track}/{copy['stem']}: merge what you want "
                    "to keep into that file, then delete this one",
                )
            )
            continue
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # try_read says why it cannot be read
        if size > rfmod.MAX_FILE_BYTES:
            problems.extend(check_large(path, track, rel, size))
            continue
        if track == "project":  # valid or not, its Resources lines must be readable
            problems.extend(_resource_problems(path, rel))
        if rel in links.parse_again:
            pass  # a conflict copy or git conflict markers: parsed here, never trusted
        elif rel in links.readable:
            if listing.meta(rel, path) is not None:
                continue  # the index parsed these very bytes without a problem
        elif listing.known_valid(rel, path):
            continue
        rf, found = rfmod.try_read(path, track, rel)
        if rf is None:
            problems.extend(found)
            continue
        if "conflict_of" in rf.extra:
            problems.append(
                Problem(
                    rel,
                    markdown.key_line(rf.raw_frontmatter or "", "conflict_of"),
                    f"unresolved conflict copy of {rf.extra['conflict_of']}: "
                    "merge what you want to keep into it, then delete this file",
                )
            )
    for (track, _), rels in sorted(by_name.items()):
        if len(rels) > 1 and (wanted is None or wanted & set(rels)):
            for rel in rels[1:]:
                problems.append(
                    Problem(rel, 1, f"duplicate name in track {track!r}: also {rels[0]}")
                )
    if tree is not None:
        problems.extend(_stray_files(wiki))
        problems.extend(_other_conflict_copies(wiki, tree, {p.path for p in problems}))
        problems.extend(outside_symlinks(wiki.root, tree.listdir))
    problems.extend(broken_links(wiki, wanted, links))
    return sorted(problems, key=lambda p: (p.path, p.line))


def select(wiki: Wiki, args: list[str], cwd: Path) -> list[str] | None:
    """The relative paths `memwiki lint FILE...` means: a folder stands for every file in it.

    None means the whole wiki (the wiki's own folder was named). A path that does not exist
    is NotFound and one outside the wiki InvalidInput: linting nothing and saying "ok" would
    pass a typo, in a pre-commit hook or a script, as a clean file.
    """
    from .errors import InvalidInput, NotFound

    # Inside the wiki a relative path is the shell's (completion works); from elsewhere
    # (`-w ~/wiki lint memory/x.md`) it is relative to the wiki.
    base = cwd if cwd.resolve() == wiki.root or wiki.root in cwd.resolve().parents else wiki.root
    rels: list[str] = []
    notes = None
    for arg in args:
        given = Path(arg) if Path(arg).is_absolute() else base / arg
        try:
            rel = given.resolve().relative_to(wiki.root)
        except ValueError:
            raise InvalidInput(f"{arg}: outside the wiki {wiki.root}") from None
        if not given.exists():
            raise NotFound(f"{arg}: no such file")
        if not given.is_dir():
            rels.append(str(rel))
            continue
        if rel == Path("."):
            return None
        if notes is None:
            notes = [str(path.relative_to(wiki.root)) for _, path in wiki.iter_paths()]
        prefix = f"{rel}{os.sep}"
        rels.extend(n for n in notes if n.startswith(prefix))
    return rels


def _resource_problems(path: Path, rel: str) -> list[Problem]:
    """Resources lines of a project file that memorize cannot read (project_file.resource_problems)."""
    from .project_file import resource_problems

    try:
        data = rfmod.read_note_bytes(path).decode("utf-8", "replace")
    except OSError:
        return []  # try_read says why it cannot be read
    text = data.replace("\r\n", "\n").replace("\r", "\n")  # as read_text read it
    return [Problem(rel, line, message) for line, message in resource_problems(text)]


def _stray_files(wiki: Wiki) -> list[Problem]:
    """Markdown files at the wiki root that look like RecallFiles but belong to no track."""
    out = []
    for path in sorted(wiki.root.glob("*.md")):
        try:
            head = rfmod.read_note_bytes(path, 4096).decode("utf-8", "replace")
        except OSError:
            continue
        parts = markdown.split_frontmatter(head)
        if parts and "name:" in parts[0] and "description:" in parts[0]:
            out.append(
                Problem(
                    path.name,
                    1,
                    "looks like a RecallFile but is outside any track: "
                    "move it into memory/ or skill/",
                )
            )
    return out


def _other_conflict_copies(wiki: Wiki, tree: WorkTree, reported: set[str]) -> list[Problem]:
    """Conflict copies lint has not named yet: memwiki's own and other sync tools' anywhere
    (the README at the root, an attachment), the ones sync holds back (git/copies.copies_in).

    Bug it prevents: sync never commits another tool's copy outside the tracks, yet lint
    named only memwiki's own there, so `memwiki lint` passed a file that would never sync.
    A copy git ignores (moved to Obsidian's .trash/) is resolved, as sync takes it.
    """
    from .git.copies import copies_in, other_tools_copy

    found = {c: o for c, o in copies_in(wiki.root, tree.files()).items() if c not in reported}
    ignored = _ignored(wiki, list(found))
    out = []
    for rel, original in found.items():
        if rel in ignored:
            continue
        other = None if COPY_RE.match(rel.rsplit("/", 1)[-1]) else other_tools_copy(wiki.root, rel)
        if other is None:
            message = f"unresolved conflict copy of {original}: merge what you want to keep "
            message += "into that file, then delete this one"
        else:
            message = f"{other[1]}: merge what you want to keep into that file, then delete "
            message += "this one (or rename it, if it is a file of its own); sync never commits it"
        out.append(Problem(rel, 1, message))
    return out


def _ignored(wiki: Wiki, rels: list[str]) -> set[str]:
    """The paths among rels that git ignores (none when the wiki has no readable repository)."""
    import pygit2

    from .errors import StorageError

    if not rels:
        return set()
    try:
        repo = wiki.repo
        return {rel for rel in rels if repo.path_is_ignored(rel)}
    except (StorageError, pygit2.GitError, OSError):  # lint names every copy without git
        return set()


def outside_symlinks(
    root: Path, listdir: Callable[[str], list[os.DirEntry]] = list_folder
) -> list[Problem]:
    """Symlinks in the wiki's folders (or markdown links at its root) that lead outside it.

    Every reader skips them (a link out of the wiki is never followed); lint is where that
    is said, with the path and where it points.
    """
    root = Path(root).resolve()
    out: list[Problem] = []

    def check(path: Path) -> bool:
        """True (and reported) when path is a symlink leading outside the wiki."""
        if not path.is_symlink():
            return False
        target = Path(os.path.realpath(path))
        if target == root or link_target_ok(str(target), str(root)):
            return False
        rel = path.relative_to(root).as_posix()
        if target.is_relative_to(root):
            where = f"{target.relative_to(root).as_posix()}, in a dot-folder of the wiki"
        else:
            where = f"{target}, outside the wiki"
        out.append(Problem(rel, 1, f"symlink to {where}: not read, not indexed"))
        return True

    for top in sorted(root.iterdir()):
        if top.name.startswith("."):
            continue
        if top.suffix == ".md" or not top.is_dir() or check(top):
            if top.suffix == ".md":
                check(top)
            continue
        stack = [str(top)]
        while stack:  # os.scandir: the entry type comes with the listing, no stat per file
            try:
                entries = listdir(stack.pop())
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_symlink():
                    check(Path(entry.path))  # a symlinked folder is reported, not followed
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return out


class WorkTree:
    """A wiki's work tree listed once (.git and .memwiki left out, symlinked folders not
    entered): the folders every whole-wiki check of lint reads.

    lint listed every folder three times, for the notes (fsutil.markdown_files), the
    conflict copies (git/copies.walk) and the symlinks (outside_symlinks), and the copies'
    walk made a Path of every file's folder.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.folders: dict[str, list[os.DirEntry] | OSError] = {}
        stack = [self.root]
        while stack:
            folder = stack.pop()
            try:
                entries = list_folder(folder)
            except OSError as exc:  # each reader says it, or passes over it, as before
                self.folders[folder] = exc
                continue
            if folder == self.root:
                entries = [e for e in entries if e.name not in (".git", ".memwiki")]
            self.folders[folder] = entries
            stack.extend(e.path for e in entries if _is_folder(e) and not e.is_symlink())

    def listdir(self, folder: str) -> list[os.DirEntry]:
        """The folder's entries as listed (fsutil.list_folder's answer, its OSError too)."""
        entries = self.folders.get(folder)
        if entries is None:  # not below the root as listed: listed now
            return list_folder(folder)
        if isinstance(entries, OSError):
            raise entries
        return entries

    def files(self) -> Iterator[tuple[Path, str]]:
        """(folder, name) of every regular file (or link to one): the entries git/copies.walk
        gives that copies_in can count (it keeps only files).

        Bug it prevents: a FIFO named as a numbered copy (`people 2.md`) hung lint for good,
        copies_in opening it to read its `name:`; a FIFO, socket or device is no copy.
        """
        for folder, entries in self.folders.items():
            if isinstance(entries, OSError):
                continue
            base = Path(folder)
            for entry in entries:
                if _is_file(entry):
                    yield base, entry.name


def _is_folder(entry: os.DirEntry) -> bool:
    """os.walk's test: a folder or a link to one (an entry that cannot be checked is a file)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    """A regular file or a link to one (the entry's type, a stat only for a symlink)."""
    try:
        return entry.is_file()
    except OSError:
        return False
