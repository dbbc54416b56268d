"""Fusion laboratory: candidate lists computed once per query, fusion variants compared on them.

    python tests/bench/lab.py gather        # LoCoMo dev + agentwiki candidates -> /tmp/memwiki-lab
    python tests/bench/lab.py score         # every variant on every set, one table

Not part of `make bench`: this is how the choices in docs/retrieval.md were measured.
Tune on LoCoMo dev and agentwiki; never on LoCoMo test.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

LAB = Path(os.environ.get("MEMWIKI_LAB", "/tmp/memwiki-lab"))


def gather_wiki(name: str, root: Path, queries) -> dict:
    """Per query: BM25 hits (row, score), the best hit's IDF coverage, every row's cosine."""
    import numpy as np

    from memwiki.config import load
    from memwiki.index import bm25
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    wiki = Wiki(root)
    index = Index(wiki, load({"wiki": str(root)}), notify=lambda m: None)
    snap = index.snapshot(need_vectors=True)
    rows = snap.state.rows
    row_of = {r.id: i for i, r in enumerate(rows)}
    emb = index.embedder()
    qv = np.asarray(emb.embed([q.query for q in queries]), dtype=np.float32)
    matrix = snap.matrix()
    # a vector per file: name + description
    paths = sorted({r.path for r in rows})
    first = {}
    for r in rows:
        first.setdefault(r.path, r)
    fv = np.asarray(
        emb.embed([f"{first[p].name.replace('-', ' ')}: {first[p].description}" for p in paths]),
        dtype=np.float32,
    )
    out = []
    for n, q in enumerate(queries):
        found = bm25.search_hits(snap.bm25_dir, q.query, 200)
        hits = found.items
        cover = [found.coverage]  # the runtime definition (bm25.LiveStats.coverage)
        out.append(
            {
                "query": q.query,
                "relevant": q.relevant,
                "kind": getattr(q, "kind", "") or "",
                "bm25": [(row_of[h], s) for h, s in hits if h in row_of],
                "cos": matrix @ qv[n],
                "fcos": fv @ qv[n],
                "cover": cover,
            }
        )
    return {"name": name, "paths": [r.path for r in rows], "files": paths, "queries": out}


def wiki_root(set_name: str, w: dict) -> Path:
    """Where a lab set's wiki lives: agentwiki and demo (lab_query.py demo) by name, LoCoMo by conversation."""
    if set_name in ("agentwiki", "demo"):
        return LAB / "wikis" / set_name
    return LAB / "wikis" / f"locomo/{w['name']}"


