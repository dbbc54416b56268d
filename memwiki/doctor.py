"""`memwiki doctor`: check the wiki, git, the index and the embedder, with one live retrieval."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        """JSON form."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def run_checks(config) -> list[Check]:
    """Run every check; later checks are skipped when the wiki itself is missing."""
    from .errors import MemwikiError
    from .wiki import Wiki

    checks: list[Check] = []
    try:
        wiki = Wiki.open(config.wiki_path, config)
    except MemwikiError as exc:
        return [Check("wiki", False, exc.message)]
    checks.append(Check("wiki", True, f"{wiki.root} ({config.settings['wiki'].source})"))
    checks.append(_git(wiki))
    checks.extend(_git_hygiene(wiki))
    checks.extend(_owners(wiki))
    remote = _remote(wiki, config)
    if remote is not None:
        checks.append(remote)
    index, check = _index(wiki, config)
    checks.append(check)
    checks.append(_embedder(index))
    if index is not None:
        checks.append(_live(wiki, index))
    return checks


def _git(wiki) -> Check:
    from .fsutil import is_temp_name
    from .git.repo import read_status
    from .git.unfinished import unfinished

    try:
        repo = wiki.repo
        branch = "(unborn)" if repo.head_is_unborn else repo.head.shorthand
        # As `memwiki commit` sees it: with the notes only a personal excludes file ignores.
        status = read_status(repo, wait=False)
        dirty = [p for p, f in status.items() if not f & 0x4000]  # not ignored
        # A write killed before its rename leaves its temporary file: never committed.
        temps = [p for p in dirty if is_temp_name(p.rsplit("/", 1)[-1])]
        dirty = [p for p in dirty if p not in temps]
        head = "" if repo.head_is_unborn else str(repo.head.target)[:12]
        detail = f"branch {branch} at {head}; {len(dirty)} uncommitted change(s)"
        if temps:
            detail += (
                f"; {len(temps)} temporary file(s) a killed write left ({temps[0]}): delete them"
            )
        problem = unfinished(repo)
        if problem is not None:
            return Check("git", False, f"{detail}; {problem}")
        if dirty:
            detail += " (run `memwiki commit`)"
        return Check("git", True, detail)
    except Exception as exc:  # anything git says wrong is a broken setup
        from .git.index_format import SPLIT_INDEX, split_index_problem

        if SPLIT_INDEX in str(exc):
            return Check("git", False, split_index_problem(wiki.repo))
        return Check("git", False, f"{type(exc).__name__}: {exc}")


def _git_hygiene(wiki) -> list[Check]:
    """Files the .gitignore ignores but git still tracks (sync would keep committing them)."""
    from .git.ignored import tracked_but_ignored

    try:
        paths = tracked_but_ignored(wiki.repo)
    except Exception as exc:  # a broken repository is already reported by the git check
        return [Check("tracked", False, f"{type(exc).__name__}: {exc}")]
    if not paths:
        return []
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return [
        Check(
            "tracked",
            False,
            f"{len(paths)} ignored file(s) still tracked by git: {shown} "
            "(`memwiki untrack-ignored` stops tracking them and keeps them on disk)",
        )
    ]


def _owners(wiki) -> list[Check]:
    """Files root owns in an ordinary user's wiki (a `sudo memwiki ...`, a root cron job):
    each refuses a later write; and the private index of a wiki this user cannot write."""
    import os

    from .layout import SIDECAR
    from .owners import owned_by, owner_name

    checks = []
    if wiki.sidecar != wiki.root / SIDECAR:
        text = f"{wiki.root / SIDECAR} cannot be used: your index of this wiki is {wiki.sidecar}"
        checks.append(Check("sidecar", True, text))
    me = os.geteuid()
    if me == 0:
        return checks
    paths, count = owned_by(str(wiki.root), 0)
    if count:
        shown = ", ".join(os.path.relpath(p, wiki.root) for p in paths)
        more = f" and {count - len(paths)} more" if count > len(paths) else ""
        fix = f"`sudo chown -R {owner_name(me)} {wiki.root}`"
        text = f"{count} file(s) in the wiki belong to root: {shown}{more}; run {fix}"
        checks.append(Check("owner", False, text))
    return checks


def _remote(wiki, config) -> Check | None:
    """One line on the configured remote: reachable, authenticated, branch present."""
    from .git import network
    from .git.credentials import redact
    from .git.remotes import DEFAULT_REMOTE, upstream_branch

    repo = wiki.repo
    names = list(repo.remotes.names())
    if not names:
        return None
    name = DEFAULT_REMOTE if DEFAULT_REMOTE in names else names[0]
    url = redact(repo.remotes[name].url or "")
    branch = "main" if repo.head_is_unborn or repo.head_is_detached else repo.head.shorthand
    upstream = upstream_branch(repo, branch, name)
    found = network.ls_remote(repo, name, upstream, config)
    if not found.ok:
        return Check("remote", False, f"{name} {url}: {found.detail}")
    if not found.branch_present and f"refs/remotes/{name}/{upstream}" in repo.references:
        # It was there at the last fetch: "the next sync pushes it" is no longer what happens.
        return Check(
            "remote",
            True,
            f"{name} {url}: reachable, authenticated; branch {upstream} is gone from it "
            "(deleted or renamed): the next `memwiki sync` follows a rename or says what to do",
        )
    if not found.branch_present:
        return Check(
            "remote",
            True,
            f"{name} {url}: reachable, authenticated; no branch {upstream} yet "
            "(the next `memwiki sync` pushes it)",
        )
    return Check(
        "remote", True, f"{name} {url}: reachable, authenticated, branch {upstream} present"
    )


