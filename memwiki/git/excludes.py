"""A developer's personal ignore rules (core.excludesFile, ~/.config/git/ignore) against the
wiki's own (.gitignore): the notes only the personal ones ignore are still the wiki's."""

from __future__ import annotations

import os

import pygit2

from ..layout import OWN_TRACKS

# Read above every other level of the configuration: the personal excludes file is none.
_NO_EXCLUDES = f"[core]\n\texcludesFile = {os.devnull}\n"


def ignored_by_the_wiki(repo: pygit2.Repository, paths: list[str]) -> list[str]:
    """Those of paths that the wiki's own ignore rules ignore: its .gitignore files (and
    .git/info/exclude), not a developer's personal core.excludesFile or ~/.config/git/ignore.

    Bug it prevents: a global excludes file written for code repositories (`*.md`,
    `.obsidian/`) made doctor call every note "ignored but still tracked" and `memwiki
    untrack-ignored` untrack them all in one commit, which sync then deleted on every
    other device. libgit2 reads those files when it first looks at a repository's ignore
    rules, so the wiki is opened once more with core.excludesFile set to an empty file at
    the highest level of its configuration (that also hides git's default, XDG one).

    Not by emptying libgit2's search paths (pygit2.settings.search_path): they are the
    process's, and a commit's check emptied them under every other thread (another
    wiki's commit, the caller's own pygit2), which then read no ~/.gitconfig at all: no
    user.name (tests/test_threads_excludes.py).
    """
    if not paths:
        return []
    import tempfile

    own = pygit2.Repository(repo.path)
    try:
        with tempfile.TemporaryDirectory(prefix="memwiki-") as folder:
            override = os.path.join(folder, "config")
            with open(override, "w", encoding="utf-8") as out:
                out.write(_NO_EXCLUDES)
            # Config's own add_file: pygit2 1.21 refuses it on a repository's configuration,
            # which libgit2 allows (the file is added for this object alone, in memory).
            pygit2.Config.add_file(own.config, override, pygit2.enums.ConfigLevel.APP)
            return [p for p in paths if own.path_is_ignored(p)]
    finally:
        own.free()


def has_personal_excludes(repo: pygit2.Repository) -> bool:
    """Whether the git configuration names an excludes file, or git's default one exists."""
    try:
        if repo.config["core.excludesFile"]:
            return True
    except (KeyError, pygit2.GitError):
        pass
    xdg = pygit2.settings.search_path[pygit2.enums.ConfigLevel.XDG]
    return any(os.path.isfile(os.path.join(d, "ignore")) for d in xdg.split(os.pathsep) if d)


def _is_note(path: str) -> bool:
    # Markdown outside the dot-folders (.obsidian, .trash, the sidecar): the wiki's content.
    parts = path.rstrip("/").split("/")
    return not any(p.startswith(".") for p in parts) and (
        path.endswith("/") or path.endswith(".md")
    )


def _notes_under(root: str, folder: str, limit: int) -> list[str]:
    found: list[str] = []
    for here, dirs, files in os.walk(os.path.join(root, folder)):
        if ".git" in dirs or ".git" in files:  # a repository cloned here: never its files
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # symlinks: not followed
        rel = os.path.relpath(here, root).replace(os.sep, "/")
        found += [f"{rel}/{f}" for f in sorted(files) if f.endswith(".md") and f[0] != "."]
        if len(found) >= limit:
            break
    return found[:limit]


MAX_NOTES = 100_000  # a folder ignored by mistake holding more is not walked further


def notes_only_you_ignore(repo: pygit2.Repository, status: dict[str, int]) -> list[str]:
    """Untracked notes (*.md outside dot-folders) that git ignores only because of the
    developer's personal excludes file, not the wiki's .gitignore; status: a read of
    repo.status(ignored=True) (one walk of the work tree serves both).

    Bug it prevents: `*.md`, `notes.md` or `build/` in ~/.gitignore (written for code
    repositories) kept hand-written notes out of every commit and sync, and a memorize
    run's new notes out of its commit, which then deleted the run's workspace: lost.
    """
    root = repo.workdir
    candidates: list[str] = []
    for path, flags in status.items():
        if not flags & pygit2.GIT_STATUS_IGNORED or not _is_note(path):
            continue
        if not path.endswith("/"):
            candidates.append(path)
        elif path.split("/")[0] in OWN_TRACKS:  # memory/build/: notes; node_modules/: not
            candidates += _notes_under(root, path.rstrip("/"), MAX_NOTES)
    if not candidates:
        return []
    kept_out = set(ignored_by_the_wiki(repo, candidates))
    return [p for p in candidates if p not in kept_out]
