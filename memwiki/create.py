"""Creating a wiki: `memwiki init` (git init, the tracks, .gitignore, README, the
pre-commit configuration, the first commit), or the missing parts of the layout added to
an existing repository (`init --force`, a clone of an empty remote)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import StateError, StorageError
from .fsutil import atomic_write_text
from .layout import TRACKS, is_wiki
from .wiki import PRE_COMMIT_CONFIG, Wiki

if TYPE_CHECKING:
    from .config import Config


def init_wiki(path: Path, force: bool = False, config: Config | None = None) -> tuple[Wiki, bool]:
    """Create a wiki (git init, tracks, .gitignore, README, first commit); (wiki, created)."""
    import pygit2

    from .git import repo as gitstore
    from .git.index_format import keep_index_readable

    path = Path(path).expanduser()
    if not path.exists() and not force:
        # Refused before anything is created: a refused init used to leave its empty
        # folders behind inside the other repository.
        existing = next((p for p in path.absolute().parents if p.exists()), None)
        outer = _enclosing_repo(existing) if existing is not None else None
        if outer is not None:
            raise StateError(
                f"{path.absolute()} is inside the git repository {outer}; "
                "choose another place or pass --force"
            )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {path}: {exc.strerror}") from None
    root = path.resolve()
    if (root / ".git").exists():
        wiki = Wiki(root, config)
        if not is_wiki(root) and not force:
            raise StateError(
                f"{root} is a git repository but not a memwiki wiki; "
                "choose another place or pass --force to add the wiki layout to it"
            )
        keep_index_readable(wiki.repo)  # a clone, a repository made by git
        changed = ensure_layout(root)
        if changed:
            # Only the layout files: the person's own uncommitted work stays uncommitted.
            gitstore.commit_paths(wiki.repo, changed, "memwiki: complete the wiki layout\n")
        return wiki, bool(changed)

    outer = _enclosing_repo(root)
    if outer is not None and not force:
        raise StateError(
            f"{root} is inside the git repository {outer}; choose another place or pass --force"
        )
    pygit2.init_repository(str(root), initial_head="main")
    wiki = Wiki(root, config)
    keep_index_readable(wiki.repo)
    # The layout is staged by name: a developer's own excludes file (`*.md` in
    # ~/.gitignore) kept README.md out of the first commit, and another device's clone
    # then committed it again as "complete the wiki layout".
    gitstore.stage_paths(wiki.repo, ensure_layout(root))
    gitstore.commit_all(wiki.repo, "memwiki: initialise the wiki\n")
    return wiki, True


def ensure_layout(root: Path) -> list[str]:
    """Create what is missing of the layout; the relative paths it wrote."""
    from .git.ignored import ensure_gitignore
    from .templating import load

    changed: list[str] = []
    for track in TRACKS:
        keep = root / track / ".gitkeep"
        if not (root / track).is_dir():
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_text("")
            changed.append(f"{track}/.gitkeep")
    if ensure_gitignore(root):
        changed.append(".gitignore")
    readme = root / "README.md"
    if not readme.exists():
        atomic_write_text(readme, load("wiki/README.md"))
        changed.append("README.md")
    hooks = root / PRE_COMMIT_CONFIG
    if not hooks.exists():  # a repository's own pre-commit set-up (init --force) stays
        atomic_write_text(hooks, load("wiki/pre-commit-config.yaml"))
        changed.append(PRE_COMMIT_CONFIG)
    return changed


def _enclosing_repo(path: Path) -> Path | None:
    """The work tree of a git repository that contains path, if any."""
    import pygit2

    found = pygit2.discover_repository(str(path))
    if not found:
        return None
    repo = pygit2.Repository(found)
    return Path(repo.workdir).resolve() if repo.workdir else None
