"""memwiki used as a library inside one long-lived process: an agent loop or a server
that keeps one `Wiki` for days, calls it from several threads, while other processes
edit the wiki. The real model, real threads, real files."""

from __future__ import annotations

import gc

from memwiki import Wiki
from memwiki.embed.onnx import OnnxEmbedder


def _put(wiki: Wiki, name: str, description: str, body: str) -> None:
    wiki.commit_results(
        [{"track": "memory", "name": name, "description": description, "content": body}]
    )


def _live_models() -> list[OnnxEmbedder]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, OnnxEmbedder)]


def test_one_wiki_loads_the_model_once_for_all_its_retrieves(wiki):
    """Bug it prevents: every Wiki.retrieve loaded the ONNX model anew (a new Index each
    call): about 25 ms of set-up per answer in a long-lived process, and a session built
    and thrown away each time."""
    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nDeployed by Argo CD.\n")
    first = wiki.retrieve("how is billing deployed?", notify=lambda m: None)
    assert first.mode == "hybrid" and first.paths() == ["memory/billing-service.md"]
    models = _live_models()
    assert len(models) == 1  # kept by the wiki, not thrown away with the call's index
    for query in ("argo cd", "deployment of the billing service", "billing"):
        assert wiki.retrieve(query, notify=lambda m: None).mode == "hybrid"
    assert _live_models() == models  # the same session answered every later call


def test_arguments_of_the_wrong_type_are_invalid_input(wiki):
    """Bug it prevents: a library caller's retrieve(None), k="3", budget=None,
    deadline="soon", put("text") or list_recall_files(limit="5") raised AttributeError or
    TypeError from deep inside memwiki instead of the documented MemwikiError."""
    import pytest

    from memwiki.errors import InvalidInput

    _put(wiki, "billing-service", "How billing is deployed", "# Billing\nArgo CD.\n")
    bad_retrieves = [
        {"query": None},
        {"query": 123},
        {"query": "billing", "k": "3"},
        {"query": "billing", "k": 2.5},
        {"query": "billing", "k": True},
        {"query": "billing", "budget": None},
        {"query": "billing", "project": 5},
        {"query": "billing", "deadline": "soon"},
    ]
    for kwargs in bad_retrieves:
        query = kwargs.pop("query")
        with pytest.raises(InvalidInput) as caught:
            wiki.retrieve(query, mode="bm25", notify=lambda m: None, **kwargs)
        assert "\n" not in caught.value.message
    with pytest.raises(InvalidInput, match="expected a RecallFile"):
        wiki.put("# not a RecallFile")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="limit must be an integer"):
        wiki.list_recall_files(limit="5")  # type: ignore[arg-type]
    assert wiki.retrieve("billing", mode="bm25", k=1, budget=0).paths() == [
        "memory/billing-service.md"
    ]
