"""wordllama (static token embeddings, PyPI `wordllama` 0.4.0.post1) beside MiniLM, in the lab.

    python tests/bench/lab.py gather                        # once: BM25 + MiniLM int8
    python tests/bench/lab_models.py embed wordllama        # q["cos:wordllama"]
    python tests/bench/lab_wordllama.py score               # the table (docs/retrieval.md style)
    python tests/bench/lab_wordllama.py diff VARIANT        # queries gained / lost vs shipped
    python tests/bench/lab_wordllama.py halves              # leave-half-out, extra-term family

Variants: vectors alone and hybrid (the shipped adaptive fusion 0.3 -> HI, squared) with
MiniLM, wordllama, and their z-score ensemble (lab.py VEC "z:" / "zw<w>:"); and MiniLM's
shipped hybrid plus beta x wordllama's cosine / its best over its top 100 as a third term.
Not part of `make bench`; lab.py's `score` has no BM25 feedback (lab_multi.py models it).
"""

from __future__ import annotations

import itertools
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402

WL = "cos:wordllama"


def third_term(base, beta, key=WL, floor=-1.0):
    """base fusion + beta * key's cosine / its best, over key's top 100 items."""
    import numpy as np

    def fuse(bm, vec, q, w):
        out = base(bm, vec, q, w)
        c = q[key]
        top = np.argsort(-c)[:100]
        best = float(c[top[0]]) or 1.0
        for i in top:
            if c[i] >= floor:
                out[int(i)] = out.get(int(i), 0) + beta * float(c[i]) / best
        return out

    return fuse


def vector_only(bm, vec, q, w):
    return dict(vec)


def sq(lo, hi):
    return lab.adaptive(lo, hi, 1, 2.0)


# (label, VEC, fusion)
VARIANTS = [
    ("shipped: MiniLM, 0.3-1.5 sq", "cos", sq(0.3, 1.5)),
    ("MiniLM vectors alone", "cos", vector_only),
    ("wordllama vectors alone", WL, vector_only),
    ("wordllama hybrid 0.3-1.5 sq", WL, sq(0.3, 1.5)),
    ("wordllama hybrid 0.3-3.0 sq", WL, sq(0.3, 3.0)),
    ("z MiniLM+wl vectors alone", "z:" + WL, vector_only),
    ("z MiniLM+wl 0.3-1.5 sq", "z:" + WL, sq(0.3, 1.5)),
    ("z MiniLM+wl 0.3-2.0 sq", "z:" + WL, sq(0.3, 2.0)),
    ("z MiniLM+wl 0.3-3.0 sq", "z:" + WL, sq(0.3, 3.0)),
]
for wt in (0.25, 0.5):
    VARIANTS += [
        (f"zw{wt} vectors alone", f"zw{wt}:" + WL, vector_only),
        (f"zw{wt} 0.3-1.5 sq", f"zw{wt}:" + WL, sq(0.3, 1.5)),
        (f"zw{wt} 0.3-2.0 sq", f"zw{wt}:" + WL, sq(0.3, 2.0)),
    ]
for beta in (0.05, 0.1, 0.2, 0.3, 0.5):
    VARIANTS.append((f"shipped + {beta} x wl cos", "cos", third_term(sq(0.3, 1.5), beta)))
VARIANTS += [
    ("z MiniLM+wl 0.3-5.0 sq", "z:" + WL, sq(0.3, 5.0)),
    ("zw2 vectors alone", "zw2:" + WL, vector_only),
    ("zw2 0.3-3.0 sq", "zw2:" + WL, sq(0.3, 3.0)),
]
E5 = "cos:e5-small-q4"
EXTRA_E5 = [
    ("e5 ensemble (shipped opt-in): z MiniLM+e5 vectors alone", "z:" + E5, vector_only),
    ("e5 ensemble (shipped opt-in): z MiniLM+e5 0.3-3.0 sq", "z:" + E5, sq(0.3, 3.0)),
    ("z MiniLM+e5+wl vectors alone", f"zz:{E5}|{WL}", vector_only),
    ("z MiniLM+e5+wl 0.3-3.0 sq", f"zz:{E5}|{WL}", sq(0.3, 3.0)),
    ("z MiniLM+e5+wl 0.3-4.0 sq", f"zz:{E5}|{WL}", sq(0.3, 4.0)),
    ("e5 ensemble 0.3-3.0 + 0.1 x wl cos", "z:" + E5, third_term(sq(0.3, 3.0), 0.1)),
]


def per_query(sets, fuse, vec):
    """{(set, n): (any, all)} per query."""
    lab.VEC = vec
    out = {}
    for name, ws in sets.items():
        for w in ws:
            for n, q in enumerate(w["queries"]):
                r = lab.ranked_files(w, q, fuse)[:5]
                rel = set(q["relevant"])
                out[(name, w["name"], n)] = (any(p in rel for p in r), rel <= set(r))
    return out


