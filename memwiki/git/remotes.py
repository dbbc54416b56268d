"""Remotes and `memwiki clone`: where a wiki syncs to, and how a device gets its copy."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from ..errors import InvalidInput, MemwikiError, NotFound, StateError, StorageError
from ..layout import MISSING_MARKS, is_wiki
from . import repo as gitstore
from .credentials import redact, transport

DEFAULT_REMOTE = "origin"


def normalize_url(url: str) -> str:
    """A remote URL as stored: plain local paths become absolute so any directory works."""
    url = url.strip()
    if not url or any(ch.isspace() for ch in url):
        raise InvalidInput(f"invalid remote URL {url!r}")
    if transport(url) == "local" and "://" not in url:
        return str(Path(url).expanduser().resolve())
    return url


def get_remote(repo: pygit2.Repository, name: str) -> pygit2.Remote:
    """The named remote, or a NotFound that says how to add one."""
    try:
        return repo.remotes[name]
    except (KeyError, ValueError, pygit2.GitError):
        raise NotFound(f"no remote {name!r}: add one with `memwiki remote add URL`") from None


def add_remote(wiki, url: str, name: str = DEFAULT_REMOTE) -> dict:
    """Add the remote (or point an existing one at url); no network access."""
    url = normalize_url(url)
    repo = wiki.repo
    with wiki.write_lock():
        previous = repo.remotes[name].url if name in list(repo.remotes.names()) else None
        try:
            if previous is None:
                repo.remotes.create(name, url)
            elif previous != url:
                repo.remotes.set_url(name, url)
                _forget_tracking(repo, name)
        except (ValueError, pygit2.GitError) as exc:
            raise InvalidInput(f"cannot add remote {name!r} {redact(url)}: {exc}") from None
    return {"name": name, "url": redact(url), "previous": redact(previous) if previous else None}


def _forget_tracking(repo: pygit2.Repository, name: str) -> None:
    """What this wiki knew of the remote's branches, dropped when the remote's URL changes.

    They describe the old repository: kept, a new empty remote looked like one whose branch
    had been deleted (sync refused to push), and a new one's history like a rewrite.
    """
    for ref in [r for r in repo.references if r.startswith(f"refs/remotes/{name}/")]:
        repo.references.delete(ref)
    prefix = f"memwiki.{name}/".lower()
    for key in {e.name for e in repo.config if e.name.lower().startswith(prefix)}:
        _unset(repo, key)
    for branch in repo.branches.local:
        key = f"branch.{branch}.remote"
        if key in repo.config and repo.config[key] == name:
            for k in (key, f"branch.{branch}.merge"):
                if k in repo.config:
                    del repo.config[k]


def remote_info(wiki, name: str = DEFAULT_REMOTE) -> dict:
    """Remotes and how the branch stands against the last fetch (no network access)."""
    repo = wiki.repo
    remotes = [{"name": r.name, "url": redact(r.url or "")} for r in repo.remotes]
    info: dict = {"remotes": remotes, "remote": None, "branch": None, "upstream": None}
    info.update(ahead=None, behind=None)
    if repo.head_is_unborn or repo.head_is_detached:
        return info
    branch = repo.head.shorthand
    info["branch"] = branch
    if name not in [r["name"] for r in remotes]:
        return info
    info["remote"] = name
    upstream = upstream_branch(repo, branch, name)
    info["upstream"] = f"{name}/{upstream}"
    tracking = lookup(repo, f"refs/remotes/{name}/{upstream}")
    if tracking is not None:
        info["ahead"], info["behind"] = repo.ahead_behind(repo.head.target, tracking.id)
    return info


def upstream_branch(repo: pygit2.Repository, branch: str, remote: str) -> str:
    """The remote branch this branch syncs with: the configured upstream, else its own name."""
    cfg = repo.config
    try:
        merge = cfg[f"branch.{branch}.merge"]
        if cfg[f"branch.{branch}.remote"] == remote and merge.startswith("refs/heads/"):
            return merge[len("refs/heads/") :]
    except KeyError:
        pass
    return branch


def _remote_branches(repo: pygit2.Repository, remote: str) -> list[str]:
    prefix = f"{remote}/"
    return sorted(
        b[len(prefix) :]
        for b in repo.branches.remote
        if b.startswith(prefix) and not b.endswith("/HEAD")
    )


def fetched_upstream(
    repo: pygit2.Repository, branch: str, remote: str, synced: pygit2.Oid | None = None
) -> str:
    """upstream_branch, once the remote's branches are fetched (and pruned): a branch with no
    upstream, whose name the remote lacks, syncs with the remote's only branch; one whose
    upstream was fetched before and is gone now follows the one remote branch that holds
    what it synced last (git's `--prune` removed it), and refuses when there is none.

    synced: the tracking branch's commit before the fetch, if there was one.

    Bugs it prevents: a wiki made with `init --remote` onto a remote whose one branch is
    `master` pushed a separate `main` beside it, and the devices never exchanged edits; and
    after a teammate renamed the remote's `main` to `trunk` (or deleted it), sync pushed
    `main` back, so memwiki's devices and git's users wrote to two branches from then on.
    """
    name = upstream_branch(repo, branch, remote)
    gone = f"memwiki.{remote}/{name}.gone"  # a refusal below, remembered for the next sync
    if lookup(repo, f"refs/remotes/{remote}/{name}") is not None:
        _unset(repo, gone)
        return name
    names = _remote_branches(repo, remote)
    configured = repo.config.get_multivar(f"branch.{branch}.merge")
    if synced is None and gone in repo.config and f"refs/heads/{name}" in list(configured):
        synced = pygit2.Oid(hex=repo.config[gone])
    if synced is not None:  # it was there before: deleted or renamed since
        try:
            followed = _follow(repo, branch, remote, name, names, synced)
        except StateError:
            repo.config[gone] = str(synced)
            raise
        _unset(repo, gone)
        return followed
    if f"branch.{branch}.merge" in repo.config:  # `git clone` of an empty remote sets it
        return name
    return names[0] if len(names) == 1 else name  # never synced: a first push


def _unset(repo: pygit2.Repository, key: str) -> None:
    if key in repo.config:
        del repo.config[key]


def _follow(repo, branch: str, remote: str, name: str, names: list[str], synced) -> str:
    """The remote branch that took over from the vanished `name` (a rename), or StateError."""
    holders = []
    for other in names:
        commit = lookup(repo, f"refs/remotes/{remote}/{other}")
        if commit is not None and (commit.id == synced or repo.descendant_of(commit.id, synced)):
            holders.append(other)
    if len(holders) == 1:
        repo.config[f"branch.{branch}.remote"] = remote
        repo.config[f"branch.{branch}.merge"] = f"refs/heads/{holders[0]}"
        return holders[0]
    others = f" (it has {', '.join(names)})" if names else " (it has no branch at all)"
    raise StateError(
        f"{remote} has no branch {name} any more{others}: nothing was changed or pushed; "
        f"to sync with another branch run `git branch --set-upstream-to {remote}/BRANCH` in "
        "the wiki, or `git branch --unset-upstream` to sync as for the first time (a push "
        f"of {branch}); then `memwiki sync`"
    )


def set_upstream(repo: pygit2.Repository, branch: str, remote: str, upstream: str) -> None:
    """Record the upstream branch once, as `git push -u` would."""
    cfg = repo.config
    if f"branch.{branch}.remote" not in cfg:
        # Git users see the tracking branch as after `git push -u`.
        cfg[f"branch.{branch}.remote"] = remote
        cfg[f"branch.{branch}.merge"] = f"refs/heads/{upstream}"


def lookup(repo: pygit2.Repository, ref: str) -> pygit2.Commit | None:
    """The commit a reference points at, or None."""
    try:
        return repo.references[ref].peel(pygit2.Commit)
    except (KeyError, pygit2.GitError):
        return None


# ---------------------------------------------------------------- clone


@dataclass
class CloneResult:
    """Where a clone went and what it is now."""

    url: str
    path: str
    branch: str | None
    commit: str | None
    config_file: str
    warnings: list[str] = field(default_factory=list)
    hooks: str | None = None  # what installing the wiki's pre-commit hooks did, if it has them

    def to_dict(self) -> dict:
        """JSON form (the `memwiki clone --json` schema)."""
        return {
            "url": self.url,
            "path": self.path,
            "branch": self.branch,
            "commit": self.commit,
            "config_file": self.config_file,
            "warnings": list(self.warnings),
            "hooks": self.hooks,
        }


def _check_target(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise StateError(
            f"{target} already exists: pass the place for the clone (`memwiki clone URL PATH`)"
        )


def _choose_branch(repo: pygit2.Repository) -> None:
    """When the remote's HEAD names no branch, check out main, else its only/first branch."""
    if not repo.head_is_unborn:
        return
    names = sorted(b for b in repo.branches.remote if not b.endswith("/HEAD"))
    if not names:
        repo.set_head("refs/heads/main")  # an empty remote: the first sync creates main
        return
    chosen = next((n for n in names if n.split("/", 1)[1] == "main"), names[0])
    remote_branch = repo.branches.remote[chosen]
    local = repo.branches.local.create(chosen.split("/", 1)[1], remote_branch.peel(pygit2.Commit))
    local.upstream = remote_branch
    repo.checkout(local)


_TEMP = re.compile(r"^\.(?P<name>.+)\.clone-(?P<pid>\d+)$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clone_lock(temp: Path) -> Path:
    """The file a running clone holds locked beside its temporary folder."""
    return temp.with_name(temp.name + ".lock")


def _hold(temp: Path) -> int | None:
    """Lock temp's lock file for this clone (None where flock is not to be had)."""
    import fcntl

    try:
        fd = os.open(_clone_lock(temp), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _running(temp: Path, pid: int) -> bool:
    """True while the clone that made temp runs.

    Its lock says so even when its pid has gone to another process since (after a reboot,
    or on a busy machine): by the pid alone such a folder was kept for as long as that
    process lived. A folder without a lock file (an older memwiki's) goes by the pid.
    """
    import fcntl

    try:
        fd = os.open(_clone_lock(temp), os.O_RDWR)
    except FileNotFoundError:
        return _alive(pid)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock this check took
    return False


def _remove_dead_clones(target: Path) -> None:
    """Delete temporary clones of target left by a killed `memwiki clone`."""
    for sibling in target.parent.glob(f".{target.name}.clone-*"):
        # A lock alone: its clone was killed before it made the folder or after the rename.
        folder = sibling.with_suffix("") if sibling.suffix == ".lock" else sibling
        m = _TEMP.match(folder.name)
        if folder is not sibling and folder.exists():
            continue  # judged with its folder, by this lock
        if not m or m["name"] != target.name or _running(folder, int(m["pid"])):
            continue
        if folder is sibling:
            shutil.rmtree(folder, ignore_errors=True)
        _clone_lock(folder).unlink(missing_ok=True)


def clone(url: str, path: Path | None, config) -> CloneResult:
    """Clone a wiki atomically, complete its layout if needed, make it the configured wiki.

    The clone is made in a hidden sibling (.<name>.clone-<pid>) and renamed into place only
    when complete, so a failed or killed clone never leaves a half-made wiki at the path.
    """
    url = normalize_url(url)
    target = Path(path).expanduser() if path is not None else config.wiki_path
    target = target.absolute()
    _check_target(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {target.parent}: {exc.strerror}") from None
    _remove_dead_clones(target)
    temp = target.parent / f".{target.name}.clone-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    held = _hold(temp)
    try:
        return _clone_into_place(url, target, temp, config)
    finally:
        _clone_lock(temp).unlink(missing_ok=True)
        if held is not None:
            os.close(held)


def _clone_into_place(url: str, target: Path, temp: Path, config) -> CloneResult:
    """clone's work once temp is this process's: clone there, check, rename into place."""
    from ..config import write_file_setting
    from ..wiki import PRE_COMMIT_CONFIG, Wiki
    from . import network, precommit

    try:
        repo = network.clone_into(url, temp, config)
        _choose_branch(repo)
        had_hooks = (temp / PRE_COMMIT_CONFIG).is_file()
        if not repo.head_is_unborn and not is_wiki(temp):
            # A code project's URL used to be laid out as a wiki, and the first `sync`
            # pushed "memwiki: complete the wiki layout" and memory/ files into it.
            raise StateError(
                f"{redact(url)} is not a memwiki wiki ({MISSING_MARKS}); nothing was "
                "cloned: to make it one on purpose, `git clone` it and run "
                "`memwiki init --force PATH`"
            )
        # An empty remote gets the layout, and every clone the .gitignore lines that keep
        # the sidecar and per-device files out (adding only the missing ones).
        Wiki.init(temp, force=True)
        if target.exists():
            target.rmdir()  # empty (checked above): rename needs the name free
        os.rename(temp, target)
    except (pygit2.GitError, OSError) as exc:
        shutil.rmtree(temp, ignore_errors=True)
        raise StorageError(f"cannot clone {redact(url)}: {exc}") from None
    except MemwikiError:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    wiki = Wiki.open(target)
    config_file = write_file_setting(config, "wiki", str(wiki.root))
    warnings = []
    if config.settings["wiki"].source.startswith("env:"):
        var = config.settings["wiki"].source.split(":", 1)[1]
        warnings.append(f"{var} is set and overrides the config file: unset it to use the clone")
    hooks = None
    if had_hooks and not precommit.is_memwikis_own(wiki.root):
        # A pulled config may run any command at every commit and sync: the person reads it
        # and decides (docs/sync.md, "A wiki someone else wrote").
        warnings.append(
            f"{PRE_COMMIT_CONFIG} is not memwiki's own, so its hooks were not installed "
            f"(they could run any command): read it, then run `memwiki hooks install` in {wiki.root}"
        )
    elif had_hooks:
        try:
            setup = precommit.run_install(wiki)
        except MemwikiError as exc:
            setup = None
            warnings.append(f"{exc.message}: run `memwiki hooks install` in {wiki.root}")
        if setup is not None:
            hooks = setup.message
            if not setup.installed:
                warnings.append(setup.message)
    head = gitstore.head_commit(wiki.repo)
    branch = None if wiki.repo.head_is_unborn else wiki.repo.head.shorthand
    return CloneResult(
        redact(url),
        str(wiki.root),
        branch,
        str(head.id) if head else None,
        str(config_file),
        warnings,
        hooks,
    )
