"""A one-conversation LoCoMo smoke check with a loose floor (the full benchmark is `make bench`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo"


@pytest.mark.skipif(
    not (LOCOMO / "26.json").exists(), reason="LoCoMo data not next to the repository"
)
def test_hybrid_retrieval_on_one_dev_conversation(tmp_path):
    import locomo

    from memwiki.config import load
    from memwiki.evaluate import evaluate, load_queries
    from memwiki.wiki import Wiki

    (conv,) = [c for c in locomo.convert(LOCOMO, "dev", tmp_path) if c.name == "26"] or [None]
    for other in tmp_path.iterdir():  # keep the check to one conversation
        assert other.name == "26" or other.is_dir()
    queries = load_queries(conv / "queries.jsonl")
    reports = evaluate(Wiki(conv), queries, ["bm25", "hybrid"], config=load({"wiki": str(conv)}))
    bm25, hybrid = reports
    assert bm25.recall_any >= 0.8 and hybrid.recall_any >= 0.8
    assert hybrid.recall_all >= 0.65
    assert hybrid.mrr >= bm25.mrr - 0.05
