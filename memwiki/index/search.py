"""Retrieval: BM25 and vector candidates, fused, rolled up to files, cut to a token budget."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from . import bm25, forkscan, vector_search

# retrieve reads the weights from this module's names: a script patching
# memwiki.index.search.VECTOR_WEIGHT_MAX still changes the answer (docs/retrieval.md).
from .fusion import ENSEMBLE_WEIGHT_MAX, VECTOR_WEIGHT_MAX, fuse, scope_to_project, with_feedback
from .indexer import Index, Snapshot, print_to_stderr
from .results import FileResult, RetrievalResult, Section

MODES = ("hybrid", "bm25", "vector")
CANDIDATES = 100  # items taken from each list before fusion
SECTIONS_PER_FILE = 3
CHARS_PER_TOKEN = 4


def retrieve(
    wiki,
    query: str,
    k: int = 5,
    track: str | None = None,
    budget: int = 1500,
    mode: str = "hybrid",
    config=None,
    notify: Callable[[str], None] = print_to_stderr,
    candidates: int = CANDIDATES,
    index: Index | None = None,
    fusion: str = "score",
    vector_weight: float | None = None,
    project: str | None = None,
    deadline: float | None = None,
    background: bool = False,
    status: dict | None = None,
    defer: bool = False,
) -> RetrievalResult:
    """Search the wiki: fresh index, BM25 and vector candidates, fusion, files, sections.

    vector_weight None (the default) adapts the weight to the query (adaptive_weight).
    deadline (a time.monotonic() value) makes the answer progressive: BM25 first, vectors
    only if they are ready by then. background: vector work larger than a few files is
    left to one background reindex instead of blocking the answer (index/progressive.py).
    defer: a few edited files are answered from the index with them laid over, and the
    result's write_later() commits them (index/deferred.py); the caller calls it once the
    answer is out.
    """
    from ..errors import InvalidInput, StateError

    _check_types(query, k, budget, project, deadline)
    from ..recallfile import mend_surrogates

    # A non-UTF-8 byte in a shell argument arrives as a lone surrogate, which the model's
    # tokenizer refuses: the answer fell back to BM25 with "vectors failed (TypeError)".
    query = mend_surrogates(query)
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    check_limits(k, budget)
    if fusion not in ("score", "rrf"):
        raise InvalidInput(f"unknown fusion {fusion!r}: use score or rrf")
    if track is not None:  # any folder list --track takes: `Projects` too (docs/reference.md)
        from ..recallfile import check_track

        check_track(track)
    index = index or Index(wiki, config, notify=notify)
    index.defer_writes = False
    if defer:
        from . import deferred

        index.defer_writes = deferred.available()
    progressive = deadline is not None or background
    status = status if status is not None else {}
    want_vectors = mode in ("hybrid", "vector") and bool(query.strip())
    job = None
    if progressive:
        from ..embed import embedding_configured
        from . import progressive as prog

        # --mode vector without an embedder is an error on both paths (docs/reference.md):
        # `embed = none` is known here without loading anything, an unusable model once the
        # vector thread has tried it (below).
        if mode == "vector" and not embedding_configured(index.config):
            index.embedder()  # nothing to load: only the reason, for the message
            raise StateError(f"vector mode needs an embedder: {index.embedder_note}")
        clock = prog.Clock()
        if want_vectors and prog.vectors_fit(index, deadline, clock, with_bm25=True):
            job = prog.VectorJob(index, query, deadline)  # beside the BM25 part
        snap = prog.open_snapshot(index, mode, deadline, status, notify)
        used_mode = mode
    else:
        embedder = index.embedder() if mode != "bm25" else None
        if mode == "vector" and embedder is None:
            raise StateError(f"vector mode needs an embedder: {index.embedder_note}")
        used_mode = mode if embedder is not None or mode == "bm25" else "bm25"
        snap = index.snapshot(need_vectors=used_mode != "bm25", speculate=True)
    planned_mode = used_mode
    # A speculative snapshot is searched while its freshness scan runs (index/forkscan.py).
    # A scan that announces a change (forkscan.stale, checked between the stages) has the
    # search abandoned and the file it named indexed at once (forkscan.settle), while the
    # walk goes on; the search then runs on the updated index, and confirm() at the end
    # indexes whatever else the walk found and searches once more. settle() gives a
    # speculative snapshot only once per scan and confirm() never does, so three attempts
    # do; the last is never abandoned.
    qvec = None
    for attempt in range(3):
        used_mode = planned_mode
        if attempt < 2 and forkscan.stale(snap):
            snap = forkscan.settle(index, snap)
            continue
        rows = snap.state.rows
        bm25_hits: list[tuple[int, float]] = []
        vector_hits: list[tuple[int, float]] = []
        coverage = 0.0
        if (used_mode in ("hybrid", "bm25") or progressive) and query.strip():
            try:
                found_bm25 = bm25.search_hits(
                    snap.bm25_dir, query, candidates, track, searcher=snap.searcher()
                )
            except Exception as exc:  # a Whoosh file damaged or deleted behind the manifest's back
                notify(f"index damaged (BM25 {type(exc).__name__}); rebuilding it")
                snap.close()
                index.update(full=True, need_vectors=used_mode != "bm25" and not progressive)
                snap = index.snapshot(need_vectors=used_mode != "bm25" and not progressive)
                rows = snap.state.rows
                found_bm25 = bm25.search_hits(
                    snap.bm25_dir, query, candidates, track, searcher=snap.searcher()
                )
            # Each hit's row through the manifest's id index: no id -> row map of the whole index.
            at = ((rows.find(h), s) for h, s in found_bm25.items)
            bm25_hits = [(i, s) for i, s in at if i is not None]
            coverage = found_bm25.coverage
        if attempt < 2 and forkscan.stale(snap):
            snap = forkscan.settle(index, snap)
            continue
        note = ""
        want_vectors = want_vectors and used_mode in ("hybrid", "vector")
        # --mode vector asked for vectors alone: the thread runs even when the estimate says
        # they are late, or an unusable model gave exit 0 on a loaded machine, exit 4 idle.
        if (
            progressive
            and want_vectors
            and job is None
            and mode != "vector"
            and not prog.vectors_fit(index, deadline, clock)
        ):
            used_mode, note = "bm25", "BM25 only: vectors would not be ready within the deadline"
        elif progressive and want_vectors:
            job = job or prog.VectorJob(index, query, deadline)
            found = job.result(
                snap, lambda sn, qv: vector_search.vector_hits(sn, qv, track, candidates)
            )
            if found is None and mode == "vector" and job.no_embedder:
                snap.close()
                raise StateError(f"vector mode needs an embedder: {index.embedder_note}")
            if found is None:  # not ready in time (or no vectors yet): the BM25 answer stands
                used_mode, note = "bm25", job.reason
            else:
                vector_hits = found
                if used_mode == "vector":  # vectors alone, scored as without a deadline
                    bm25_hits, coverage = [], 0.0
        elif want_vectors and embedder is not None:
            # A writer holding the lock leaves the last index, maybe of the model before a
            # switch: never score this model's query against it.
            note = vector_search.mismatch(snap.state, index.model_key(embedder))
            if note:
                used_mode = "bm25"
            else:
                qvec = vector_search.query_vector(embedder, query) if qvec is None else qvec
                vector_hits = vector_search.vector_hits(snap, qvec, track, candidates)
        if attempt < 2 and forkscan.stale(snap):
            snap = forkscan.settle(index, snap)
            continue
        ensemble = (snap.state.embedder or {}).get("provider") == "ensemble"
        most = ENSEMBLE_WEIGHT_MAX if ensemble else VECTOR_WEIGHT_MAX
        fused = fuse(bm25_hits, vector_hits, coverage, fusion, vector_weight, most)
        # The feedback's words come from the best item in scope; its hits are scoped with the
        # rest (the factor is per item, so scoping the sum scopes each part).
        scoped = scope_to_project(rows, fused, project, query)[0] if project else None
        fused = with_feedback(
            snap, fused, query, track, candidates, bm25_hits, vector_hits, fusion, scoped
        )
        fused, scope, person = scope_to_project(rows, fused, project, query)
        results = _rollup(snap, fused, k)
        _fill_sections(snap, results, fused, budget)
        if attempt < 2 and forkscan.stale(snap):  # the word came late: still before the walk ends
            snap = forkscan.settle(index, snap)
            continue
        fresh = forkscan.confirm(index, snap)
        if fresh is snap:
            break
        snap = fresh
    facts: dict[str, object] = {
        "files": snap.state.indexed_files(),
        "items": len(rows),
        "embedder": snap.state.embedder if used_mode != "bm25" else None,
        "stale": snap.stale,
        "updated_files": snap.updated_files,
        "project": project,
    }
    if scope:
        facts["project_named"] = scope
    if person:
        facts["prefer_global"] = True
    if progressive:
        facts.update(_progress_facts(snap, job, mode, index.config, background, index))
        if note:
            facts["note"] = note
    elif used_mode != mode:
        facts["note"] = note or f"BM25 only: {index.embedder_note}"
    snap.close()
    result = RetrievalResult(query, used_mode, results, facts)
    if snap.deferred is not None:
        from . import deferred

        result.write_later = deferred.once(index, snap.deferred)
    return result


def _check_types(query, k, budget, project, deadline) -> None:
    """Arguments of the wrong type are InvalidInput. Bug it prevents: Wiki.retrieve(None),
    k="3", budget=None or deadline="soon" raised AttributeError or TypeError from deep inside."""
    from ..errors import check_type

    for name, value, types in (
        ("the query", query, (str,)), ("k", k, (int,)), ("budget", budget, (int,)),
        ("project", project, (str, type(None))), ("deadline", deadline, (int, float, type(None))),
    ):  # fmt: skip
        check_type(name, value, types)


def check_limits(k: int, budget: int, names: tuple[str, str] = ("k", "budget")) -> None:
    """InvalidInput for k below 1 or a negative budget, named as the caller knows them
    (the CLI: -k, --budget; a library caller read about flags it never passed)."""
    from ..errors import InvalidInput

    if k < 1:
        raise InvalidInput(f"{names[0]} must be at least 1")
    if budget < 0:  # was taken as 0 (no budget) without a word
        raise InvalidInput(f"{names[1]} must be 0 (no limit) or more")


def _progress_facts(snap, job, mode, config, background, index) -> dict:
    """What a progressive answer says about its vectors, and the background build it started."""
    from . import progressive as prog

    facts = {"pending_items": snap.pending, "background_reindex": False}
    if background and (
        snap.behind
        or (
            mode != "bm25"
            and (prog.vectors_need_work(snap, job, config) or prog.model_wants_preparing(index))
        )
    ):
        from . import background as bg

        with contextlib.suppress(OSError):  # the answer matters more than the background build
            facts["background_reindex"] = bg.start(index.root, index.wiki.sidecar)
        facts["background_running"] = True
    return facts


def _rollup(snap: Snapshot, fused: dict[int, float], k: int) -> list[FileResult]:
    """Files ranked by their best item's fused score."""
    best: dict[str, tuple[float, int]] = {}
    for i, score in fused.items():
        path = snap.state.rows[i].path
        if path not in best or score > best[path][0]:
            best[path] = (score, i)
    # Scores equal to 1e-9 are ties, broken by path: the same on every device.
    ranked = sorted(best.items(), key=lambda kv: (-bm25.tie_key(kv[1][0]), kv[0]))[:k]
    out = []
    for path, (score, i) in ranked:
        row = snap.state.rows[i]
        out.append(
            FileResult(path, row.track, row.name, row.description, score, projects=row.projects)
        )
    return out


