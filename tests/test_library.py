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
