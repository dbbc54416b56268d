"""Candidate laboratory: new candidates from the first pass, without a second model call.

    python tests/bench/lab.py gather          # once: BM25 + MiniLM candidates in /tmp/memwiki-lab
    python tests/bench/lab_prf.py score       # every variant: LoCoMo dev, agentwiki, halves, kinds
    python tests/bench/lab_prf.py halves      # each family's parameters chosen on one half
    python tests/bench/lab_prf.py grid final  # each variant's gains and losses, in queries
    python tests/bench/lab_prf.py hard        # where the missed relevant files sit
    cd tests/bench && python lab_prf.py confirm   # the real pipeline, feedback off and on

Families (docs/retrieval.md, "Third pass"): Rocchio feedback on the query vector from the
fused first pass, "more like this" neighbours of the top files (item-item cosine), the
residual of the query vector once the top file is explained, and BM25 expansion with terms
of the fused top items. Every variant starts from the shipped fusion on the same lists.
Agentwiki's halves are its alternate queries; LoCoMo test is never used here.
"""

from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402
import lab_query as lq  # noqa: E402

KINDS = lq.KINDS
MIN_COSINE = 0.15


# ------------------------------------------------------------------ shared pieces


def vec_list(cos, n=100):
    """The vector candidates as the pipeline takes them: top n by cosine, above MIN_COSINE."""
    import numpy as np

    top = np.argsort(-cos, kind="stable")[:n]
    return [(int(i), float(cos[i])) for i in top if cos[i] >= MIN_COSINE]


def fuse(q, cos, bm=None):
    """The shipped score fusion of the BM25 list and a vector score array."""
    hits = (q["bm25"] if bm is None else bm)[:100]
    vec = vec_list(cos)
    wt = lq.weight(q)
    out: dict[int, float] = {}
    if hits:
        best = hits[0][1] or 1.0
        out = {i: s / best for i, s in hits}
    if vec:
        best = vec[0][1] or 1.0
        for i, s in vec:
            out[i] = out.get(i, 0.0) + wt * s / best
    return out


def top_items(items, m):
    return sorted(items, key=lambda i: (-items[i], i))[:m]


def top_files(w, items, f):
    """The best f files of a fused item dict, each with its best item."""
    files = lq.max_rollup(w, items)
    order = sorted(files, key=lambda p: (-files[p], p))[:f]
    best = {}
    for i in sorted(items, key=lambda i: (-items[i], i)):
        best.setdefault(w["paths"][i], i)
    return [(p, best[p], files[p]) for p in order]


def shipped(q, w):
    return lq.max_rollup(w, fuse(q, q["cos"]))


# ------------------------------------------------------------------ 1. Rocchio on the query vector


def rocchio(beta, m, unit="items", mix=None):
    """q' = q + beta * mean of the feedback vectors (top m fused items, or the best items of
    the top m files), cosines from q' (M q' / |q'|, computed from q's cosines: no query vector
    is needed), fused again. mix: fuse mix * cos' + (1 - mix) * cos instead."""
    import numpy as np

    def run(q, w):
        first = fuse(q, q["cos"])
        rows = top_items(first, m) if unit == "items" else [i for _, i, _ in top_files(w, first, m)]
        M = w["matrix"]
        c = np.asarray(M[rows], dtype=np.float64).mean(axis=0)
        cos = np.asarray(q["cos"], dtype=np.float64)
        qc = float(cos[rows].mean())  # q . c
        norm = math.sqrt(max(1.0 + 2 * beta * qc + beta * beta * float(c @ c), 1e-12))
        new = (cos + beta * (np.asarray(M, dtype=np.float64) @ c)) / norm
        if mix is not None:
            new = mix * new + (1 - mix) * cos
        return lq.max_rollup(w, fuse(q, new.astype(np.float32)))

    return run


# ------------------------------------------------------------------ 2. more like this