def _fill_sections(
    snap: Snapshot, results: list[FileResult], fused: dict[int, float], budget: int
) -> None:
    """Give each file its best sections, best files first, within the token budget."""
    per_file: dict[str, list[int]] = {r.path: [] for r in results}
    rows_ = snap.state.rows
    for i in sorted(fused, key=lambda i: (-fused[i], rows_[i].path, rows_[i].start_line)):
        path = snap.state.rows[i].path
        if path in per_file and len(per_file[path]) < SECTIONS_PER_FILE:
            per_file[path].append(i)
    lines_of: dict[str, list[str]] = {}
    left = budget * CHARS_PER_TOKEN
    for depth in range(SECTIONS_PER_FILE):
        for r in results:
            rows = per_file[r.path]
            if depth >= len(rows) or left <= 0:
                continue
            row = snap.state.rows[rows[depth]]
            if any(
                s.start_line <= row.end_line and row.start_line <= s.end_line for s in r.sections
            ):
                continue  # overlapping window of a section already shown
            if r.path not in lines_of:
                lines_of[r.path] = _read_lines(snap, r.path)
            text = "\n".join(lines_of[r.path][row.start_line - 1 : row.end_line]).strip()
            if len(text) > left:
                text = (
                    text[: max(left, 0)].rsplit("\n", 1)[0] if "\n" in text[:left] else text[:left]
                )
                text += " …"
            left -= len(text)
            r.sections.append(
                Section(row.heading, row.start_line, row.end_line, text, fused[rows[depth]])
            )
        if left <= 0:
            break


def _read_lines(snap: Snapshot, path: str) -> list[str]:
    try:
        return (snap.root / path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
