"""Multi-file laboratory: why a query's second relevant file misses the top 5 (issue 11).

    python tests/bench/lab_multi.py gather [LAB]   # candidates of the real pipeline -> LAB/multi.pkl
    python tests/bench/lab_multi.py hard [LAB]     # per missed file: rank per signal, what is above
    python tests/bench/lab_multi.py score [LAB]    # every roll-up variant: LoCoMo dev, agentwiki, halves

LAB (default /work/scratch/allrecall) holds `wikis/agentwiki` and `wikis/locomo/<conv>`
(copies of the lab wikis of tests/bench/lab.py, their indexes built). Each query keeps
what the shipped pipeline computed: BM25 hits, coverage, the vector hits, the fused
scores and the fused scores after BM25 feedback (index/feedback.py), so a variant of the
roll-up is scored without a second search. LoCoMo test is never used here.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

KINDS = ["paraphrase", "identifier", "skill", "multi-hop", "keyword"]
SHARED = Path(__file__).resolve().parents[2].parent / "shared/eval"


def lab_dir(args) -> Path:
    return Path(args[0]) if args else Path("/work/scratch/allrecall")


def _queries(root: Path, agentwiki: bool):
    if agentwiki:
        out = []
        for line in (SHARED / "agentwiki/queries.jsonl").read_text().splitlines():
            o = json.loads(line)
            out.append((o["query"], o["relevant"], o["kind"]))
        return out
    out = []
    for line in (root / "queries.jsonl").read_text().splitlines():
        o = json.loads(line)
        out.append((o["query"], o["relevant"], ""))
    return out


def gather_wiki(root: Path, agentwiki: bool) -> dict:
    """The pipeline's stages for every query of one wiki."""
    import numpy as np

    from memwiki.config import load
    from memwiki.index import bm25, feedback, search, vector_search
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    index = Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None)
    snap = index.snapshot(need_vectors=True)
    rows = snap.state.rows
    emb = index.embedder()
    qs = _queries(root, agentwiki)
    out = []
    for text, relevant, kind in qs:
        found = bm25.search_hits(snap.bm25_dir, text, 100, None, searcher=snap.searcher())
        hits = [(rows.find(h), s) for h, s in found.items]
        hits = [(i, s) for i, s in hits if i is not None]
        qv = vector_search.query_vector(emb, text)
        vec = vector_search.vector_hits(snap, qv, None, 100)
        fused = search.fuse(hits, vec, found.coverage)
        expanded = feedback.expand(snap, fused, text, None, 100)
        best = feedback.top_item(rows, fused)
        terms = feedback.expansion_terms(
            snap.searcher().reader(),
            feedback.item_terms(snap, rows[best]),
            bm25.query_terms(text),
        )
        out.append(
            {
                "query": text,
                "relevant": relevant,
                "kind": kind,
                "bm25": hits,
                "vec": vec,
                "coverage": found.coverage,
                "fused": fused,
                "expanded": expanded,
                "fb_terms": terms,
                "qv": np.asarray(qv, dtype=np.float32),
            }
        )
    paths = [r.path for r in rows]
    meta = [(r.name, r.description, tuple(r.tags), r.heading) for r in rows]
    lines = [(r.start_line, r.end_line) for r in rows]
    matrix = np.asarray(snap.matrix() @ np.eye(snap.matrix().shape[1], dtype=np.float32))
    snap.close()
    return {
        "root": str(root),
        "paths": paths,
        "meta": meta,
        "rows_lines": lines,
        "matrix": matrix,
        "queries": out,
    }


def gather(args) -> None:
    lab = lab_dir(args)
    sets = {"agentwiki": [gather_wiki(lab / "wikis/agentwiki", True)]}
    convs = sorted(p for p in (lab / "wikis/locomo").iterdir() if (p / "queries.jsonl").exists())
    sets["locomo-dev"] = [gather_wiki(c, False) for c in convs]
    (lab / "multi.pkl").write_bytes(pickle.dumps(sets))


def load(args) -> dict:
    return pickle.loads((lab_dir(args) / "multi.pkl").read_bytes())


def rollup_max(w, items: dict[int, float]) -> dict[str, float]:
    files: dict[str, float] = {}
    for i, s in items.items():
        p = w["paths"][i]
        if s > files.get(p, -1e9):
            files[p] = s
    return files


def ranked(files: dict[str, float]) -> list[str]:
    return sorted(files, key=lambda p: (-round(files[p], 9), p))


