"""The wiki: a git repository of RecallFiles, and the library API over it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import recallfile as rfmod
from .catalog import Page, list_page
from .errors import InvalidInput, NotFound, StateError, StorageError, check_type, library_call
from .fsutil import atomic_write_text
from .index.listing import ListingCache
from .layout import MISSING_MARKS, SIDECAR, is_wiki, sidecar_for
from .lock import FileLock
from .recallfile import Problem, RecallFile

if TYPE_CHECKING:
    import pygit2

    from .config import Config
    from .git.history import LogEntry
    from .index.embedders import Embedders
    from .index.search import RetrievalResult
    from .wiki_commit import CommitResult  # imported by the first commit: not by a retrieve

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"


class Wiki:
    """A memwiki wiki rooted at a git work tree."""

    root: Path  # the work tree, resolved

    def __init__(self, root: Path, config: Config | None = None):
        self.root = Path(root).resolve()
        self._repo = None
        self._config = config
        self._listing: ListingCache | None = None  # made on the first list
        self._embedders: Embedders | None = None  # the model, loaded by the first retrieve
        self._sidecar: Path | None = None  # chosen on first use (layout.sidecar_for)

    @property
    def config(self) -> Config:
        """The Config this wiki was opened with; without one, the environment's (read once)."""
        if self._config is None:
            from .config import load

            self._config = load({"wiki": str(self.root)})
        return self._config

    def close(self) -> None:
        """Release what this Wiki holds (git repository, loaded model, listing cache) and
        reap finished index writers; a later call opens what it needs again.

        A long-lived process that opens many wikis, or wants the model's memory back
        (about 100 MB), calls it, or uses the Wiki as a context manager.
        """
        repo, self._repo = self._repo, None
        if repo is not None:
            repo.free()  # libgit2's open pack files and mapped windows go now, not at GC
        self._embedders = None
        self._listing = None
        _reap_children()

    def __enter__(self) -> Wiki:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ set-up

    @classmethod
    @library_call
    def init(
        cls, path: Path, force: bool = False, config: Config | None = None
    ) -> tuple[Wiki, bool]:
        """Create a wiki (git init, tracks, .gitignore, README, first commit); (wiki, created)."""
        from .create import init_wiki

        _check_open(path, config)
        return init_wiki(path, force, config)

    @classmethod
    @library_call
    def open(cls, path: Path | str | None = None, config: Config | None = None) -> Wiki:
        """Open an existing wiki (path, else config's wiki); it keeps config for every later call."""
        _check_open(path, config, path_optional=True)
        if path is None:
            if config is None:
                from .config import load

                config = load()  # the library's own entry point: nobody passed a config
            path = config.wiki_path
        root = Path(path).expanduser()
        # Refused before anything is written: a code repository named by mistake used to
        # get memory/ files, a .memwiki/ folder and commits of its own work.
        _require_wiki(root)
        return cls(root, config)

    @property
    def repo(self) -> pygit2.Repository:
        """The pygit2 repository (opened on first use)."""
        if self._repo is None:
            from .git import repo as gitstore

            self._repo = gitstore.open_repo(self.root)
        return self._repo

    @property
    def sidecar(self) -> Path:
        """The git-ignored .memwiki/ directory (a private one for a wiki this user cannot write)."""
        if self._sidecar is None:
            self._sidecar = sidecar_for(self.root, lambda: self.config.private_sidecars_dir)
        return self._sidecar

    def write_lock(self) -> FileLock:
        """The lock every writer of wiki files and commits takes (NotFound when root is no wiki).

        Bug it prevents: put on a Wiki whose folder was deleted since it was opened, or on
        Wiki(path) over a plain folder, made .memwiki/ and memory/ there without a word.
        """
        _require_wiki(self.root)

        def waiting() -> None:  # as the index lock says it: up to 60 s waited in silence
            from .index.indexer import print_to_stderr  # imported only if it ever waits

            print_to_stderr("waiting for another memwiki process that is writing to the wiki")

        # The wiki's own, never a private sidecar's: every writer of the wiki takes the same.
        return FileLock(self.root / SIDECAR / "wiki.lock", timeout=60, on_wait=waiting)

    # ----------------------------------------------------------- reading

    def path_of(self, track: str, name: str) -> Path:
        """The file of track/name: TRACK/NAME.md, or the note of that name in a subfolder of
        the track (names are unique in a track, whatever the folders); never outside the wiki.

        Bug it prevents: a note moved into a subfolder (as Obsidian users do) was listed and
        retrieved, but `show`, `rm`, `links` and `log` could not find it, and `add` or `put`
        of its name created a second note at the top of the track.
        """
        from .wiki_files import note_path

        return note_path(self.root, track, name)

    def iter_paths(self, track: str | None = None) -> Iterator[tuple[str, Path]]:
        """Every markdown file in a track folder, as (track, path), sorted; dot-folders skipped."""
        from .wiki_files import track_files

        return track_files(self.root, track)

    @library_call
    def get(self, track: str, name: str) -> RecallFile:
        """Read one RecallFile."""
        path = self.path_of(track, name)
        if not path.is_file():
            raise NotFound(f"no RecallFile {track}/{name}")
        try:
            return rfmod.read(path, track, self._rel(path))  # its own folder, if nested
        except OSError as exc:  # unreadable (permissions): one line, as list and lint say it
            raise StorageError(f"{track}/{name}.md: cannot read: {exc.strerror}") from None

    @library_call
    def list_recall_files(
        self, track: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> Page:
        """One page of RecallFiles ordered by (track, name), with an opaque next_cursor."""
        self._listing = self._listing or ListingCache(self.sidecar / "index")
        return list_page(self.root, self.iter_paths(track), self._listing, cursor, limit)

    # ----------------------------------------------------------- writing

    def _prepare(self, rf: RecallFile) -> tuple[Path, str, bool]:
        """Validate rf and merge it over its file (memwiki.rewrite): (path, text, created)."""
        from .rewrite import merged

        if not isinstance(rf, RecallFile):  # was an AttributeError from deep inside
            raise InvalidInput(f"expected a RecallFile, not {type(rf).__name__}")
        path = self.path_of(rf.track, rf.name)
        if not path.exists():
            rfmod.check_new_name(rf.name)
        text, created = merged(path, rf)
        return path, text, created

    @library_call
    def put(self, rf: RecallFile) -> bool:
        """Create or update one RecallFile on disk (no commit); True when it was created."""
        with self.write_lock():
            path, text, created = self._prepare(rf)
            atomic_write_text(path, text)
        return created

    @library_call
    def delete(self, track: str, name: str) -> None:
        """Delete one RecallFile from disk (no commit)."""
        path = self.path_of(track, name)
        if not path.is_file():
            raise NotFound(f"no RecallFile {track}/{name}")
        with self.write_lock():
            path.unlink()

    @library_call
    def save(self, rf: RecallFile, message: str | None = None) -> CommitResult:
        """Create or update one RecallFile and commit it."""
        check_type("message", message, (str, type(None)), "a string")
        with self.write_lock():
            self._refuse_unfinished_git()
            path, text, _ = self._prepare(rf)
            atomic_write_text(path, text)
            return self._commit_locked(
                message or f"memwiki: save {rf.track}/{rf.name}\n", [self._rel(path)]
            )

    @library_call
    def remove(
        self, track: str, name: str, message: str | None = None, force: bool = False
    ) -> CommitResult:
        """Delete one RecallFile and commit the deletion; force: even when git has no copy of it."""
        check_type("message", message, (str, type(None)), "a string")
        path = self.path_of(track, name)
        with self.write_lock():
            if not path.is_file():
                raise NotFound(f"no RecallFile {track}/{name}")
            self._refuse_unfinished_git()
            # The deletion commit is the only undo `rm` offers: content git never saw (a new
            # file, or edits since the last commit) would be gone for good.
            if not force and self.repo.status_file(self._rel(path)) != 0:
                raise StateError(
                    f"{track}/{name}.md has changes that are not committed to git; "
                    "commit them first (`memwiki commit`), or pass --force to delete them for good"
                )
            from .wiki_commit import deletion

            with deletion(self.repo, path, self._rel(path)):
                try:
                    return self._commit_locked(
                        message or f"memwiki: delete {track}/{name}\n", [self._rel(path)]
                    )
                except StorageError as exc:  # the file is put back: it is not deleted
                    why = exc.message.removesuffix(": the files are saved, not committed")
                    raise StorageError(f"{track}/{name}.md is not deleted: {why}") from None

    @library_call
    def commit_results(self, recall_files: Any, message: str | None = None) -> CommitResult:
        """Validate all files, write them, and make one commit (all or nothing)."""
        if not isinstance(recall_files, list) or not recall_files:
            raise InvalidInput("recall_files must be a non-empty list")
        check_type("message", message, (str, type(None)), "a string")
        parsed = [
            rfmod.from_payload(item, f"recall_files[{i}]") for i, item in enumerate(recall_files)
        ]
        seen = set()
        for rf in parsed:
            if rf.path in seen:
                raise InvalidInput(f"{rf.path} appears twice in recall_files")
            seen.add(rf.path)
        with self.write_lock():
            self._refuse_unfinished_git()
            prepared = []
            for i, rf in enumerate(parsed):
                try:
                    prepared.append(self._prepare(rf))
                except InvalidInput as exc:
                    raise InvalidInput(f"recall_files[{i}]: {exc.message}") from None
            from .wiki_commit import write_all

            write_all([(path, text) for path, text, _ in prepared])
            return self._commit_locked(message, [self._rel(p) for p, _, _ in prepared])

    @library_call
    def commit(self, message: str | None = None) -> CommitResult:
        """Commit every change in the work tree, hand edits included."""
        check_type("message", message, (str, type(None)), "a string")
        with self.write_lock():
            return self._commit_locked(message)

    def _refuse_unfinished_git(self) -> None:
        """Not while git is mid-merge or holds the index (wiki_commit.refuse_unfinished_git)."""
        from .wiki_commit import refuse_unfinished_git

        refuse_unfinished_git(self.repo)

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _commit_locked(self, message: str | None, paths: list[str] | None = None) -> CommitResult:
        """Commit everything (paths None) or only the given paths (wiki_commit.commit)."""
        from .wiki_commit import commit

        return commit(self.repo, message, paths)

    @library_call
    def log(
        self, track: str | None = None, name: str | None = None, limit: int = 20
    ) -> list[LogEntry]:
        """Commits touching the wiki, or one RecallFile (track defaults to memory), newest first."""
        check_type("limit", limit, (int,), "an integer")  # was islice's ValueError
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        path = None
        if name is not None:
            path = str(self.path_of(track or "memory", name).relative_to(self.root))
        from .git.history import log

        return log(self.repo, path, limit)

    @library_call
    def lint(self) -> list[Problem]:
        """Every problem in the wiki's files (see memwiki.lint)."""
        from .lint import lint_wiki

        return lint_wiki(self)

    # ----------------------------------------------------------- retrieval

    @library_call
    def retrieve(
        self, query: str, *, k: int = 5, track: str | None = None, budget: int = 1500,
        mode: str = "hybrid", project: str | None = None,
        notify: Callable[[str], None] | None = None,
        deadline: float | None = None, background: bool = False, status: dict | None = None,
        defer: bool = False,
    ) -> RetrievalResult:  # fmt: skip
        """Hybrid retrieval (memwiki.index.search); defaults as memwiki.cli.argv.RETRIEVE.

        project: the project in scope (a slug; None: no preference), as project.scope gives it.
        deadline/background/status: progressive answers (memwiki.index.progressive).
        defer: edits written after the answer, by result.write_later() (memwiki.index.deferred).
        """
        from .index.embedders import shared
        from .index.indexer import Index, print_to_stderr
        from .index.search import retrieve

        # Three stats (Wiki.open made the same check): the index would create .memwiki/ in
        # a folder deleted since it was opened, or in a plain folder given to Wiki(path),
        # and answer from an empty index.
        _require_wiki(self.root)
        _reap_children()  # a caller that never closes keeps no zombie either
        notify = notify or print_to_stderr
        self._embedders = self._embedders or shared(self.config)
        index = Index(self, self.config, notify=notify, embedders=self._embedders)
        try:
            return retrieve(
                self, query, k=k, track=track, budget=budget, mode=mode, config=self.config,
                project=project, notify=notify, index=index,
                deadline=deadline, background=background, status=status, defer=defer,
            )  # fmt: skip
        except OSError as exc:
            # The sidecar removed again and again while this process read it (the index
            # retries a removal, indexer.snapshot): a filesystem failure, not a bug.
            from .index.races import raced

            if str(self.sidecar) not in str(exc.filename or "") or not raced(exc):
                raise  # not the index changing under us (a read-only or full disk: exit 5)
            raise StorageError(
                f"the index in {self.sidecar} changed while it was read ({exc.strerror}); "
                "run the command again"
            ) from None


def _check_open(path: Any, config: Any, path_optional: bool = False) -> None:
    """Wiki.open/init's arguments: was a TypeError from pathlib, or an AttributeError later."""
    from .config import Config

    check_type("path", path, (str, os.PathLike, *((type(None),) if path_optional else ())))
    check_type("config", config, (Config, type(None)), "a Config (memwiki.load_config) or None")


def _reap_children() -> None:
    """Reap the index writers (result.write_later) and background reindexes that this
    process started and that have finished: a long-lived caller collects no zombies."""
    import sys

    # A module not imported yet started nothing: a cold retrieve imports neither for this.
    for name in ("memwiki.index.deferred", "memwiki.index.background"):
        module = sys.modules.get(name)
        if module is not None:
            module.reap()


def _require_wiki(root: Path) -> None:
    """NotFound, in one line saying what to do, unless root is a wiki (layout.is_wiki)."""
    if is_wiki(root):
        return
    if (root / ".git").exists():
        raise NotFound(
            f"{root} is a git repository but not a memwiki wiki ({MISSING_MARKS}): "
            "pass your wiki with --wiki PATH, or make this one a wiki with "
            f"`memwiki init --force {root}`"
        )
    raise NotFound(f"no wiki at {root}: run `memwiki init {root}` or pass --wiki PATH")
