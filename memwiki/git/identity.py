"""The identity memwiki commits with: the user's git identity, read as git reads it where
libgit2 differs (`includeIf "hasconfig:remote.*.url:..."`, git 2.36+, which libgit2
skips), or memwiki's own when none is configured."""

from __future__ import annotations

import pygit2

FALLBACK_NAME = "memwiki"
FALLBACK_EMAIL = "memwiki@localhost"


def _skips_includes(repo: pygit2.Repository) -> bool:
    try:
        return any(e.name.startswith("includeif.hasconfig:") for e in repo.config)
    except pygit2.GitError:
        return False


def git_identity(repo: pygit2.Repository) -> tuple[str, str] | None:
    """(user.name, user.email) as the git command resolves them for repo, when its config
    has includes libgit2 skips and git is installed; None otherwise (libgit2's answer stands).

    Bug it prevents: a work identity chosen by the remote's URL (`[includeIf
    "hasconfig:remote.*.url:https://corp/**"]`) was left out, and memwiki committed to the
    team's wiki with the developer's personal email where `git commit` used the work one.
    """
    if not _skips_includes(repo):
        return None
    import shutil

    from .transport import git_config_values

    git = shutil.which("git")
    if git is None:
        return None
    # --git-dir: never a GIT_DIR the environment names (a hook's, a dotfiles set-up's)
    found = git_config_values(git, r"^user\.(name|email)$", git_dir=repo.path)
    name, email = found.get("user.name"), found.get("user.email")
    return (name, email) if name and email else None


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The user's git identity, or memwiki's own when none is configured."""
    try:
        found = git_identity(repo)  # None unless libgit2 would miss a conditional include
        return pygit2.Signature(*found) if found else repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(FALLBACK_NAME, FALLBACK_EMAIL)