def gather() -> None:
    """Candidates for LoCoMo dev (one wiki per conversation) and agentwiki."""
    import json

    import locomo

    from memwiki.evaluate import Query

    LAB.mkdir(exist_ok=True)
    work = LAB / "wikis"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    sets = {}
    convs = locomo.convert(locomo.ROOT.parent / "shared/eval/locomo", "dev", work / "locomo")
    from memwiki.evaluate import load_queries

    sets["locomo-dev"] = [gather_wiki(c.name, c, load_queries(c / "queries.jsonl")) for c in convs]
    src = locomo.ROOT.parent / "shared/eval/agentwiki"
    shutil.copytree(src / "wiki", work / "agentwiki")
    qs = []
    for line in (src / "queries.jsonl").read_text().splitlines():
        o = json.loads(line)
        q = Query(o["query"], o["relevant"])
        q.kind = o["kind"]
        qs.append(q)
    sets["agentwiki"] = [gather_wiki("agentwiki", work / "agentwiki", qs)]
    (LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


# ---------------------------------------------------------------- fusion variants


VEC = "cos"


def vec_scores(q):
    """The per-item vector score chosen by VEC: window cosine, fine max-sim, or a mix."""
    import numpy as np

    if VEC == "cos":
        return q["cos"]
    if VEC.startswith("max:"):
        return np.maximum(q["cos"], q[VEC[4:]])
    if VEC.startswith("mean:"):
        return (q["cos"] + q[VEC[5:]]) / 2
    if VEC.startswith("zw"):  # "zw0.5:cos:MODEL": as z:, MODEL's z-score weighted 0.5
        wt, key = VEC[2:].split(":", 1)
        return zsum(q["cos"], [(q[key], float(wt))])
    if VEC.startswith("zz:"):  # "zz:KEY1|KEY2": MiniLM and several models, z-scores summed
        return zsum(q["cos"], [(q[key], 1.0) for key in VEC[3:].split("|")])
    if VEC.startswith("z:"):  # two models, each standardised over the items, mapped back
        return zsum(q["cos"], [(q[VEC[2:]], 1.0)])
    return q[VEC]


def zsum(a, others):
    """MiniLM's cosines a and other models' (cosines, weight), each standardised over the
    items, summed and mapped back onto a's scale (what vector_search does for e5)."""
    z = (a - a.mean()) / (a.std() + 1e-9)
    for b, wt in others:
        z = z + wt * (b - b.mean()) / (b.std() + 1e-9)
    return a.mean() + a.std() * z / (1 + sum(wt for _, wt in others))


def ranked_files(w, q, fuse, k=10):
    """Fuse one query's candidates with `fuse` and roll up to files."""
    import numpy as np

    cos = vec_scores(q)
    top = np.argsort(-cos)[:100]
    vec = [(int(i), float(cos[i])) for i in top if cos[i] >= 0.15]
    fused = fuse(q["bm25"][:100], vec, q, w)
    best = {}
    for i, s in fused.items():
        p = w["paths"][i]
        if s > best.get(p, -1e9):
            best[p] = s
    return sorted(best, key=lambda p: (-best[p], p))[:k]


def metrics(sets, fuse, qfilter=None):
    """R@5-any, R@5-all, MRR over the queries that pass qfilter."""
    a = al = rr = n = 0
    for w in sets:
        for q in w["queries"]:
            if qfilter and not qfilter(q):
                continue
            r = ranked_files(w, q, fuse)
            rel = set(q["relevant"])
            a += any(p in rel for p in r[:5])
            al += rel <= set(r[:5])
            rr += next((1 / (j + 1) for j, p in enumerate(r) if p in rel), 0)
            n += 1
    return a / n, al / n, rr / n


def summary(sets, fuse) -> dict:
    """R@5 (any, all) of fuse on LoCoMo dev, agentwiki, its halves (alternate queries) and
    its paraphrase and identifier kinds."""
    aw = sets["agentwiki"][0]
    pos = {id(q): n for n, q in enumerate(aw["queries"])}
    only = {
        "half0": lambda q: pos[id(q)] % 2 == 0,
        "half1": lambda q: pos[id(q)] % 2 == 1,
        "paraphrase": lambda q: q["kind"] == "paraphrase",
        "identifier": lambda q: q["kind"] == "identifier",
    }
    out = {"locomo": metrics(sets["locomo-dev"], fuse)[:2], "agentwiki": metrics([aw], fuse)[:2]}
    out.update((k, metrics([aw], fuse, f)[:2]) for k, f in only.items())
    return out


def norm_fusion(weight):
    def fuse(bm, vec, q, w):
        out = {}
        if bm:
            top = bm[0][1] or 1
            for i, s in bm:
                out[i] = s / top
        if vec:
            top = vec[0][1] or 1
            for i, s in vec:
                out[i] = out.get(i, 0) + weight * s / top
        return out

    return fuse


def adaptive(lo, hi, depth=1, power=1.0):
    """Vector weight from lo (BM25's top hits cover the query's IDF) to hi (they do not)."""

    def fuse(bm, vec, q, w):
        cov = max(q["cover"][:depth], default=0.0)
        weight = lo + (hi - lo) * (1 - cov) ** power
        return norm_fusion(weight)(bm, vec, q, w)

    return fuse


def rrf(k=60, wb=1.0, wv=1.0):
    def fuse(bm, vec, q, w):
        out = {}
        for r, (i, _) in enumerate(bm):
            out[i] = wb / (k + r + 1)
        for r, (i, _) in enumerate(vec):
            out[i] = out.get(i, 0) + wv / (k + r + 1)
        return out

    return fuse


def with_file_vector(base, beta):
    """Each item also gets beta * cosine of its file's name+description vector."""

    def fuse(bm, vec, q, w):
        out = base(bm, vec, q, w)
        fidx = {p: j for j, p in enumerate(w["files"])}
        top = max(float(q["fcos"].max()), 1e-6)
        for i in list(out):
            out[i] += beta * float(q["fcos"][fidx[w["paths"][i]]]) / top
        return out

    return fuse


VARIANTS = {
    "bm25": norm_fusion(0.0),
    "vector": lambda bm, vec, q, w: dict(vec),
    "score w=0.3 (shipped)": norm_fusion(0.3),
    "score w=0.5": norm_fusion(0.5),
    "score w=0.7": norm_fusion(0.7),
    "score w=1.0": norm_fusion(1.0),
    "rrf k=60": rrf(),
    "rrf k=10 bm25x3": rrf(10, 3, 1),
    "adaptive 0.3-1.0 top1": adaptive(0.3, 1.0),
    "adaptive 0.2-1.5 top1": adaptive(0.2, 1.5),
    "adaptive 0.3-1.5 top1": adaptive(0.3, 1.5),
    "adaptive 0.3-2.0 top1": adaptive(0.3, 2.0),
    "adaptive 0.3-1.5 top3": adaptive(0.3, 1.5, 3),
    "adaptive 0.3-1.5 sq": adaptive(0.3, 1.5, 1, 2),
    "adaptive 0.3-1.5 +file 0.3": with_file_vector(adaptive(0.3, 1.5), 0.3),
    "score 0.3 +file 0.3": with_file_vector(norm_fusion(0.3), 0.3),
}


def score(names=None) -> None:
    """Print every variant's metrics on LoCoMo dev and agentwiki (with per-kind recall)."""
    sets = pickle.loads((LAB / "cands.pkl").read_bytes())
    kinds = ["paraphrase", "identifier", "skill", "multi-hop", "keyword"]
    print(
        f"{'variant':<30} {'loco any':>8} {'all':>6} {'aw any':>7} {'all':>6} "
        + " ".join(f"{k[:5]:>6}" for k in kinds)
    )
    for name, fuse in VARIANTS.items():
        if names and not any(n in name for n in names):
            continue
        la, lal, _ = metrics(sets["locomo-dev"], fuse)
        aa, aal, _ = metrics(sets["agentwiki"], fuse)
        per = [metrics(sets["agentwiki"], fuse, lambda q, k=k: q["kind"] == k)[0] for k in kinds]
        print(
            f"{name:<30} {la:>8.3f} {lal:>6.3f} {aa:>7.3f} {aal:>6.3f} "
            + " ".join(f"{x:>6.3f}" for x in per)
        )


def fine_texts(root: Path, row, max_words: int, header: bool) -> list[str]:
    """An item's text cut into short windows of whole lines (about max_words words)."""
    lines = (
        (root / row.path)
        .read_text(encoding="utf-8")
        .splitlines()[row.start_line - 1 : row.end_line]
    )
    lines = [ln for ln in lines if ln.strip()]
    out, cur, n = [], [], 0
    for ln in lines:
        c = len(ln.split())
        if cur and n + c > max_words:
            out.append("\n".join(cur))
            cur, n = [], 0
        cur.append(ln)
        n += c
    if cur:
        out.append("\n".join(cur))
    if header:
        head = f"{row.name.replace('-', ' ')}: {row.description}" + (
            f"\n{row.heading}" if row.heading else ""
        )
        out = [f"{head}\n{t}" for t in out]
    return out or [""]


def gather_fine(max_words: int = 40, header: bool = True) -> None:
    """Per query and item: max cosine over the item's short windows."""
    import numpy as np

    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    sets = pickle.loads((LAB / "cands.pkl").read_bytes())
    key = f"fine{max_words}{'h' if header else ''}"
    emb = None
    for name, ws in sets.items():
        for w in ws:
            root = wiki_root(name, w)
            index = Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None)
            snap = index.snapshot(need_vectors=True)
            emb = emb or index.embedder()
            texts, owner = [], []
            for i, r in enumerate(snap.state.rows):
                for t in fine_texts(root, r, max_words, header):
                    texts.append(t)
                    owner.append(i)
            m = np.asarray(emb.embed(texts), dtype=np.float32)
            qv = np.asarray(emb.embed([q["query"] for q in w["queries"]]), dtype=np.float32)
            owner = np.asarray(owner)
            sims = qv @ m.T
            for n, q in enumerate(w["queries"]):
                best = np.full(len(snap.state.rows), -1.0, dtype=np.float32)
                np.maximum.at(best, owner, sims[n])
                q[key] = best
            print(name, w["name"], len(texts), "windows", file=sys.stderr)
    (LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


def lab_wikis(sets):
    """(set name, lab entry, root, index snapshot) of every wiki of the lab's sets, in order."""
    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    for name, ws in sets.items():
        for w in ws:
            root = wiki_root(name, w)
            snap = Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None).snapshot()
            yield name, w, root, snap