def mlt(gamma, f=1, how="add", src="best", floor=0.0):
    """Items similar to the top f files' best item (src=best) or to any of their items
    (src=all) gain gamma * that file's score * max(sim - floor, 0) / (1 - floor)
    (how=add) or take at least that (how=max)."""
    import numpy as np

    def run(q, w):
        items = fuse(q, q["cos"])
        M = w["matrix"]
        out = dict(items)
        tops = top_files(w, items, f)
        mine = {p for p, _, _ in tops}
        for path, best, score in tops:
            if src == "best":
                sim = np.asarray(M @ M[best], dtype=np.float64)
            else:
                own = [i for i, p in enumerate(w["paths"]) if p == path]
                sim = np.asarray(M @ np.asarray(M[own]).T, dtype=np.float64).max(axis=1)
            sim = np.maximum(sim - floor, 0.0) / (1 - floor)
            for i in np.nonzero(sim > 0)[0]:
                i = int(i)
                if w["paths"][i] in mine:
                    continue
                gain = gamma * score * float(sim[i])
                if how == "add":
                    out[i] = out.get(i, 0.0) + gain
                else:
                    out[i] = max(out.get(i, 0.0), gain)
        return lq.max_rollup(w, out)

    return run


# ------------------------------------------------------------------ 4. residual query


def residual(gamma, f=1, how="add"):
    """The query vector with the top f files' best items projected out (what they leave
    unexplained): its cosines, divided by their best, add gamma * vector weight * that to
    every item outside the top files (how=add), or become a third list (how=list, fused
    with the same weight as the vectors)."""
    import numpy as np

    def run(q, w):
        items = fuse(q, q["cos"])
        M = np.asarray(w["matrix"], dtype=np.float64)
        tops = top_files(w, items, f)
        cos = np.asarray(q["cos"], dtype=np.float64)
        B = M[[i for _, i, _ in tops]]  # f x d, the directions to remove
        # r = q - B^T (B B^T)^-1 B q, so M r = cos - (M B^T) (B B^T)^-1 (B q); B q = cos[rows]
        G = B @ B.T
        coef = np.linalg.solve(G + 1e-9 * np.eye(len(B)), cos[[i for _, i, _ in tops]])
        r = cos - (M @ B.T) @ coef
        rnorm2 = 1.0 - float(cos[[i for _, i, _ in tops]] @ coef)  # |r|^2 with |q| = 1
        r = r / math.sqrt(max(rnorm2, 1e-12))
        mine = {p for p, _, _ in tops}
        out = dict(items)
        wt = lq.weight(q)
        cand = vec_list(r.astype(np.float32))
        if not cand:
            return lq.max_rollup(w, out)
        best = cand[0][1] or 1.0
        for i, s in cand:
            if w["paths"][i] in mine:
                continue
            out[i] = out.get(i, 0.0) + gamma * wt * s / best
        return lq.max_rollup(w, out)

    return run


# ------------------------------------------------------------------ 3. BM25 expansion from the fused side


def attach_item_terms(sets) -> None:
    """w['iterms'][row]: {term: count} of the row's BM25 text; w['df'][term]: rows holding it."""
    from memwiki.index import bm25

    for name, ws in sets.items():
        for w in ws:
            root = lq._wiki_root(name, w)
            _, snap = lq._snapshot(root, vectors=False)
            rows = snap.state.rows
            w["iterms"] = []
            df: dict[str, int] = {}
            for r, body in zip(rows, lq._bodies(root, rows), strict=True):
                text = f"{r.name.replace('-', ' ')} {r.description} {' '.join(r.tags)} {r.heading}"
                counts: dict[str, int] = {}
                for tok in bm25.analyzer()(f"{text} {body}"):
                    counts[tok.text] = counts.get(tok.text, 0) + 1
                w["iterms"].append(counts)
                for t in counts:
                    df[t] = df.get(t, 0) + 1
            w["df"] = df
            w["bm25_dir"] = snap.bm25_dir
            w["_snap"] = snap
            for q in w["queries"]:
                q["terms"] = bm25.query_terms(q["query"])


