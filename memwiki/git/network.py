"""fetch, push, clone and a reachability check: through system git, else through libgit2.

Every function here is one network operation on one remote and raises one clear
StorageError; transport.py runs git, credentials.py holds libgit2's fallback credentials.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pygit2

from ..errors import MemwikiError, StorageError
from ..lock import FileLock
from .credentials import Callbacks, NoWriteAccess, host_of, is_push_race, redact, transport
from .transport import GitRun, NetworkTimeout, explain, find_git, hook_said, run_git

# A ref lock a dead push left in a remote on this machine (git's and libgit2's wording).
_LOCK_FAILURE = re.compile(r"(?:failed to lock file|Unable to create) '([^']+\.lock)'")
_RACE = ("fetch first", "non-fast-forward", "fast-forward", "stale info", "not present locally")


def _no_git_note(url: str, config) -> str:
    """What libgit2 cannot honour, for the error of a fallback that failed."""
    if transport(url) == "ssh":
        host = host_of(url)
        ssh_config = config.home / ".ssh" / "config"
        try:
            lines = ssh_config.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        for line in lines:
            words = line.split()
            patterns = [p for p in words[1:] if not p.startswith("!")]
            is_host = len(words) > 1 and words[0].lower() == "host"
            if is_host and any(fnmatch.fnmatch(host, p) for p in patterns):
                return (
                    f"~/.ssh/config Host aliases need the git command ({host} is one): install git"
                )
        return "~/.ssh/config, core.sshCommand and GIT_SSH_COMMAND need the git command"
    if transport(url) in ("http", "https"):
        return "credential helpers, http.sslCAInfo and proxies need the git command"
    return ""


def _fallback_error(callbacks: Callbacks, exc: Exception, action: str, config) -> StorageError:
    error = callbacks.error(exc, action)
    if isinstance(error, NoWriteAccess):  # the git command would change nothing
        return error
    text = error.message
    note = _no_git_note(callbacks.url, config)
    return StorageError(f"{text} ({note})" if note else text)


def local_gitdir(url: str) -> str | None:
    """The git directory of a remote on this machine (file:// or a path), else None."""
    if transport(url) != "local":
        return None
    path = unquote(urlsplit(url).path) if url.startswith("file://") else url
    try:
        return pygit2.Repository(path).path
    except (pygit2.GitError, KeyError, ValueError):
        return None


# ---------------------------------------------------------------- fetch


def fetch(repo: pygit2.Repository, name: str, config) -> list[str]:
    """Fetch every branch of the remote into refs/remotes/<name>/ (dropping the ones it no
    longer has); the server's messages."""
    remote = repo.remotes[name]
    url = remote.url or ""
    # A partial clone (`git clone --filter=blob:none`) lacks file contents that merges,
    # `log` and `restore` read, and libgit2 cannot fetch them when it needs them: sync
    # failed on every merge with `failed to insert entry: invalid object specified`.
    # One complete fetch fills them in, and the filter is dropped so later fetches are
    # complete too (a killed sync leaves the filter, and the next one fetches again).
    partial = f"remote.{name}.partialclonefilter"
    refetch = ["--refetch", "--no-filter"] if partial in repo.config else []
    if find_git(config) is None:
        if refetch:
            raise StorageError(
                f"the wiki is a partial clone ({partial}): memwiki needs every file, which "
                "only the git command can fetch: install git, or clone the wiki again"
            )
        callbacks = Callbacks(url, config)
        try:
            remote.fetch(
                callbacks=callbacks,
                message="memwiki sync: fetch",
                prune=pygit2.enums.FetchPrune.PRUNE,
            )
        except (pygit2.GitError, MemwikiError) as exc:
            raise _fallback_error(callbacks, exc, "fetch from", config) from None
        return []
    try:
        run = run_git(
            # --prune: a branch deleted or renamed on the remote must not look present here
            ["fetch", "--progress", "--prune", *refetch, "--no-write-fetch-head", name],
            config,
            Path(repo.workdir),
        )
    except NetworkTimeout as exc:
        raise explain(None, url, "fetch from", exc) from None
    if run.returncode != 0:
        raise explain(run, url, "fetch from")
    if refetch:
        del repo.config[partial]
    return run.remote_lines


# ---------------------------------------------------------------- push


@dataclass
class PushOutcome:
    """pushed, raced (the remote moved: fetch and retry), or refused with the server's reason."""

    pushed: bool = False
    raced: bool = False
    refusal: str | None = None
    messages: tuple[str, ...] = ()


def _push_git(repo: pygit2.Repository, name: str, spec: str, config, url: str) -> PushOutcome:
    try:
        run = run_git(["push", "--progress", "--porcelain", name, spec], config, Path(repo.workdir))
    except NetworkTimeout as exc:
        said = explain(None, url, "push to", exc).message
        hook = _pre_push_hook(repo)
        if hook is not None:  # it may be what hung: a hook waiting for input, a slow test
            said += f"; the pre-push hook {hook} runs within that time too"
        raise StorageError(said) from None
    messages = tuple(run.remote_lines)
    statuses = [ln.split("\t") for ln in run.stdout.splitlines() if ln.count("\t") >= 2]
    # Another push that updated the branch between the server's advertisement and ours (a
    # device, or the server side of a push whose memwiki was killed) is a race too.
    moved = any("but expected" in ln for ln in run.remote_lines)
    for flag, _, summary, *rest in statuses:
        if flag == "!":
            reason = " ".join([summary, *rest]).strip()
            raced = any(m in reason.lower() for m in _RACE) and "remote rejected" not in reason
            if raced or (moved and "failed to update ref" in reason):
                return PushOutcome(raced=True, messages=messages)
            return PushOutcome(refusal=_refusal(run, reason), messages=messages)
    if run.returncode != 0:
        hook = _pre_push_hook(repo) if not statuses else None
        if hook is not None:  # it ran before anything was sent: no status line
            raise StorageError(
                f"cannot push to {redact(url)}: the pre-push hook {hook} refused it "
                f"({hook_said(run)}): memwiki sync pushes with git, which runs it"
            )
        if not statuses:
            raise explain(run, url, "push to")
        return PushOutcome(refusal=_refusal(run, "refused"), messages=messages)
    return PushOutcome(pushed=True, messages=messages)


def _pre_push_hook(repo: pygit2.Repository) -> Path | None:
    """The pre-push hook `git push` runs here (core.hooksPath, often global, or
    .git/hooks), if there is one.

    Bug it prevents: a global hook (husky, a secret scanner) refusing memwiki's push was
    reported as git's "failed to push some refs", its own reason dropped.
    """
    try:
        configured = repo.config["core.hooksPath"]
    except (KeyError, pygit2.GitError):
        configured = ""
    folder = Path(configured).expanduser() if configured else Path(repo.path) / "hooks"
    hook = folder if folder.is_absolute() else Path(repo.workdir) / folder
    hook = hook / "pre-push"
    return hook if hook.is_file() and os.access(hook, os.X_OK) else None


def _refusal(run: GitRun, reason: str) -> str:
    reason = reason.replace("[remote rejected]", "").replace("[rejected]", "").strip() or "refused"
    reason = reason.strip("()") if reason.startswith("(") else reason
    remote = run.remote_lines
    return ("remote: " + " / ".join(remote) + f" ({reason})") if remote else reason


def _push_libgit2(remote: pygit2.Remote, spec: str, config) -> PushOutcome:
    callbacks = Callbacks(remote.url or "", config)
    try:
        remote.push([spec], callbacks=callbacks)
    except pygit2.GitError as exc:
        if is_push_race(exc):
            return PushOutcome(raced=True)
        if _LOCK_FAILURE.search(str(exc)):
            return PushOutcome(refusal=str(exc))
        raise _fallback_error(callbacks, exc, "push to", config) from None
    except MemwikiError as exc:  # raised by the credentials callback
        raise _fallback_error(callbacks, exc, "push to", config) from None
    if callbacks.rejected:
        if callbacks.push_raced():
            return PushOutcome(raced=True)
        return PushOutcome(refusal="; ".join(callbacks.rejected.values()))
    return PushOutcome(pushed=True)


def _push_once(repo, name: str, spec: str, config) -> PushOutcome:
    remote = repo.remotes[name]
    if find_git(config) is None:
        return _push_libgit2(remote, spec, config)
    return _push_git(repo, name, spec, config, remote.url or "")


def push(repo: pygit2.Repository, name: str, ref_name: str, upstream: str, config) -> PushOutcome:
    """Push the branch; raced=True when refused because the remote moved (fetch and retry)."""
    url = repo.remotes[name].url or ""
    spec = f"{ref_name}:refs/heads/{upstream}"
    gitdir = local_gitdir(url)
    if gitdir is None:
        outcome = _push_once(repo, name, spec, config)
    else:
        # A push killed at the wrong moment can leave the remote's ref lock behind, which then
        # blocks every device. memwiki's pushes to a remote on this machine (or a shared disk)
        # take this lock, so whoever holds it knows a leftover ref lock is stale.
        with FileLock(Path(gitdir) / "memwiki-push.lock", timeout=60):
            outcome = _push_once(repo, name, spec, config)
            stale = _LOCK_FAILURE.search(outcome.refusal or "")
            if stale and Path(stale.group(1)).resolve().is_relative_to(Path(gitdir).resolve()):
                Path(stale.group(1)).unlink(missing_ok=True)
                outcome = _push_once(repo, name, spec, config)
    if outcome.refusal is not None:
        # The refused commits stay in the branch, so deleting a refused file is not enough:
        # every later push sent the same commits and was refused again, for good.
        hint = ""
        if f"refs/remotes/{name}/{upstream}" in repo.references:
            hint = (
                f" (if it refused a file: delete it, run `git reset {name}/{upstream}` in the "
                "wiki, which keeps every file as it is, then `memwiki sync`)"
            )
        raise StorageError(
            f"{redact(url)} refused the push of {upstream}: {outcome.refusal}; nothing was "
            f"lost, and the next sync it accepts pushes it{hint}"
        )
    return outcome


# ---------------------------------------------------------------- clone and ls-remote


# `git clone` reads the developer's git config: a remote named by clone.defaultRemoteName
# made `memwiki sync` fail with "no remote 'origin'", and init.defaultRefFormat = reftable
# (git 2.45+; git 3's default) makes refs libgit2 cannot read. A wiki gets git's defaults.
CLONE_AS_A_WIKI = ["-c", "init.defaultRefFormat=files", "clone", "--origin", "origin"]


def clone_into(url: str, target: Path, config) -> pygit2.Repository:
    """Clone url into target (which must not exist); one clear error when it fails."""
    if find_git(config) is None:
        callbacks = Callbacks(url, config)
        try:
            return pygit2.clone_repository(url, str(target), callbacks=callbacks)
        except (pygit2.GitError, MemwikiError) as exc:
            raise _fallback_error(callbacks, exc, "clone", config) from None
    try:
        run = run_git([*CLONE_AS_A_WIKI, "--progress", "--", url, str(target)], config)
    except NetworkTimeout as exc:
        raise explain(None, url, "clone", exc) from None
    if run.returncode != 0:
        raise explain(run, url, "clone")
    return pygit2.Repository(str(target))


@dataclass
class Reachability:
    """What `git ls-remote` found: the remote answered (so it is reachable and let us in)."""

    ok: bool
    branch_present: bool
    detail: str


def ls_remote(repo: pygit2.Repository, name: str, branch: str, config) -> Reachability:
    """Connect to the remote and look for the branch; never raises for a network failure."""
    url = repo.remotes[name].url or ""
    if find_git(config) is None:
        callbacks = Callbacks(url, config)
        try:
            found = repo.remotes[name].list_heads(callbacks=callbacks)
        except (pygit2.GitError, MemwikiError) as exc:
            return Reachability(False, False, str(_fallback_error(callbacks, exc, "reach", config)))
        names = [getattr(h, "name", "") for h in found]
        return Reachability(True, f"refs/heads/{branch}" in names, "")
    try:
        run = run_git(["ls-remote", "--heads", name], config, Path(repo.workdir))
    except NetworkTimeout as exc:
        return Reachability(False, False, str(explain(None, url, "reach", exc)))
    if run.returncode != 0:
        return Reachability(False, False, str(explain(run, url, "reach")))
    heads = {ln.split("\t", 1)[1] for ln in run.stdout.splitlines() if "\t" in ln}
    return Reachability(True, f"refs/heads/{branch}" in heads, "")