def hard(args) -> None:
    """Each agentwiki query missing a relevant file: where it sits in each signal."""
    w = load(args)["agentwiki"][0]
    for n, q in enumerate(w["queries"]):
        order = ranked(rollup_max(w, q["expanded"]))
        rel = q["relevant"]
        if set(rel) <= set(order[:5]):
            continue
        sig = {
            "bm25": ranked(rollup_max(w, dict(q["bm25"]))),
            "vec": ranked(rollup_max(w, dict(q["vec"]))),
            "fused": ranked(rollup_max(w, q["fused"])),
        }
        print(f"a{n + 1:03d} [{q['kind']}] cov {q['coverage']:.2f} {q['query']}")
        print(f"   top5: {[p.split('/')[-1][:-3] for p in order[:5]]}")
        print(f"   feedback terms: {q['fb_terms']}")
        for p in rel:

            def rk(o, p=p):
                return o.index(p) + 1 if p in o else "-"

            print(
                f"   {'ok ' if p in order[:5] else 'MISS'} {p:<50} final {rk(order)} "
                + " ".join(f"{k} {rk(o)}" for k, o in sig.items())
            )


# ------------------------------------------------------------------ roll-up variants


def attach_links(w) -> None:
    """w['out'][path]: the wiki files its [[wikilinks]] reach (by file stem, as agentwiki's do)."""
    from memwiki import links

    root = Path(w["root"])
    by_stem: dict[str, str] = {}
    for p in sorted(set(w["paths"])):
        by_stem.setdefault(Path(p).stem.lower(), p)
    out: dict[str, list[str]] = {}
    for p in sorted(set(w["paths"])):
        seen: list[str] = []
        for _, _, inner, _ in links.scan((root / p).read_text(encoding="utf-8")):
            name = links.parse_target(inner)[0]
            t = by_stem.get(Path(name).name.lower())
            if t and t != p and t not in seen:
                seen.append(t)
        out[p] = seen
    w["out"] = out
    back: dict[str, list[str]] = {}
    for p, ts in out.items():
        for t in ts:
            back.setdefault(t, []).append(p)
    w["in"] = back


def shipped(w, q):
    return rollup_max(w, q["expanded"])


def linked(beta, m=3, how="add", direction="out", need_own=True):
    """Files linked from the top m files gain beta x the linking file's score (add), or
    beta x min(own, linking) (min); need_own: only files with a score of their own."""

    def run(w, q):
        files = rollup_max(w, q["expanded"])
        order = ranked(files)
        out = dict(files)
        for src in order[:m]:
            targets = list(w["out"].get(src, []))
            if direction == "both":
                targets += w["in"].get(src, [])
            for t in dict.fromkeys(targets):
                own = files.get(t)
                if own is None and need_own:
                    continue
                own = own or 0.0
                gain = beta * files[src] if how == "add" else beta * min(own, files[src])
                out[t] = max(out[t], own + gain) if t in out else own + gain
        return out

    return run


def evaluate(ws, fn, keep=None, k=5):
    tot: dict[str, list[int]] = {}

    def add(key, v):
        tot.setdefault(key, [0, 0])
        tot[key][0] += v
        tot[key][1] += 1

    for w in ws:
        for j, q in enumerate(w["queries"]):
            if keep and not keep(j, q):
                continue
            top = set(ranked(fn(w, q))[:k])
            rel = set(q["relevant"])
            a, al = bool(rel & top), rel <= top
            add("any", a)
            add("all", al)
            if q["kind"]:
                add(f"{q['kind']}:any", a)
                add(f"{q['kind']}:all", al)
    return {key: v / n for key, (v, n) in tot.items()}


def row(label, sets, fn):
    lo = evaluate(sets["locomo-dev"], fn)
    aw = sets["agentwiki"]
    a = evaluate(aw, fn)
    h = [evaluate(aw, fn, lambda j, q, half=half: j % 2 == half) for half in (0, 1)]
    per = " ".join(f"{a[k + ':any']:.2f}/{a[k + ':all']:.2f}" for k in KINDS)
    print(
        f"{label:<40} {lo['any']:.3f} {lo['all']:.3f} | {a['any']:.3f} {a['all']:.3f} | "
        f"{h[0]['any']:.3f} {h[0]['all']:.3f} {h[1]['any']:.3f} {h[1]['all']:.3f} | {per}",
        flush=True,
    )