def expansion_hits(w, terms):
    """BM25 hits (row, score) of a bag of analysed terms, with the pipeline's exact scoring."""
    from memwiki.index import bm25_score

    snap = w["_snap"]
    reader = snap.searcher().reader()
    row_of = w.setdefault("_row_of", {r.id: i for i, r in enumerate(snap.state.rows)})
    found = bm25_score.search(reader, terms, 100, None)
    return [(row_of[h], s) for h, s in found.items if h in row_of]


def rm3(lam, m=3, t=5, feedback="fused"):
    """Add to each item lam * (BM25 of the t heaviest new terms of the top m feedback items,
    divided by its best). Term weight: sum over the feedback items of tf/len * idf.
    feedback: fused (the shipped first pass) or vector (the vector list alone)."""

    def run(q, w):
        items = fuse(q, q["cos"])
        if feedback == "fused":
            rows = top_items(items, m)
        else:
            rows = [i for i, _ in vec_list(q["cos"])[:m]]
        n = len(w["paths"])
        weights: dict[str, float] = {}
        qset = set(q["terms"])
        for i in rows:
            counts = w["iterms"][i]
            length = sum(counts.values()) or 1
            for term, c in counts.items():
                if term in qset or w["df"][term] < 2:
                    continue  # a word of one item only cannot find another
                idf = math.log(1 + n / (w["df"][term] + 1))
                weights[term] = weights.get(term, 0.0) + c / length * idf
        chosen = sorted(weights, key=lambda x: (-weights[x], x))[:t]
        out = dict(items)
        if not chosen:
            return lq.max_rollup(w, out)
        hits = w.setdefault("_exp", {}).get((q["query"], tuple(chosen)))
        if hits is None:
            hits = expansion_hits(w, chosen)
            w["_exp"][(q["query"], tuple(chosen))] = hits
        if hits:
            best = hits[0][1] or 1.0
            for i, s in hits:
                out[i] = out.get(i, 0.0) + lam * s / best
        return lq.max_rollup(w, out)

    return run


ALL_FIELDS = ("name", "description", "heading", "tags", "body")


def runtime(lam, t, idf=True, df_fields=None, share=1.0):
    """The pipeline's own feedback (memwiki/index/feedback.py) on the lab's fused items."""
    from memwiki.index import feedback

    def run(q, w):
        items = fuse(q, q["cos"])
        key = ("rt", q["query"], lam, t, idf, df_fields, share)
        cache = w.setdefault("_rt", {})
        if key not in cache:
            shipped_fields = feedback.DF_FIELDS
            feedback.DF_FIELDS = df_fields or shipped_fields
            feedback.MAX_SHARE = share
            cache[key] = feedback.expand(w["_snap"], items, q["query"], None, 100, lam, t, idf)
            feedback.DF_FIELDS = shipped_fields
            feedback.MAX_SHARE = 0.1
        return lq.max_rollup(w, cache[key])

    return run


# ------------------------------------------------------------------ scoring


def evaluate(ws, fn, keep=None, k=5):
    """{'any','all'} and per kind {'kind:any','kind:all'} over the queries keep accepts."""
    tot: dict[str, list[int]] = {}

    def add(key, v):
        tot.setdefault(key, [0, 0])
        tot[key][0] += v
        tot[key][1] += 1

    for w in ws:
        for j, q in enumerate(w["queries"]):
            if keep and not keep(j, q):
                continue
            files = fn(q, w)
            top = set(sorted(files, key=lambda f: (-files[f], f))[:k])
            rel = set(q["relevant"])
            a, al = bool(rel & top), rel <= top
            add("any", a)
            add("all", al)
            if q.get("kind"):
                add(f"{q['kind']}:any", a)
                add(f"{q['kind']}:all", al)
    return {key: v / n for key, (v, n) in tot.items()}