def load_matrices(sets) -> None:
    """Attach each wiki's item matrix (from its index in the lab folder) as w['matrix']."""
    for _, w, _, snap in lab_wikis(sets):
        w["matrix"] = snap.matrix()


def minmax(weight, floor="last"):
    """Vector scores rescaled between a floor (the last candidate, or a fixed cosine) and the best."""

    def fuse(bm, vec, q, w):
        out = {}
        if bm:
            top = bm[0][1] or 1
            for i, s in bm:
                out[i] = s / top
        if vec:
            top = vec[0][1]
            lo = vec[-1][1] if floor == "last" else floor
            span = max(top - lo, 1e-6)
            for i, s in vec:
                out[i] = out.get(i, 0) + weight * max(s - lo, 0) / span
        return out

    return fuse


def adaptive_mm(lo, hi, power=2.0, floor="last"):
    def fuse(bm, vec, q, w):
        cov = max(q["cover"][:1], default=0.0)
        return minmax(lo + (hi - lo) * (1 - cov) ** power, floor)(bm, vec, q, w)

    return fuse


VARIANTS.update(
    {
        "minmax w=0.3": minmax(0.3),
        "minmax w=0.5": minmax(0.5),
        "minmax w=0.7": minmax(0.7),
        "minmax w=1.0": minmax(1.0),
        "adaptive-mm 0.3-1.5 sq": adaptive_mm(0.3, 1.5),
        "adaptive-mm 0.3-1.0 sq": adaptive_mm(0.3, 1.0),
        "adaptive-mm 0.5-1.5 sq": adaptive_mm(0.5, 1.5),
        "adaptive-mm 0.3-1.5 lin": adaptive_mm(0.3, 1.5, 1.0),
        "adaptive-mm 0.3-2.0 sq": adaptive_mm(0.3, 2.0),
    }
)


if __name__ == "__main__":
    if sys.argv[1:2] == ["fine"]:
        gather_fine(int(sys.argv[2]), sys.argv[3:4] == ["h"])
    elif sys.argv[1:2] == ["gather"]:
        gather()
    else:
        VEC = sys.argv[2] if len(sys.argv) > 2 else "cos"
        score(sys.argv[3:] if len(sys.argv) > 3 else None)