def _index(wiki, config):
    from .index import freshness
    from .index.indexer import Index

    messages: list[str] = []
    index = Index(wiki, config, notify=messages.append)
    try:
        before, problem = index.committed_state()
        changes, _ = freshness.scan(wiki.root, before) if before else (None, None)
        was = dict(before.embedder or {}) if before else {}
        snap = index.snapshot(need_vectors=True)
    except Exception as exc:
        from .errors import as_storage_error

        why = as_storage_error(exc)  # the machine's refusal in the words the commands use
        text = why.message if why is not None else f"{type(exc).__name__}: {exc}"
        return None, Check("index", False, f"cannot build the index: {text}")
    state = snap.state
    stale = "fresh" if not problem and not changes else f"was {problem or 'stale'}, now updated"
    # Read as it is, not updated: another writer held it, or the sidecar cannot be written
    # (then a FAIL: it said "now updated" of an index a read-only .memwiki/ kept stale).
    unwritable = [m for m in messages if m.startswith("the index cannot be updated")]
    if snap.stale:
        stale = unwritable[0] if unwritable else "behind the wiki: another process is updating it"
    from .recallfile import printable  # one line, whatever a pulled folder is called

    skipped = [printable(f"{p}: {e.problem}") for p, e in state.files.items() if e.problem]
    files, items = state.indexed_files(), len(state.rows)  # no plugin notes
    detail = f"{stale}; {files} file{'s' * (files != 1)}, {items} item{'s' * (items != 1)}"
    if skipped:
        detail += f"; {len(skipped)} not indexed ({skipped[0]}{' …' if len(skipped) > 1 else ''})"
    now = state.embedder or {}
    if was and now and was != now:  # the embed setting changed since the last index
        detail += f"; vectors rebuilt for {now.get('model')} (were {was.get('model')}'s)"
    if snap.pending:
        detail += f"; {snap.pending} items without a vector (BM25 finds them)"
    damaged = _damaged_vectors(snap)
    if damaged:
        detail += f"; {damaged} damaged vectors: run `memwiki reindex --full` to embed them again"
    return index, Check("index", not damaged and not unwritable, detail)


def _damaged_vectors(snap) -> int:
    """Rows whose stored vector is not a unit vector (a segment zeroed or overwritten)."""
    try:
        matrix = snap.matrix()
    except (OSError, ValueError):
        return 0  # a segment of the wrong shape is found and rebuilt by the index itself
    if matrix is None:
        return 0
    from .index.vectors import damaged_rows

    return damaged_rows(matrix, snap.state)


def _embedder(index) -> Check:
    if index is None:
        return Check("embedder", False, "not checked: the index could not be built")
    emb = index.embedder()
    if emb is None:
        from .embed import embedding_configured

        # `embed = none` is a choice; a configured model that cannot load is a broken setup
        broken = embedding_configured(index.config)
        return Check("embedder", not broken, f"BM25-only: {index.embedder_note}")
    from .embed import MODEL_SHA256

    detail = f"{emb.provider} {emb.model} ({emb.dim} dims)"
    if emb.model == "all-MiniLM-L6-v2-int8":
        detail += f", model sha256 {MODEL_SHA256[:12]}… verified"
        detail += f"; {_prepared(index.config)}"
    return Check("embedder", True, detail)


def _prepared(config) -> str:
    """Where the prepared copy of the model is (embed/prepared.py); loading the embedder wrote it."""
    from .embed import prepare_model

    cache = config.model_cache_dir
    if cache is None:
        return "no prepared copy (model_cache = off): each cold query takes about 80 ms more"
    try:
        ok = prepare_model(config)
    except Exception as exc:  # the copy only saves time; say why there is none
        return f"no prepared copy ({type(exc).__name__}: {exc})"
    return f"prepared copy in {cache}" if ok else "no prepared copy: it did not match the model"


def _live(wiki, index) -> Check:
    from .index.search import retrieve

    rows = index.snapshot(need_vectors=True).state.rows
    query = rows[0].description if rows else "memory"
    started = time.perf_counter()
    try:
        result = retrieve(wiki, query, k=3, index=index)
    except Exception as exc:
        return Check("retrieve", False, f"{type(exc).__name__}: {exc}")
    ms = (time.perf_counter() - started) * 1000
    from .recallfile import printable  # an escape sequence in a pulled name stays text

    top = printable(result.results[0].path) if result.results else "(no result)"
    ok = bool(result.results) or not rows
    return Check("retrieve", ok, f"{query[:40]!r} -> {top} in {ms:.0f} ms ({result.mode})")