def row(name, sets, fn):
    lo = evaluate(sets["locomo-dev"], fn)
    aw = sets["agentwiki"]
    a = evaluate(aw, fn)
    h = [evaluate(aw, fn, lambda j, q, half=half: j % 2 == half) for half in (0, 1)]
    per = " ".join(f"{a[k + ':any']:.2f}/{a[k + ':all']:.2f}" for k in KINDS)
    print(
        f"{name:<34} {lo['any']:.3f} {lo['all']:.3f} | {a['any']:.3f} {a['all']:.3f} | "
        f"{h[0]['any']:.3f} {h[0]['all']:.3f} {h[1]['any']:.3f} {h[1]['all']:.3f} | {per}",
        flush=True,
    )
    return lo, a, h


def families():
    """Each family's grid: name -> [(label, fn)]."""
    fam = {
        "rocchio": [
            (f"rocchio b={b} m={m} {u}", rocchio(b, m, u))
            for b in (0.05, 0.1, 0.2, 0.3)
            for m in (1, 2, 3, 5)
            for u in ("items", "files")
        ],
        "mlt": [
            (f"mlt g={g} f={f} {how} {src} fl={fl}", mlt(g, f, how, src, fl))
            for g in (0.05, 0.1, 0.2, 0.3)
            for f in (1, 2)
            for how in ("add",)
            for src in ("best", "all")
            for fl in (0.0, 0.3, 0.5)
        ]
        + [
            (f"mlt g={g} f={f} max {src} fl={fl}", mlt(g, f, "max", src, fl))
            for g in (0.5, 0.7, 0.8, 0.9)
            for f in (1, 2)
            for src in ("best", "all")
            for fl in (0.0, 0.5)
        ],
        "residual": [
            (f"residual g={g} f={f}", residual(g, f)) for g in (0.1, 0.2, 0.3, 0.5) for f in (1, 2)
        ],
        "rm3": [
            (f"rm3 l={lam} m={m} t={t} {fb}", rm3(lam, m, t, fb))
            for lam in (0.05, 0.1, 0.2, 0.3)
            for m in (1, 3, 5)
            for t in (3, 5, 10)
            for fb in ("fused", "vector")
        ]
        + [
            (f"rm3 l={lam} m={m} t={t} fused", rm3(lam, m, t, "fused"))
            for lam in (0.4, 0.5, 0.7, 1.0)
            for m in (1, 2)
            for t in (3, 5, 8, 10, 15)
        ],
        "runtime": [
            (f"pipeline feedback l={lam} t={t}", runtime(lam, t, True, ALL_FIELDS, 1.0))
            for lam in (0.2, 0.3, 0.4, 0.5, 0.7)
            for t in (3, 5, 10, 15)
        ],
        "runtime-body": [
            (f"feedback, df of body l={lam} t={t}", runtime(lam, t, True, ("body",)))
            for lam in (0.3, 0.4, 0.5)
            for t in (3, 5, 10)
        ],
        "runtime-cap": [
            (
                f"feedback {'body' if f else 'all'} cap={c} l={lam} t={t}",
                runtime(lam, t, True, f, c),
            )
            for f in (None, ("body",))
            for c in (0.05, 0.1, 0.2)
            for lam in (0.3, 0.4, 0.5)
            for t in (5, 10)
        ],
        "final": [
            (f"feedback body cap={c} l={lam} t={t}", runtime(lam, t, True, ("body",), c))
            for c in (0.1, 0.2, 1.0)
            for lam in (0.3, 0.4, 0.5, 0.7)
            for t in (5, 10, 15)
        ],
        "runtime-tf": [
            (f"feedback by tf only l={lam} t={t}", runtime(lam, t, False))
            for lam in (0.2, 0.3, 0.4, 0.5, 0.7)
            for t in (3, 5, 10, 15)
        ],
    }
    return fam


def load(terms=False):
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    sets.pop("demo", None)
    for name, ws in sets.items():
        for w in ws:
            _, snap = lq._snapshot(lq._wiki_root(name, w))
            import numpy as np

            w["matrix"] = np.asarray(
                snap.matrix() @ np.eye(snap.matrix().shape[1], dtype=np.float32)
            )
            snap.close()
    if terms:
        attach_item_terms(sets)
    return sets