def row(sets, vec, fuse):
    lab.VEC = vec
    r = lab.summary(sets, fuse)
    return (
        *r["locomo"], *r["agentwiki"], *r["paraphrase"], r["identifier"][0], *r["half0"],
        *r["half1"],
    )  # fmt: skip


def score() -> None:
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    have_e5 = "cos:e5-small-q4" in sets["agentwiki"][0]["queries"][0]
    print(
        "| variant | LoCoMo dev any / all | agentwiki any / all | paraphrase any / all "
        "| identifier | half 0 | half 1 |\n|---|---|---|---|---|---|---|"
    )
    for label, vec, fuse in VARIANTS + (EXTRA_E5 if have_e5 else []):
        r = row(sets, vec, fuse)
        print(
            f"| {label} | {r[0]:.3f} / {r[1]:.3f} | {r[2]:.3f} / {r[3]:.3f} | "
            f"{r[4]:.3f} / {r[5]:.3f} | {r[6]:.3f} | {r[7]:.3f} / {r[8]:.3f} | "
            f"{r[9]:.3f} / {r[10]:.3f} |",
            flush=True,
        )


def diff(label: str) -> None:
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    by = {v[0]: v for v in VARIANTS + EXTRA_E5}
    base = per_query(sets, VARIANTS[0][2], VARIANTS[0][1])
    _, vec, fuse = by[label]
    new = per_query(sets, fuse, vec)
    for s in ("locomo-dev", "agentwiki"):
        for k, what in ((0, "any"), (1, "all")):
            gain = [q for q in base if q[0] == s and new[q][k] and not base[q][k]]
            lost = [q for q in base if q[0] == s and base[q][k] and not new[q][k]]
            aw = s == "agentwiki"
            names = (lambda qs: [f"a{q[2] + 1:03d}" for q in qs]) if aw else (lambda qs: len(qs))
            print(
                f"{s} R@5-{what}: +{len(gain)} -{len(lost)}  gained {names(gain)} lost {names(lost)}"
            )


def halves() -> None:
    """Third-term family (beta, hi) and ensemble family (weight, hi), each tuned on LoCoMo
    dev + one agentwiki half (objective as lab_halves.py), scored on the other half."""
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    aw = sets["agentwiki"][0]
    pos = {id(q): n for n, q in enumerate(aw["queries"])}
    fams = {
        "third term (beta, hi)": [
            ((b, hi), "cos", third_term(sq(0.3, hi), b) if b else sq(0.3, hi))
            for b, hi in itertools.product((0.0, 0.05, 0.1, 0.2, 0.3, 0.5), (1.0, 1.5, 2.0, 3.0))
        ],
        "ensemble (wl weight, hi)": [
            ((wt, hi), f"zw{wt}:" + WL if wt else "cos", sq(0.3, hi))
            for wt, hi in itertools.product((0.0, 0.25, 0.5, 1.0), (1.0, 1.5, 2.0, 3.0))
        ],
    }
    for fam, grid in fams.items():
        loco = {}
        for g, vec, fuse in grid:
            lab.VEC = vec
            loco[g] = lab.metrics(sets["locomo-dev"], fuse)
        for half in (0, 1):
            res = []
            for g, vec, fuse in grid:
                lab.VEC = vec
                t = lab.metrics([aw], fuse, lambda q, h=half: pos[id(q)] % 2 == h)
                h = lab.metrics([aw], fuse, lambda q, h=half: pos[id(q)] % 2 != h)
                obj = (t[0] + t[1]) / 2 + (loco[g][0] + loco[g][1]) / 2
                res.append((obj, g, t, h))
            obj, g, t, h = max(res, key=lambda x: x[0])
            ship = next(x for x in res if x[1] in ((0.0, 1.5),))
            print(
                f"{fam}: tuned on half {half}: {g}  LoCoMo dev {loco[g][0]:.3f}/{loco[g][1]:.3f}  "
                f"tuning half {t[0]:.3f}/{t[1]:.3f}  held-out {h[0]:.3f}/{h[1]:.3f}  "
                f"(shipped on held-out {ship[3][0]:.3f}/{ship[3][1]:.3f})",
                flush=True,
            )


def _zsum(qo, keys, weights=None):
    """The real pipeline's ensemble score (vector_search.vector_scores) for MiniLM + keys."""
    import numpy as np

    a = np.asarray(qo["cos"], dtype=np.float64)
    ma, sa = a.mean(), a.std() + 1e-9
    z = (a - ma) / sa
    weights = weights or [1.0] * len(keys)
    for key, wt in zip(keys, weights, strict=True):
        b = np.asarray(qo[key], dtype=np.float64)
        z = z + wt * (b - b.mean()) / (b.std() + 1e-9)
    return (ma + sa * z / (1 + sum(weights))).astype(np.float32)


