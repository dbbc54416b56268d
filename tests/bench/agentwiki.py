"""agentwiki benchmark: an ML engineer's agent memory (69 files, 120 queries in five kinds).

The set lives in ../shared/eval/agentwiki (read its README); it is copied to a temporary
folder so the index never lands in the shared data.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT.parent / "shared/eval/agentwiki"


def run(source: Path, modes: list[str], k: int = 5, queries_file: str = "queries.jsonl", **options):
    """(reports per mode, {kind: hybrid report}) over one wiki folder with a queries file."""
    from memwiki.config import load
    from memwiki.evaluate import by_kind, load_queries, run_queries, summarise
    from memwiki.wiki import Wiki

    work = Path(tempfile.mkdtemp(prefix="memwiki-eval-"))
    try:
        root = work / "wiki"
        shutil.copytree(source / "wiki", root)
        queries = load_queries(source / queries_file)
        runs = run_queries(
            Wiki(root), queries, modes, k=k, config=load({"wiki": str(root)}), **options
        )
        reports = [summarise(m, queries, runs[m], k) for m in modes]
        kinds = {m: by_kind(queries, runs, m, k) for m in modes}
        return reports, kinds
    finally:
        shutil.rmtree(work, ignore_errors=True)
