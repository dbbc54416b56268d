"""Commands over the sidecar index: retrieve, reindex, doctor, eval."""

from __future__ import annotations

from pathlib import Path

import typer

from .argv import RETRIEVE
from .context import config, open_wiki, state
from .options import JSON
from .output import emit_json


def retrieve(
    query: str = typer.Argument(..., help="What to look for, in plain words."),
    k: int = typer.Option(RETRIEVE.k, "-k", help="At most K files."),
    track: str = typer.Option(None, "--track", help="Only this track (memory, skill, ...)."),
    budget: int = typer.Option(
        RETRIEVE.budget, "--budget", help="Token budget for all sections together."
    ),
    mode: str = typer.Option(RETRIEVE.mode, "--mode", help="hybrid, bm25 or vector."),
    as_json: bool = JSON,
    files: bool = typer.Option(False, "--files", help="Print only the paths of the files found."),
    project: str = typer.Option(
        RETRIEVE.project,
        "--project",
        help="Prefer this project's files: auto (the current one), all, or a slug.",
    ),
    deadline: int = typer.Option(
        None,
        "--deadline",
        help="Answer within MS milliseconds of the process start: BM25 alone if vectors are late.",
    ),
) -> None:
    """Find the memory and skills relevant to a query (markdown block for agents)."""
    from .fast import run_retrieve

    # Normally memwiki.cli.fast parses retrieve without Typer; this path serves --help
    # and programmatic use of the Typer app.
    run_retrieve(
        state.wiki, query, k, track, budget, mode, as_json, files, project, deadline_ms=deadline
    )


def reindex(
    full: bool = typer.Option(
        False, "--full", help="Rebuild from scratch (vectors come from the cache)."
    ),
    as_json: bool = JSON,
    background: bool = typer.Option(
        False, "--background", hidden=True, help="The detached build a retrieve starts."
    ),
) -> None:
    """Bring the sidecar index up to date (or rebuild it)."""
    from ..index.indexer import Index

    wiki = open_wiki()
    index = Index(wiki, wiki.config)
    if background:
        from ..index.background import run

        run(index, index.notify)
        return
    report = index.update(full=full)
    data = {
        "full": report.full,
        "indexed": len(report.indexed),
        "removed": len(report.removed),
        "embedded": report.embedded,
        "problems": [{"path": p, "message": m} for p, m in sorted(report.problems.items())],
    }
    if as_json:
        emit_json(data)
    else:
        kind = "rebuilt" if report.full else "updated"
        print(
            f"index {kind}: {data['indexed']} files indexed, {data['removed']} removed, {report.embedded} items embedded"
        )


def doctor(as_json: bool = JSON) -> None:
    """Check the wiki, git, the index and the embedder, and run one live retrieval (exit 1 if broken)."""
    from ..doctor import Check, run_checks
    from ..hosts.integrate.detect import broken_installs

    cfg = config()
    checks = run_checks(cfg)
    # A hook or schedule running a memwiki that is gone fails on every prompt or every hour;
    # the wiki layer's checks cannot see agents' files, so the command adds them.
    checks.extend(Check("hosts", False, note) for note in broken_installs(cfg))
    if as_json:
        emit_json({"ok": all(c.ok for c in checks), "checks": [c.to_dict() for c in checks]})
    else:
        for c in checks:
            print(f"{'ok  ' if c.ok else 'FAIL'}  {c.name:<10} {c.detail}")
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def eval_(
    queries: Path = typer.Argument(
        ..., help='JSONL: {"query": ..., "relevant": ["memory/x.md"]} per line.'
    ),
    k: int = typer.Option(5, "--k", "-k", help="Cut-off for R@k."),
    mode: str = typer.Option(
        "bm25,vector,hybrid", "--mode", help="Comma-separated modes, run side by side."
    ),
    as_json: bool = JSON,
) -> None:
    """Measure retrieval quality and latency on a query set (R@k-any, R@k-all, MRR, nDCG@10)."""
    from ..evaluate import evaluate, load_queries

    modes = [m.strip() for m in mode.split(",") if m.strip()]
    from ..errors import InvalidInput

    if k < 1:  # -k 0 scored nothing; a negative k cut the ranking from its end
        raise InvalidInput("eval: -k must be at least 1")
    if not modes:
        raise InvalidInput("eval: --mode names no mode")
    modes = list(dict.fromkeys(modes))
    wiki = open_wiki()
    query_set = load_queries(queries)
    for q in query_set:  # a typo in a path would score 0 without a word
        missing = next((r for r in q.relevant if not (wiki.root / r).is_file()), None)
        if missing is not None:
            raise InvalidInput(
                f"{queries}: relevant path {missing!r} (query {q.query[:60]!r}) is not a file "
                "of the wiki: paths are relative to the wiki, such as memory/x.md"
            )
    reports = evaluate(wiki, query_set, modes, k=k, config=wiki.config)
    if as_json:
        emit_json({"k": k, "modes": [r.to_dict() for r in reports]})
        return
    print(
        f"{'mode':<8} {'queries':>7} {f'R@{k}-any':>9} {f'R@{k}-all':>9} {'MRR':>6} {'nDCG@10':>8} {'p50 ms':>7} {'p95 ms':>7}"
    )
    for r in reports:
        print(
            f"{r.mode:<8} {r.queries:>7} {r.recall_any:>9.3f} {r.recall_all:>9.3f} {r.mrr:>6.3f} "
            f"{r.ndcg10:>8.3f} {r.latency_median_ms:>7.1f} {r.latency_p95_ms:>7.1f}"
        )