def variants():
    out = [("shipped", shipped)]
    for g in (0.1, 0.2, 0.3, 0.5, 1.0):
        for how in ("bm25", "cover"):
            for pool in (0, 10, 20):
                out.append((f"whole g={g} {how} pool={pool}", whole_files(g, how, pool)))
    for lam in (0.2, 0.3, 0.4, 0.5):
        for rn in (False, True):
            for sb in (False, True):
                label = f"fbothers l={lam} renorm={rn} self={sb}"
                out.append((label, feedback_others(lam, rn, sb)))
    for lam in (0.1, 0.2, 0.3, 0.5, 0.8):
        for unit in ("item", "file"):
            for sh in (False, True):
                label = f"resid l={lam} {unit} share={sh}"
                out.append((label, residual_query(lam, unit, sh)))
    for lam in (0.3, 0.4, 0.5):
        for n in (5, 10, 15):
            for mix in (False, True):
                out.append((f"filefb l={lam} n={n} mix={mix}", file_feedback(lam, n, mix)))
    for g in (0.1, 0.2, 0.3, 0.5, 1.0):
        for how in ("max", "sum"):
            for top in (0, 1, 2):
                out.append((f"clause g={g} {how} top={top}", decomposed(g, how, top)))
    for a in (0.5, 0.8, 1.0):
        for fl in (0.0, 0.1, 0.15):
            out.append((f"centre a={a} floor={fl}", centred(a, fl)))
    for lam in (0.1, 0.2, 0.3, 0.4):
        for m in (2, 3):
            for sc in (False, True):
                for src in ("fused", "expanded"):
                    for o in (False, True):
                        out.append(
                            (
                                f"fb2 l={lam} m={m} sc={sc} {src} o={o}",
                                second_feedback(lam, m, sc, src, o),
                            )
                        )
    for mu in (0.05, 0.1, 0.2, 0.3, 0.5):
        for pool in (8, 10, 15):
            out.append((f"aspects mu={mu} pool={pool}", aspects(mu, pool)))
    for m in (1, 2, 3, 5):
        for beta in (0.05, 0.1, 0.2, 0.3):
            for how in ("add", "min"):
                for d in ("out", "both"):
                    out.append((f"link m={m} b={beta} {how} {d}", linked(beta, m, how, d)))
    return out


def score(args) -> None:
    sets = load(args[:1])
    which = args[1] if len(args) > 1 else ""
    for ws in sets.values():
        for w in ws:
            attach_links(w)
    print(
        f"{'variant':<40} {'LoCoMo dev':<11} | {'agentwiki':<11} | {'half 0':<11} {'half 1':<11} | "
        + " ".join(f"{k[:9]:<9}" for k in KINDS)
    )
    for ws in sets.values():
        for w in ws:
            attach_terms(w)
            attach_snap(w)
            if "whole" in which:
                attach_file_bm25(w)
            if "clause" in which:
                attach_vectors(w)
    for label, fn in variants():
        if which and which not in label and label != "shipped":
            continue
        row(label, sets, fn)


def attach_terms(w) -> None:
    """w['fterms'][path]: the analysed terms of the file's items; q['qterms']: {term: idf}."""
    import math

    from memwiki.index import bm25

    root = Path(w["root"])
    ana = bm25.analyzer()
    cache: dict[str, list[str]] = {}
    fterms: dict[str, set[str]] = {}
    df: dict[str, int] = {}
    rows = w["rows_lines"]
    for i, p in enumerate(w["paths"]):
        if p not in cache:
            cache[p] = (root / p).read_text(encoding="utf-8").splitlines()
        a, b = rows[i]
        name, desc, tags, heading = w["meta"][i]
        text = f"{name.replace('-', ' ')} {desc} {' '.join(tags)} {heading} " + "\n".join(
            cache[p][a - 1 : b]
        )
        ts = {t.text for t in ana(text)}
        for t in ts:
            df[t] = df.get(t, 0) + 1
        fterms.setdefault(p, set()).update(ts)
    n = len(w["paths"])
    w["fterms"] = fterms
    for q in w["queries"]:
        q["qterms"] = {
            t: math.log(1 + n / (df[t] + 1))
            for t in dict.fromkeys(bm25.query_terms(q["query"]))
            if t in df
        }


def aspects(mu, pool=10, base="expanded"):
    """Greedy top 5 of the best `pool` files: score / best + mu x the share of the query's
    IDF in terms the file has and no file chosen before it has."""

    def run(w, q):
        files = rollup_max(w, q[base])
        order = ranked(files)[:pool]
        total = sum(q["qterms"].values())
        if not order or not total:
            return files
        best = files[order[0]] or 1.0
        covered: set[str] = set()
        chosen: list[str] = []
        left = list(order)
        while left and len(chosen) < 5:

            def gain(p, covered=covered):
                new = (set(q["qterms"]) & w["fterms"][p]) - covered
                return files[p] / best + mu * sum(q["qterms"][t] for t in new) / total

            pick = max(left, key=lambda p: (round(gain(p), 9), -order.index(p)))
            chosen.append(pick)
            covered |= set(q["qterms"]) & w["fterms"][pick]
            left.remove(pick)
        out = dict(files)
        top = max(files.values()) + 10
        for r, p in enumerate(chosen):
            out[p] = top - r
        return out

    return run