def header():
    print(
        f"{'variant':<34} {'LoCoMo dev':<11} | {'agentwiki':<11} | {'half 0':<11} {'half 1':<11} | "
        + " ".join(f"{k[:9]:<9}" for k in KINDS)
    )


def score(which=None) -> None:
    sets = load(
        terms=not which
        or "rm3" in which
        or "runtime" in which
        or "runtime-tf" in which
        or "runtime-body" in which
        or "runtime-cap" in which
        or "final" in which
    )
    header()
    row("shipped", sets, shipped)
    for fam, variants in families().items():
        if which and fam not in which:
            continue
        for label, fn in variants:
            row(label, sets, fn)


def halves(which=None) -> None:
    """Per family: the parameters chosen on one agentwiki half (+ LoCoMo dev, which must not
    drop), scored on the other half, against the shipped fusion on that half."""
    sets = load(
        terms=not which
        or "rm3" in which
        or "runtime" in which
        or "runtime-tf" in which
        or "runtime-body" in which
        or "runtime-cap" in which
        or "final" in which
    )
    aw = sets["agentwiki"]
    base_lo = evaluate(sets["locomo-dev"], shipped)
    base_h = [evaluate(aw, shipped, lambda j, q, half=half: j % 2 == half) for half in (0, 1)]
    print(f"shipped: LoCoMo dev {base_lo['any']:.3f}/{base_lo['all']:.3f}", end="")
    for half in (0, 1):
        print(f"  half {half} {base_h[half]['any']:.3f}/{base_h[half]['all']:.3f}", end="")
    print()
    for fam, variants in families().items():
        if which and fam not in which:
            continue
        scored = []
        for label, fn in variants:
            lo = evaluate(sets["locomo-dev"], fn)
            hs = [evaluate(aw, fn, lambda j, q, half=half: j % 2 == half) for half in (0, 1)]
            scored.append((label, lo, hs))
        for half in (0, 1):
            ok = [
                s
                for s in scored
                if s[1]["any"] >= base_lo["any"] - 1e-9 and s[1]["all"] >= base_lo["all"] - 1e-9
            ] or scored

            def objective(s, half=half):
                return (s[2][half]["any"] + s[2][half]["all"], s[1]["any"] + s[1]["all"])

            best = max(ok, key=objective)
            other = best[2][1 - half]
            base = base_h[1 - half]
            print(
                f"{fam:<9} tuned on half {half}: {best[0]:<34} LoCoMo dev "
                f"{best[1]['any']:.3f}/{best[1]['all']:.3f}  tuning half "
                f"{best[2][half]['any']:.3f}/{best[2][half]['all']:.3f}  held-out half "
                f"{other['any']:.3f}/{other['all']:.3f} (shipped {base['any']:.3f}/{base['all']:.3f})",
                flush=True,
            )


def grid(which=None) -> None:
    """Each variant of a family against the shipped fusion, in queries gained (+) or lost (-):
    R@5-any / R@5-all on each agentwiki half (60 queries) and on LoCoMo dev (760)."""
    sets = load(terms=True)
    aw = sets["agentwiki"]
    base_lo = evaluate(sets["locomo-dev"], shipped)
    base_h = [evaluate(aw, shipped, lambda j, q, h=h: j % 2 == h) for h in (0, 1)]

    def delta(a, b, n):
        return f"{round((a['any'] - b['any']) * n):+d}/{round((a['all'] - b['all']) * n):+d}"

    for fam, variants in families().items():
        if which and fam not in which:
            continue
        for label, fn in variants:
            lo = evaluate(sets["locomo-dev"], fn)
            hs = [evaluate(aw, fn, lambda j, q, h=h: j % 2 == h) for h in (0, 1)]
            print(
                f"{label:<40} half 0 {delta(hs[0], base_h[0], 60)}  half 1 "
                f"{delta(hs[1], base_h[1], 60)}  LoCoMo dev {delta(lo, base_lo, 760)}",
                flush=True,
            )