def multi(lab_dir: str) -> None:
    """The chosen variants through the real pipeline's fusion and BM25 feedback
    (lab_multi.py gather LAB first; its BM25 hits and coverage, search.fuse,
    feedback.expand), with this lab's wordllama / e5 cosines."""
    import lab_multi

    from memwiki.index import feedback, search

    sets = lab_multi.load([lab_dir])
    old = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    pairs = {}
    for name in ("locomo-dev", "agentwiki"):
        olds = {w["name"]: w for w in old[name]}
        for w in sets[name]:
            wo = olds[Path(w["root"]).name]
            assert w["paths"] == wo["paths"], w["root"]
            lab_multi.attach_snap(w)
            pairs.setdefault(name, []).append((w, wo))
    has_e5 = E5 in old["agentwiki"][0]["queries"][0]

    def run(vec_of, most, beta=0.0, fb=True):
        def go(w, q, qo):
            vec = q["vec"] if vec_of is None else lab_multi._vec_list(vec_of(qo))
            fused = search.fuse(q["bm25"], vec, q["coverage"], most=most)
            if beta:
                c = qo[WL]
                top = c.argsort()[::-1][:100]
                best = float(c[top[0]]) or 1.0
                for i in top:
                    fused[int(i)] = fused.get(int(i), 0.0) + beta * float(c[i]) / best
            if fb and q["bm25"] and vec:
                fused = feedback.expand(w["_snap"], fused, q["query"], None, 100)
            return lab_multi._verdict(w, q, fused)

        return go

    rows = [
        ("shipped (MiniLM, 1.5, feedback)", run(None, 1.5)),
        ("shipped without feedback", run(None, 1.5, fb=False)),
        ("shipped + 0.05 x wl cos", run(None, 1.5, 0.05)),
        ("shipped + 0.1 x wl cos", run(None, 1.5, 0.1)),
        ("shipped + 0.2 x wl cos", run(None, 1.5, 0.2)),
    ]
    for hi in (1.5, 2.0, 3.0):
        rows.append((f"z MiniLM+wl, {hi}", run(lambda qo: _zsum(qo, [WL]), hi)))
    for wt in (0.25, 0.5):
        for hi in (1.5, 2.0):
            rows.append(
                (f"zw{wt} MiniLM+wl, {hi}", run(lambda qo, wt=wt: _zsum(qo, [WL], [wt]), hi))
            )
    if has_e5:
        rows.append(("e5 ensemble (opt-in), 3.0", run(lambda qo: _zsum(qo, [E5]), 3.0)))
        rows.append(("MiniLM+e5+wl, 3.0", run(lambda qo: _zsum(qo, [E5, WL]), 3.0)))
        rows.append(("MiniLM+e5+wl, 4.0", run(lambda qo: _zsum(qo, [E5, WL]), 4.0)))
    print(
        "| variant (with feedback) | LoCoMo dev any / all | agentwiki any / all "
        "| paraphrase any / all | half 0 | half 1 |\n|---|---|---|---|---|---|"
    )
    for label, fn in rows:
        got = {}
        for name, ps in pairs.items():
            t = {"any": 0, "all": 0, "pa": 0, "pl": 0, "h0a": 0, "h0l": 0, "h1a": 0, "h1l": 0}
            n = 0
            for w, wo in ps:
                for j, (q, qo) in enumerate(zip(w["queries"], wo["queries"], strict=True)):
                    assert q["query"] == qo["query"]
                    a, al = fn(w, q, qo)
                    t["any"] += a
                    t["all"] += al
                    t["pa"] += a and q["kind"] == "paraphrase"
                    t["pl"] += al and q["kind"] == "paraphrase"
                    t[f"h{j % 2}a"] += a
                    t[f"h{j % 2}l"] += al
                    n += 1
            got[name] = (t, n)
        (lt, ln), (at, an) = got["locomo-dev"], got["agentwiki"]
        print(
            f"| {label} | {lt['any'] / ln:.3f} / {lt['all'] / ln:.3f} "
            f"| {at['any'] / an:.3f} / {at['all'] / an:.3f} "
            f"| {at['pa'] / 40:.3f} / {at['pl'] / 40:.3f} "
            f"| {at['h0a'] * 2 / an:.3f} / {at['h0l'] * 2 / an:.3f} "
            f"| {at['h1a'] * 2 / an:.3f} / {at['h1l'] * 2 / an:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    if sys.argv[1] == "multi":
        multi(sys.argv[2])
        sys.exit()
    {"score": score, "halves": halves}.get(sys.argv[1], lambda: diff(sys.argv[2]))()