def attach_snap(w) -> None:
    from memwiki.config import load as load_config
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    root = Path(w["root"])
    index = Index(Wiki(root), load_config({"wiki": str(root)}), notify=lambda m: None)
    w["_snap"] = index.snapshot(need_vectors=False)


def second_feedback(lam, m=2, scale=False, source="fused", others=False):
    """The shipped feedback, then the same from the best item of each of the next m-1 files
    of the first pass (each search normalised by its own best hit), lam each
    (x the file's score / the top file's when scale)."""
    from memwiki.index import feedback

    def run(w, q):
        key = ("fb2", lam, m, scale, source, others)
        cache = q.setdefault("_c", {})
        if key not in cache:
            base = q[source]
            files = rollup_max(w, base)
            order = ranked(files)
            out = q["expanded"]
            for r in range(1, min(m, len(order))):
                keep = set(order[r : r + 1])
                ranking = {i: s for i, s in base.items() if w["paths"][i] in keep}
                weight = lam * (files[order[r]] / files[order[0]] if scale else 1.0)
                if others:
                    gain = feedback.expand(
                        w["_snap"], {}, q["query"], None, 100, weight, ranking=ranking
                    )
                    out = dict(out)
                    for i, g in gain.items():
                        if w["paths"][i] not in keep:
                            out[i] = out.get(i, 0.0) + g
                else:
                    out = feedback.expand(
                        w["_snap"], out, q["query"], None, 100, weight, ranking=ranking
                    )
            cache[key] = rollup_max(w, out)
        return cache[key]

    return run


def centred(alpha=1.0, floor=0.15, fb=True):
    """Vectors scored after subtracting alpha x the wiki's mean item vector from items and
    query (hubness: generic notes close to every question lose their head start)."""
    import numpy as np

    from memwiki.index import feedback, search

    def run(w, q):
        key = ("centre", alpha, floor, fb)
        cache = q.setdefault("_c", {})
        if key not in cache:
            m = w["matrix"]
            mu = w.setdefault("_mu", m.mean(axis=0)) * alpha
            x = m - mu
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            qq = q["qv"] - mu
            qq /= np.linalg.norm(qq)
            cos = x @ qq
            top = np.argsort(-cos, kind="stable")[:100]
            vec = [(int(i), float(cos[i])) for i in top if cos[i] >= floor]
            fused = search.fuse(q["bm25"], vec, q["coverage"])
            if fb:
                fused = feedback.expand(w["_snap"], fused, q["query"], None, 100)
            cache[key] = rollup_max(w, fused)
        return cache[key]

    return run


CLAUSE = r",\s*(?:and|but|or)\s+|;\s*|\?\s+|\s+-\s+|\s+and\s+(?=(?:what|which|how|who|whom|whose|where|when|why|is|are|does|do|did|can)\b)"


def clauses(text: str) -> list[str]:
    """The parts of a multi-part question, each with at least two BM25 terms."""
    import re

    from memwiki.index import bm25

    parts = [p.strip(" ?.,") for p in re.split(CLAUSE, text, flags=re.I)]
    return [p for p in parts if len(bm25.query_terms(p)) >= 2]


def clause_scores(w, q):
    """Per clause of a multi-part query: its own fused file scores / their best."""
    import numpy as np

    from memwiki.index import bm25, search, vector_search

    if "_cl" in q:
        return q["_cl"]
    parts = clauses(q["query"])
    out = []
    if len(parts) >= 2:
        snap = w["_vsnap"]
        rows = snap.state.rows
        for part in parts:
            found = bm25.search_hits(snap.bm25_dir, part, 100, None, searcher=snap.searcher())
            hits = [(rows.find(h), s) for h, s in found.items]
            hits = [(i, s) for i, s in hits if i is not None]
            qv = np.asarray(vector_search.query_vector(w["_emb"], part), dtype=np.float32)
            vec = vector_search.vector_hits(snap, qv, None, 100)
            files = rollup_max(w, search.fuse(hits, vec, found.coverage))
            best = max(files.values()) if files else 1.0
            out.append({p: v / best for p, v in files.items()})
    q["_cl"] = out
    return out