def hard() -> None:
    """For agentwiki's queries that miss a relevant file in the top 5: its rank per list."""
    import numpy as np

    sets = load()
    w = sets["agentwiki"][0]
    for q in w["queries"]:
        files = shipped(q, w)
        order = sorted(files, key=lambda f: (-files[f], f))
        rel = q["relevant"]
        if set(rel) <= set(order[:5]):
            continue
        bm = lq.max_rollup(w, {i: s for i, s in q["bm25"]})
        bo = sorted(bm, key=lambda f: (-bm[f], f))
        vf = lq.vector_only(q, w)
        vo = sorted(vf, key=lambda f: (-vf[f], f))
        top = top_files(w, fuse(q, q["cos"]), 1)[0]
        sim = np.asarray(w["matrix"] @ w["matrix"][top[1]])
        simf: dict[str, float] = {}
        for i, p in enumerate(w["paths"]):
            simf[p] = max(simf.get(p, -1), float(sim[i]))
        so = sorted((p for p in simf if p != top[0]), key=lambda f: (-simf[f], f))

        def rk(o, p):
            return o.index(p) + 1 if p in o else None

        print(q["query"][:80], "| top:", top[0])
        for p in rel:
            print(
                f"   {p:<48} fused {rk(order, p)} bm25 {rk(bo, p)} vec {rk(vo, p)} "
                f"near-top-file {rk(so, p)} sim {simf[p]:.2f}"
            )


def confirm() -> None:
    """The real pipeline (fresh indexes, memwiki.index.search.retrieve), feedback on and off on
    the same index: agentwiki (with kinds) and LoCoMo dev, hybrid, R@5 on files."""
    import json
    import shutil
    import tempfile

    import locomo

    from memwiki.config import load as load_config
    from memwiki.evaluate import Query, by_kind, load_queries, run_queries, summarise
    from memwiki.index import feedback
    from memwiki.wiki import Wiki

    work = Path(tempfile.mkdtemp(prefix="memwiki-prf-"))
    shipped_weight = feedback.EXPANSION_WEIGHT
    try:
        wikis = []
        src = locomo.ROOT.parent / "shared/eval/agentwiki"
        shutil.copytree(src / "wiki", work / "agentwiki")
        qs = []
        for text in (src / "queries.jsonl").read_text().splitlines():
            o = json.loads(text)
            qs.append(Query(o["query"], o["relevant"], kind=o["kind"]))
        wikis.append(("agentwiki", work / "agentwiki", qs))
        for conv in locomo.convert(locomo.ROOT.parent / "shared/eval/locomo", "dev", work / "lo"):
            wikis.append(("locomo-dev", conv, load_queries(conv / "queries.jsonl")))
        for label, weight in (("without feedback", 0.0), ("with feedback", shipped_weight)):
            feedback.EXPANSION_WEIGHT = weight
            per_set: dict[str, list] = {}
            for name, root, queries in wikis:
                runs = run_queries(
                    Wiki(root), queries, ["hybrid"], config=load_config({"wiki": str(root)})
                )
                per_set.setdefault(name, []).append((queries, runs))
                if name == "agentwiki":
                    kinds = by_kind(queries, runs, "hybrid")
                    print(
                        label,
                        "agentwiki kinds:",
                        " ".join(
                            f"{kind} {r.recall_any:.3f}/{r.recall_all:.3f}"
                            for kind, r in kinds.items()
                        ),
                    )
            for name, parts in per_set.items():
                queries = [q for qs_, _ in parts for q in qs_]
                runs = [r for _, rs in parts for r in rs["hybrid"]]
                rep = summarise("hybrid", queries, runs)
                print(
                    f"{label} {name}: R@5 {rep.recall_any:.3f} / {rep.recall_all:.3f}, "
                    f"MRR {rep.mrr:.3f}, p50 {rep.latency_median_ms:.1f} ms",
                    flush=True,
                )
    finally:
        feedback.EXPANSION_WEIGHT = shipped_weight
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "score"
    args = sys.argv[2:] or None
    commands = {"score": score, "halves": halves, "hard": lambda a=None: hard()}
    commands["confirm"] = lambda a=None: confirm()
    commands["grid"] = grid
    commands[command](args)
