"""What the executor changed in a run's workspace, and whether every change is acceptable."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pygit2

from .. import recallfile as rfmod
from ..errors import InvalidInput
from ..fsutil import atomic_write_bytes
from ..git import repo as gitstore
from ..git.changes import Changes, classify
from ..recallfile import Problem
from .scrub import find_spans

# The executor may write RecallFiles of these tracks only (a person may add others);
# project/<slug>.md is written by the resource merge (memorize/resources.py).
EXECUTOR_TRACKS = ("memory", "skill", "project")
_LINK_MODE = 0o120000


class RunInvalid(InvalidInput):
    """The executor's files break the rules; carries every problem for the caller to list."""

    def __init__(self, run_id: str, problems: list[Problem]):
        shown = "; ".join(str(p) for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(
            f"run {run_id}: {len(problems)} {noun} in the changed files, nothing committed "
            f"(fix them in the workspace and commit again): {shown}"
        )
        self.problems = problems


def stage_changes(repo: pygit2.Repository, base: pygit2.Commit) -> Changes:
    """Stage the whole workspace and list what differs from base (executor commits included)."""
    gitstore.stage_all(repo)
    # No rename detection: a run's result lists a renamed file as deleted and created.
    return classify(base.tree.diff_to_index(repo.index), renames=False)


def unstage(repo: pygit2.Repository) -> None:
    """Put the workspace's index back to its branch tip, so a refused commit leaves no trace."""
    repo.index.read_tree(repo.head.peel(pygit2.Commit).tree)
    repo.index.write()


def _path_problem(path: str, base: pygit2.Commit | None = None) -> str | None:
    parts = PurePosixPath(path).parts
    # A note a person keeps in a subfolder (memory/work/x.md, as retrieve hands it to the
    # executor) may be edited or deleted where it is; new notes go to the track's top.
    # Bug it prevents: the run was refused, "outside the tracks", for improving that note.
    nested = (
        len(parts) > 2
        and parts[0] in EXECUTOR_TRACKS
        and not any(p.startswith(".") for p in parts)  # dot-folders hold no notes
        and _in_tree(base, path)
    )
    if not nested and (len(parts) != 2 or parts[0] not in EXECUTOR_TRACKS):
        return (
            "outside the tracks: the executor may only change memory/<name>.md, skill/<name>.md"
            " or project/<slug>.md"
        )
    if not parts[-1].endswith(".md"):
        return "only markdown RecallFiles (<name>.md) may be changed"
    return None


def _in_tree(base: pygit2.Commit | None, path: str) -> bool:
    try:
        return base is not None and isinstance(base.tree[path], pygit2.Blob)
    except KeyError:
        return False


def _old_text(base: pygit2.Commit | None, path: str) -> str:
    try:
        return base.tree[path].data.decode("utf-8", "replace") if base is not None else ""
    except (KeyError, AttributeError):
        return ""


def secret_problems(path: str, data: bytes, before: str = "") -> list[Problem]:
    """The secrets the run would commit: every span the scrubber finds that before lacks.

    Transcripts are scrubbed, but an executor can read a secret elsewhere (a config file, an
    env dump) and write it down; once committed it lives in every clone. A secret the file
    already held before the run (a person put it there) is theirs to keep.
    """
    text = data.decode("utf-8", "replace")
    problems = []
    for start, end, kind in find_spans(text):
        if text[start:end] in before:
            continue
        problems.append(
            Problem(
                path,
                text.count("\n", 0, start) + 1,
                f"looks like a secret ({kind}): memory must not hold credentials; remove it"
                f" or write [REDACTED:{kind}] in its place",
            )
        )
    return problems


def workspace_secrets(
    repo: pygit2.Repository, base: pygit2.Commit
) -> tuple[list[Problem], dict[str, str]]:
    """The secrets in the work-tree files staging would store, found before it stores them,
    and the blob id of each file read (check() need not scan the same bytes again).

    Bug it prevents: a commit refused for a secret had already written the file as a git
    object; unreferenced, it stayed in .git/objects (and every copy of the folder) until
    git's cleanup, weeks later. Files the executor committed itself are checked by check().
    """
    root = Path(repo.workdir)
    problems: list[Problem] = []
    scanned: dict[str, str] = {}
    for path in gitstore.pending_paths(repo):
        if _path_problem(path, base) is not None:
            continue  # check() names it; it is never committed
        try:
            if (root / path).is_symlink():
                continue  # refused by check(), never read through
            data = (root / path).read_bytes()
        except OSError:  # deleted, or a folder: nothing of it is stored
            continue
        problems.extend(secret_problems(path, data, _old_text(base, path)))
        scanned[path] = str(pygit2.hash(data))
    return problems, scanned


def check(
    repo: pygit2.Repository,
    changes: Changes,
    base: pygit2.Commit | None = None,
    scanned: dict[str, str] | None = None,
) -> list[Problem]:
    """Every problem in the changed paths: location, file type, RecallFile validity, secrets.

    scanned (path -> blob id, from workspace_secrets) names contents already scanned for
    secrets: a staged blob of the same id is not scanned twice (the scan is most of a
    commit's validation: 50 notes of 20 KB were 100 scans of 2.1 M characters).
    """
    scanned = scanned or {}
    problems: list[Problem] = []
    index = repo.index
    for path in changes.all():
        why = _path_problem(path, base)
        if why is not None:
            problems.append(Problem(path, 1, why))
            continue
        if path in changes.deleted:
            continue
        entry = index[path]
        if entry.mode == _LINK_MODE:
            problems.append(Problem(path, 1, "symbolic links are refused"))
            continue
        track, stem = path.split("/")[0], PurePosixPath(path).stem
        data = repo[entry.id].data
        if path in changes.created:
            try:
                rfmod.check_new_name(stem)
            except InvalidInput as exc:
                problems.append(Problem(path, 1, exc.message))
                continue
        try:
            rfmod.parse(data, track=track, stem=stem, path=path)
        except rfmod.InvalidRecallFile as exc:
            problems.extend(exc.problems)
        if scanned.get(path) != str(entry.id):  # a filter may have changed what is staged
            problems.extend(secret_problems(path, data, _old_text(base, path)))
    return problems


def stamp(repo: pygit2.Repository, changes: Changes, when: str) -> None:
    """Set `created` (if missing) and `updated` on changed files, editing only those lines."""
    root = repo.workdir
    for path in changes.created + changes.updated:
        track, stem = path.split("/")[0], PurePosixPath(path).stem
        file_path = Path(root) / path
        with open(file_path, "rb") as fh:
            rf = rfmod.parse(fh.read(), track=track, stem=stem, path=path)
        rf.created = rf.created or when
        rf.updated = when
        text = rfmod.render(rf)
        rfmod.parse(text, track=track, stem=stem, path=path)
        # No directory fsync (half of this loop's time): a crash that loses the rename
        # leaves the executor's unstamped file, which the retried commit stamps again.
        atomic_write_bytes(file_path, text.encode("utf-8"), sync_dir=False)