def decomposed(gamma, how="max", only_top=0):
    """Shipped file scores / their best, plus gamma x each clause's own file score / its best
    (max over clauses, or sum); only_top > 0: only each clause's best only_top files."""

    def run(w, q):
        files = rollup_max(w, q["expanded"])
        parts = clause_scores(w, q)
        if not parts:
            return files
        best = max(files.values())
        out = {p: v / best for p, v in files.items()}
        extra: dict[str, float] = {}
        for cs in parts:
            keep = ranked(cs)[:only_top] if only_top else cs
            for p in keep:
                v = cs[p]
                extra[p] = max(extra.get(p, 0.0), v) if how == "max" else extra.get(p, 0.0) + v
        for p, v in extra.items():
            out[p] = out.get(p, 0.0) + gamma * v
        return out

    return run


def attach_vectors(w) -> None:
    from memwiki.config import load as load_config
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    root = Path(w["root"])
    index = Index(Wiki(root), load_config({"wiki": str(root)}), notify=lambda m: None)
    w["_vsnap"] = index.snapshot(need_vectors=True)
    w["_emb"] = index.embedder()


def file_feedback(lam=0.4, n=10, mix=False):
    """BM25 feedback with the words of the best item's whole file (every item's counts
    summed) instead of the item alone; mix: the item's and the file's words, half each."""
    from memwiki.index import bm25, bm25_score, feedback

    def run(w, q):
        key = ("filefb", lam, n, mix)
        cache = q.setdefault("_c", {})
        if key not in cache:
            snap = w["_snap"]
            rows = snap.state.rows
            best = feedback.top_item(rows, q["fused"])
            path = rows[best].path
            counts: dict[str, int] = {}
            for i, p in enumerate(w["paths"]):
                if p == path:
                    for t, c in feedback.item_terms(snap, rows[i]).items():
                        counts[t] = counts.get(t, 0) + c
            reader = snap.searcher().reader()
            qt = bm25.query_terms(q["query"])
            terms = feedback.expansion_terms(reader, counts, qt, n)
            if mix:
                own = feedback.expansion_terms(reader, feedback.item_terms(snap, rows[best]), qt, n)
                terms = list(dict.fromkeys(own[: n // 2] + terms))[:n]
            out = dict(q["fused"])
            found = bm25_score.search(reader, terms, 100, None) if terms else None
            hits = [(rows.find(h), s) for h, s in found.items] if found else []
            hits = [(i, s) for i, s in hits if i is not None]
            if hits:
                top = hits[0][1] or 1.0
                for i, s in hits:
                    out[i] = out.get(i, 0.0) + lam * s / top
            cache[key] = rollup_max(w, out)
        return cache[key]

    return run


# ------------------------------------------------------------------ ceilings


ORACLE_WEIGHTS = (0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2, 3, 5, 10, 100)


def _verdict(w, q, items) -> tuple[bool, bool]:
    top = set(ranked(rollup_max(w, items))[:5])
    rel = set(q["relevant"])
    return bool(rel & top), rel <= top


def _oracle(w, q, vec) -> tuple[bool, bool]:
    """Whether any vector weight, with the feedback off or on, puts any / all relevant files
    in the top 5: no weighting rule of these lists can do better."""
    from memwiki.index import feedback, search

    a = al = False
    for wt in ORACLE_WEIGHTS:
        fused = search.fuse(q["bm25"], vec, q["coverage"], weight=wt)
        for lam in (0.0, feedback.EXPANSION_WEIGHT):
            items = feedback.expand(w["_snap"], fused, q["query"], None, 100, lam) if lam else fused
            x, y = _verdict(w, q, items)
            a, al = a or x, al or y
    return a, al


def _lab_views():
    """tests/bench/lab.py's candidates (/tmp/memwiki-lab/cands.pkl), whose rows are the
    same as the copies' (checked): e5 cosines and the second pass's query variants."""
    import lab

    return pickle.loads((lab.LAB / "cands.pkl").read_bytes())


def _vec_list(cos):
    import numpy as np

    cos = np.asarray(cos)
    top = np.argsort(-cos, kind="stable")[:100]
    return [(int(i), float(cos[i])) for i in top if cos[i] >= 0.15]


def _zsum_cos(qo, key="cos:e5-small-q4", alpha=1.0):
    """MiniLM's cosines + alpha x another model's (lab cands.pkl key; the ensemble's e5 by
    default: vector_search.vector_scores), each z-scored over the items (lab.zsum)."""
    import lab
    import numpy as np

    a = np.asarray(qo["cos"], dtype=np.float64)
    b = np.asarray(qo[key], dtype=np.float64)
    return lab.zsum(a, [(b, alpha)]).astype(np.float32)


def ens(args) -> None:
    """Another model's cosines (lab cands.pkl, e.g. cos:use-m3) alone and beside MiniLM's
    (z-scores summed), through the shipped fusion at several caps and the shipped feedback.

    lab_multi.py ens DIR KEY: rows as `score` prints them, then agentwiki's per-query
    changes against the shipped pipeline for each ensemble row."""
    from memwiki.index import feedback, search

    sets = load(args[:1])
    key = args[1]
    old = _lab_views()
    for name, ws in sets.items():
        for w, wo in zip(ws, old[name], strict=True):
            assert w["paths"] == wo["paths"], name
            for q, qo in zip(w["queries"], wo["queries"], strict=True):
                assert q["query"] == qo["query"]
                q["_alone"] = _vec_list(qo[key])
                q["_z"] = _vec_list(_zsum_cos(qo, key))
                q["_z.5"] = _vec_list(_zsum_cos(qo, key, 0.5))
            attach_snap(w)

    def run(which, most, fb=True):
        def fn(w, q):
            c = q.setdefault("_c", {})
            k = (which, most, fb)
            if k not in c:
                fused = search.fuse(q["bm25"], q[which], q["coverage"], most=most)
                items = feedback.expand(w["_snap"], fused, q["query"], None, 100) if fb else fused
                c[k] = rollup_max(w, items)
            return c[k]

        return fn

    print(
        f"{'variant':<40} {'LoCoMo dev':<11} | {'agentwiki':<11} | {'half 0':<11} {'half 1':<11} | "
        + " ".join(f"{k[:9]:<9}" for k in KINDS)
    )
    rows = [("shipped (MiniLM, 1.5, feedback)", shipped)]
    rows.append(("MiniLM 1.5, no feedback", lambda w, q: rollup_max(w, q["fused"])))
    rows.append(("vectors alone: " + key, lambda w, q: rollup_max(w, dict(q["_alone"]))))
    rows.append(("vectors alone: z-sum", lambda w, q: rollup_max(w, dict(q["_z"]))))
    for most in (1.5, 2.0, 3.0):
        rows.append((f"{key} alone, {most}, feedback", run("_alone", most)))
    for most in (1.5, 2.0, 2.5, 3.0, 4.0):
        rows.append((f"z-sum {most}, feedback", run("_z", most)))
    for most in (2.0, 3.0):
        rows.append((f"z-sum {most}, no feedback", run("_z", most, False)))
        rows.append((f"z 0.5x {most}, feedback", run("_z.5", most)))
    for label, fn in rows:
        row(label, sets, fn)
    for label, fn in rows[4:]:
        if "alone" in label:
            continue
        for name in ("agentwiki", "locomo-dev"):
            changes = []
            ga = la = gl = ll = 0
            for w in sets[name]:
                for j, q in enumerate(w["queries"]):
                    rel = set(q["relevant"])
                    s0 = set(ranked(shipped(w, q))[:5])
                    s1 = set(ranked(fn(w, q))[:5])
                    a0, a1, l0, l1 = bool(rel & s0), bool(rel & s1), rel <= s0, rel <= s1
                    ga += a1 > a0
                    la += a0 > a1
                    gl += l1 > l0
                    ll += l0 > l1
                    if (a0, l0) != (a1, l1):
                        changes.append(f"a{j + 1:03d}{'+' if (a1, l1) > (a0, l0) else '-'}")
            extra = " ".join(changes) if name == "agentwiki" else ""
            print(f"{label:<28} {name}: any +{ga} -{la}, all +{gl} -{ll} {extra}")


def oracle(args) -> None:
    """agentwiki's ceiling over vector weights x feedback, for MiniLM and the ensemble, and
    the ensemble with the shipped fusion (weight up to 3.0) and feedback."""
    from memwiki.index import feedback, search

    sets = load(args[:1])
    old = _lab_views()
    w, wo = sets["agentwiki"][0], old["agentwiki"][0]
    assert w["paths"] == wo["paths"]
    attach_snap(w)
    tot = [0] * 6
    for q, qo in zip(w["queries"], wo["queries"], strict=True):
        ens = _vec_list(_zsum_cos(qo))
        fused = search.fuse(q["bm25"], ens, q["coverage"], most=search.ENSEMBLE_WEIGHT_MAX)
        shipped_e = _verdict(w, q, feedback.expand(w["_snap"], fused, q["query"], None, 100))
        for n, v in enumerate((*_oracle(w, q, q["vec"]), *_oracle(w, q, ens), *shipped_e)):
            tot[n] += v
    n = len(w["queries"])
    r = [f"{t / n:.3f}" for t in tot]
    print(f"oracle MiniLM {r[0]} / {r[1]}, oracle ensemble {r[2]} / {r[3]}, ")
    print(f"ensemble + feedback {r[4]} / {r[5]}")


def views(args) -> None:
    """The second pass's query and BM25 variants again, now with the feedback after them."""
    import numpy as np

    from memwiki.index import feedback, search

    sets = load(args[:1])
    old = _lab_views()
    for ws in sets.values():
        for w in ws:
            attach_snap(w)
    variants = [("cos", "bm25"), ("cos", "bm25:head1"), ("cos", "bm25:flat")]
    variants += [("cos", "bm25:split"), ("cos:strip", "bm25"), ("cos:tags", "bm25")]
    variants += [("cos:frame", "bm25"), ("cos:lead", "bm25"), ("mean:lead", "bm25")]
    variants += [("mean:strip", "bm25")]
    for cv, bv in variants:
        line = f"{cv:<11} {bv:<11}"
        for name in ("locomo-dev", "agentwiki"):
            got = {"any": 0, "all": 0, "h0": 0, "h1": 0, "p": 0, "n": 0}
            for w, wo in zip(sets[name], old[name], strict=True):
                for j, (q, qo) in enumerate(zip(w["queries"], wo["queries"], strict=True)):
                    if cv.startswith("mean:"):
                        cos = (np.asarray(qo["cos"]) + np.asarray(qo["cos:" + cv[5:]])) / 2
                    else:
                        cos = qo[cv]
                    hits = q["bm25"] if bv == "bm25" else qo[bv][:100]
                    cov = q["coverage"] if bv == "bm25" else qo["cover:" + bv[5:]][0]
                    fused = search.fuse(hits, _vec_list(cos), cov)
                    items = feedback.expand(w["_snap"], fused, q["query"], None, 100)
                    a, al = _verdict(w, q, items)
                    got["any"] += a
                    got["all"] += al
                    got[f"h{j % 2}"] += al
                    got["p"] += a and q["kind"] == "paraphrase"
                    got["n"] += 1
            n = got["n"]
            line += f" | {name} {got['any'] / n:.3f} / {got['all'] / n:.3f}"
            if name == "agentwiki":
                line += f" halves all {got['h0'] * 2 / n:.3f} {got['h1'] * 2 / n:.3f}"
                line += f" paraphrase {got['p'] / 40:.3f}"
        print(line, flush=True)


def residual_query(lam, unit="item", share=False, min_left=1):
    """After the feedback: BM25 for the query terms the best item (or its whole file) lacks,
    lam x score / best residual hit (x the residual's share of the query's IDF when share)."""
    import math

    from memwiki.index import bm25, bm25_score, feedback

    def run(w, q):
        key = ("resid", lam, unit, share, min_left)
        cache = q.setdefault("_c", {})
        if key not in cache:
            snap = w["_snap"]
            rows = snap.state.rows
            best = feedback.top_item(rows, q["fused"])
            have: set[str] = set()
            if unit == "item":
                have = set(feedback.item_terms(snap, rows[best]))
            else:
                for i, p in enumerate(w["paths"]):
                    if p == rows[best].path:
                        have |= set(feedback.item_terms(snap, rows[i]))
            terms = list(dict.fromkeys(bm25.query_terms(q["query"])))
            left = [t for t in terms if t not in have]
            out = q["expanded"]
            if len(left) >= min_left and len(left) < len(terms):
                reader = snap.searcher().reader()
                found = bm25_score.search(reader, left, 100, None)
                hits = [(rows.find(h), s) for h, s in found.items]
                hits = [(i, s) for i, s in hits if i is not None]
                weight = lam
                if share:
                    n = reader.doc_count()

                    def idf(t):
                        df = reader.doc_frequency("body", t)
                        return math.log(1 + n / (df + 1)) if df else 0.0

                    total = sum(idf(t) for t in terms) or 1.0
                    weight = lam * sum(idf(t) for t in left) / total
                if hits:
                    out = dict(out)
                    top = hits[0][1] or 1.0
                    for i, s in hits:
                        out[i] = out.get(i, 0.0) + weight * s / top
            cache[key] = rollup_max(w, out)
        return cache[key]

    return run


def feedback_others(lam, renorm=True, self_boost=True):
    """The shipped feedback's hits outside the source file only, normalised by the best
    such hit (renorm) or by the shipped best; self_boost keeps the source file's own gain."""
    from memwiki.index import bm25, bm25_score, feedback

    def run(w, q):
        key = ("fbo", lam, renorm, self_boost)
        cache = q.setdefault("_c", {})
        if key not in cache:
            snap = w["_snap"]
            rows = snap.state.rows
            best = feedback.top_item(rows, q["fused"])
            reader = snap.searcher().reader()
            terms = feedback.expansion_terms(
                reader, feedback.item_terms(snap, rows[best]), bm25.query_terms(q["query"])
            )
            out = dict(q["fused"])
            if terms:
                found = bm25_score.search(reader, terms, 100, None)
                hits = [(rows.find(h), s) for h, s in found.items]
                hits = [(i, s) for i, s in hits if i is not None]
                src = rows[best].path
                other = [(i, s) for i, s in hits if w["paths"][i] != src]
                own = [(i, s) for i, s in hits if w["paths"][i] == src]
                top_all = hits[0][1] if hits else 1.0
                top = (other[0][1] if other else 1.0) if renorm else top_all
                for i, s in other:
                    out[i] = out.get(i, 0.0) + lam * s / top
                if self_boost:
                    for i, s in own:
                        out[i] = out.get(i, 0.0) + lam * s / top_all
            cache[key] = rollup_max(w, out)
        return cache[key]

    return run


def attach_file_bm25(w) -> None:
    """w['ftf'][path]: {term: count} over the whole file as BM25 indexes its items (name,
    description, tags, heading, lines), w['flen'], w['fdf']: a file-level BM25's statistics."""
    from memwiki.index import bm25

    root = Path(w["root"])
    ana = bm25.analyzer()
    cache: dict[str, list[str]] = {}
    seen: set[str] = set()
    ftf: dict[str, dict[str, int]] = {}
    for i, p in enumerate(w["paths"]):
        if p not in cache:
            cache[p] = (root / p).read_text(encoding="utf-8").splitlines()
        name, desc, tags, heading = w["meta"][i]
        counts = ftf.setdefault(p, {})
        if p not in seen:  # the head once per file
            seen.add(p)
            for t in ana(f"{name.replace('-', ' ')} {desc} {' '.join(tags)}"):
                counts[t.text] = counts.get(t.text, 0) + 1
        a, b = w["rows_lines"][i]
        for t in ana(heading + " " + "\n".join(cache[p][a - 1 : b])):
            counts[t.text] = counts.get(t.text, 0) + 1
    w["ftf"] = ftf
    w["flen"] = {p: sum(c.values()) for p, c in ftf.items()}
    df: dict[str, int] = {}
    for c in ftf.values():
        for t in c:
            df[t] = df.get(t, 0) + 1
    w["fdf"] = df


def file_bm25(w, q) -> dict[str, float]:
    import math

    from memwiki.index import bm25

    n = len(w["ftf"])
    avg = sum(w["flen"].values()) / n
    out: dict[str, float] = {}
    for t in dict.fromkeys(bm25.query_terms(q["query"])):
        df = w["fdf"].get(t)
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for p, c in w["ftf"].items():
            tf = c.get(t)
            if tf:
                norm = tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * w["flen"][p] / avg))
                out[p] = out.get(p, 0.0) + idf * norm
    return out


def whole_files(gamma, how="bm25", pool=0):
    """Shipped file scores + gamma x a whole-file signal / its best: BM25 over whole files
    (how=bm25), or the IDF share of the query's terms the file holds anywhere (cover);
    pool > 0: only the shipped best `pool` files take it."""

    def run(w, q):
        files = rollup_max(w, q["expanded"])
        if how == "bm25":
            sig = file_bm25(w, q)
        else:
            total = sum(q["qterms"].values()) or 1.0
            sig = {
                p: sum(v for t, v in q["qterms"].items() if t in w["fterms"][p]) / total
                for p in files
            }
        if not sig:
            return files
        best = max(sig.values()) or 1.0
        keep = set(ranked(files)[:pool]) if pool else None
        out = dict(files)
        for p, v in sig.items():
            if keep is None or p in keep:
                out[p] = out.get(p, 0.0) + gamma * v / best
        return out

    return run


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "hard"
    {"gather": gather, "hard": hard, "score": score, "oracle": oracle, "views": views, "ens": ens}[
        cmd
    ](sys.argv[2:])
