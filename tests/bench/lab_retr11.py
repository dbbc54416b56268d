"""Issue 11, fifth pass: new candidate signals for agentwiki's missed second files.

    python tests/bench/lab_retr11.py detail LAB a090 a097   # per query: top files, ranks per list
    python tests/bench/lab_retr11.py score LAB [FILTER]     # variants: LoCoMo dev, agentwiki, halves

LAB is a folder prepared by `lab.py gather` (MEMWIKI_LAB=LAB) then `lab_multi.py gather LAB`.
LoCoMo test and opswiki are never read here.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab_multi as lm  # noqa: E402


def detail(args) -> None:
    sets = lm.load(args[:1])
    w = sets["agentwiki"][0]
    attach_text(w)
    for qid in args[1:]:
        q = w["queries"][int(qid[1:]) - 1]
        files = lm.rollup_max(w, q["expanded"])
        order = lm.ranked(files)
        sig = {
            k: lm.ranked(lm.rollup_max(w, v))
            for k, v in (("bm", dict(q["bm25"])), ("vec", dict(q["vec"])), ("fused", q["fused"]))
        }
        print(qid, q["query"], "cov", round(q["coverage"], 2), q["relevant"])
        print("  terms", {t: round(v, 2) for t, v in q_idf(w, q).items()})
        for r, p in enumerate(order[:12]):
            mark = "*" if p in q["relevant"] else " "
            rk = " ".join(f"{k} {o.index(p) + 1 if p in o else '-'}" for k, o in sig.items())
            print(f"  {mark}{r + 1:2d} {files[p]:.3f} {p:<55} {rk}")


def attach_text(w) -> None:
    """w['tok'][i]: item i's analysed tokens in order (name, description, tags, heading, body)."""
    if "tok" in w:
        return
    from memwiki.index import bm25

    root = Path(w["root"])
    ana = bm25.analyzer()
    cache: dict[str, list[str]] = {}
    toks = []
    df: dict[str, int] = {}
    for i, p in enumerate(w["paths"]):
        if p not in cache:
            cache[p] = (root / p).read_text(encoding="utf-8").splitlines()
        a, b = w["rows_lines"][i]
        name, desc, tags, heading = w["meta"][i]
        body = [t.text for t in ana("\n".join(cache[p][a - 1 : b]))]
        head = [
            t.text for t in ana(f"{name.replace('-', ' ')} . {desc} . {' '.join(tags)} . {heading}")
        ]
        toks.append((head, body))
        for t in set(head) | set(body):
            df[t] = df.get(t, 0) + 1
    w["tok"] = toks
    w["df"] = df
    w["n"] = len(w["paths"])


def q_idf(w, q) -> dict[str, float]:
    from memwiki.index import bm25

    if "qidf" not in q:
        q["qidf"] = {
            t: math.log(1 + w["n"] / (w["df"][t] + 1))
            for t in dict.fromkeys(bm25.query_terms(q["query"]))
            if t in w["df"]
        }
    return q["qidf"]


def positions(w, i) -> list[dict[str, list[int]]]:
    """Item i's term positions: one map for the head (name .. heading), one for the body."""
    if "pos" not in w:
        w["pos"] = {}
    if i not in w["pos"]:
        out = []
        for seq in w["tok"][i]:
            d: dict[str, list[int]] = {}
            for n, t in enumerate(seq):
                d.setdefault(t, []).append(n)
            out.append(d)
        w["pos"][i] = out
    return w["pos"][i]


def min_gap(a: list[int], b: list[int]) -> int:
    best = 10**9
    j = 0
    for x in a:
        while j < len(b) and b[j] < x:
            j += 1
        if j < len(b):
            best = min(best, b[j] - x)
        if j > 0:
            best = min(best, x - b[j - 1])
    return best


def prox_score(w, q, i, window=5, how="inv", fields="body") -> float:
    """Pairs of distinct query terms near each other in item i: sum over pairs of
    min(idf) x f(gap), divided by the query's total idf."""
    idf = q_idf(w, q)
    total = sum(idf.values())
    if not total:
        return 0.0
    seqs = positions(w, i)
    use = seqs[1:] if fields == "body" else seqs
    terms = [t for t in idf]
    s = 0.0
    for x in range(len(terms)):
        for y in range(x + 1, len(terms)):
            a, b = terms[x], terms[y]
            gap = 10**9
            for d in use:
                if a in d and b in d:
                    gap = min(gap, min_gap(d[a], d[b]))
            if gap <= window:
                f = 1.0 / gap if how == "inv" else 1.0
                s += min(idf[a], idf[b]) * f
    return s / total


def proximity(lam, window=5, how="inv", fields="body", pool=0, norm="abs"):
    """The shipped scores, each candidate item + lam x its proximity score (x the top
    fused score when norm == 'abs'; / the best candidate's proximity when norm == 'best').
    pool > 0: only the items of the best `pool` files."""

    def run(w, q):
        attach_text(w)
        items = dict(q["expanded"])
        if pool:
            keep = set(lm.ranked(lm.rollup_max(w, items))[:pool])
            cands = [i for i in items if w["paths"][i] in keep]
        else:
            cands = list(items)
        top = max(items.values()) if items else 1.0
        pr = {i: prox_score(w, q, i, window, how, fields) for i in cands}
        best = max(pr.values(), default=0.0) or 1.0
        for i, v in pr.items():
            if v:
                items[i] += lam * (v * top if norm == "abs" else v / best * top)
        return lm.rollup_max(w, items)

    return run


def attach_snap(w) -> None:
    if "_snap" not in w:
        lm.attach_snap(w)


def pipeline(w, q, vec_scores=None, bm25_hits=None, fb=True):
    """The shipped fusion and feedback on (possibly changed) candidate lists, rolled up."""
    import numpy as np

    from memwiki.index import feedback, search
    from memwiki.index.vector_search import MIN_COSINE

    if vec_scores is None:
        vec = q["vec"]
    else:
        top = np.argsort(-vec_scores)[:100]
        vec = [(int(i), float(vec_scores[i])) for i in top if vec_scores[i] >= MIN_COSINE]
    hits = q["bm25"] if bm25_hits is None else bm25_hits
    fused = search.fuse(hits, vec, q["coverage"])
    if fb:
        attach_snap(w)
        fused = feedback.expand(w["_snap"], fused, q["query"], None, 100)
    return fused


def attach_hub(w, k) -> None:
    import numpy as np

    key = f"hub{k}"
    if key in w:
        return
    m = w["matrix"].astype(np.float32)
    sim = m @ m.T
    np.fill_diagonal(sim, -np.inf)
    kk = min(k, sim.shape[0] - 1)
    part = np.partition(-sim, kk - 1, axis=1)[:, :kk]
    w[key] = (-part).mean(axis=1)


def csls(beta, k=10, centre=True):
    """Vector scores cos(q, x) - beta * r_k(x), r_k the mean cosine of x to its k nearest
    items (hubness reduction, CSLS); centre: minus r_k's mean, so the scale stays."""
    import numpy as np

    def run(w, q):
        attach_hub(w, k)
        r = w[f"hub{k}"]
        cos = w["matrix"] @ q["qv"]
        adj = cos - beta * (r - (r.mean() if centre else 0.0))
        adj = np.where(cos >= 0.15, adj, -1.0)
        return lm.rollup_max(w, pipeline(w, q, adj))

    return run


def vocab(args) -> None:
    """Embed every wiki's vocabulary (one surface form per analysed term) -> LAB/vocab.pkl."""
    import pickle
    import re

    import numpy as np

    from memwiki.config import load as load_config
    from memwiki.index import bm25
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    lab = lm.lab_dir(args[:1])
    sets = lm.load(args[:1])
    ana = bm25.analyzer()
    out = {}
    for ws in sets.values():
        for w in ws:
            attach_text(w)
            root = Path(w["root"])
            surf: dict[str, dict[str, int]] = {}
            for p in sorted(set(w["paths"])):
                for word in re.findall(
                    r"[A-Za-z][A-Za-z-]+", (root / p).read_text(encoding="utf-8")
                ):
                    lw = word.lower()
                    ts = [t.text for t in ana(lw)]
                    if len(ts) == 1 and ts[0] in w["df"]:
                        surf.setdefault(ts[0], {})
                        surf[ts[0]][lw] = surf[ts[0]].get(lw, 0) + 1
            stems = sorted(surf)
            words = [max(surf[t], key=lambda x: (surf[t][x], -len(x))) for t in stems]
            index = Index(Wiki(root), load_config({"wiki": str(root)}), notify=lambda m: None)
            emb = index.embedder()
            vecs = np.asarray(emb.embed(words), dtype=np.float32)
            out[w["root"]] = (stems, words, vecs)
            print(w["root"], len(words), flush=True)
    (lab / "vocab.pkl").write_bytes(pickle.dumps(out))


def attach_vocab(w) -> None:
    import pickle

    if "vstems" in w:
        return
    if "_vocab" not in globals():
        globals()["_vocab"] = pickle.loads((Path(LAB_DIR) / "vocab.pkl").read_bytes())
    w["vstems"], w["vwords"], w["vvecs"] = globals()["_vocab"][w["root"]]


LAB_DIR = "/tmp/memwiki-lab-retr11"


def vocab_expansion(lam, m=5, maxshare=0.1, mode="add", mincos=0.0):
    """The query vector's m nearest wiki words (not query terms, in 2 .. maxshare x N items)
    searched with BM25; each hit + lam x score / best (mode add), before the feedback."""
    import numpy as np

    from memwiki.index import bm25, feedback, search

    def run(w, q):
        attach_vocab(w)
        attach_snap(w)
        qt = set(bm25.query_terms(q["query"]))
        cos = w["vvecs"] @ q["qv"]
        order = np.argsort(-cos)
        n = w["n"]
        picked = []
        for j in order:
            t = w["vstems"][j]
            if t in qt or cos[j] < mincos:
                continue
            df = w["df"].get(t, 0)
            if df < 2 or df > maxshare * n:
                continue
            picked.append(w["vwords"][j])
            if len(picked) >= m:
                break
        q.setdefault("vx", {})[(m, maxshare)] = picked
        fused = search.fuse(q["bm25"], q["vec"], q["coverage"])
        if picked and lam:
            snap = w["_snap"]
            rows = snap.state.rows
            found = bm25.search_hits(
                snap.bm25_dir, " ".join(picked), 100, None, searcher=snap.searcher()
            )
            hits = [(rows.find(h), s) for h, s in found.items]
            hits = [(i, s) for i, s in hits if i is not None]
            if hits:
                top = hits[0][1] or 1.0
                fused = dict(fused)
                for i, s in hits:
                    fused[i] = fused.get(i, 0.0) + lam * s / top
        fused = feedback.expand(w["_snap"], fused, q["query"], None, 100)
        return lm.rollup_max(w, fused)

    return run


def bm25_params(k1=1.2, b=None):
    """The whole pipeline (BM25, coverage, fusion, feedback) with BM25's K1 and per-field B."""
    from memwiki.index import bm25, bm25_score, bm25_sums

    b = b or {}

    def run(w, q):
        attach_snap(w)
        snap = w["_snap"]
        if "_avgfl" not in w:
            w["_avgfl"] = bm25.LiveStats.of(snap.searcher().reader(), []).avgfl
        byavg = w["_avgfl"]

        def norms(avgfl):
            f = min(byavg, key=lambda f: abs(byavg[f] - avgfl))
            bb = b.get(f, 0.75)
            from whoosh.util.numeric import byte_to_length

            return [k1 * ((1 - bb) + bb * byte_to_length(x) / avgfl) for x in range(256)]

        old = (bm25_score.length_norms, bm25_score.K1, bm25_sums.K1)
        bm25_score.length_norms, bm25_score.K1, bm25_sums.K1 = norms, k1, k1
        try:
            rows = snap.state.rows
            found = bm25.search_hits(snap.bm25_dir, q["query"], 100, None, searcher=snap.searcher())
            hits = [(rows.find(h), s) for h, s in found.items]
            hits = [(i, s) for i, s in hits if i is not None]
            qq = dict(q, coverage=found.coverage)
            return lm.rollup_max(w, pipeline(w, qq, None, hits))
        finally:
            bm25_score.length_norms, bm25_score.K1, bm25_sums.K1 = old

    return run


def spread(gamma, scope="cands", norm="top"):
    """Roll-up for evidence spread over items: a file's best item's score + gamma x the IDF
    share of query terms its other items hold and its best item does not (x the top
    score). scope 'cands': other items among the candidates; 'file': every item of the file."""

    def run(w, q):
        attach_text(w)
        items = q["expanded"]
        idf = q_idf(w, q)
        total = sum(idf.values()) or 1.0
        best: dict[str, int] = {}
        for i, s in items.items():
            p = w["paths"][i]
            if p not in best or s > items[best[p]]:
                best[p] = i
        if scope == "file":
            pool: dict[str, list[int]] = {}
            for i, p in enumerate(w["paths"]):
                if p in best:
                    pool.setdefault(p, []).append(i)
        else:
            pool = {}
            for i in items:
                pool.setdefault(w["paths"][i], []).append(i)
        top = max(items.values()) if items else 1.0
        out = {}
        for p, bi in best.items():
            have = set(w["tok"][bi][0]) | set(w["tok"][bi][1])
            more = set()
            for i in pool[p]:
                if i != bi:
                    more |= set(w["tok"][i][0]) | set(w["tok"][i][1])
            extra = sum(v for t, v in idf.items() if t in more and t not in have)
            out[p] = items[bi] + gamma * extra / total * (top if norm == "top" else 1.0)
        return out

    return run


def attach_sets(w) -> None:
    if "tset" in w:
        return
    w["tset"] = [set(h) | set(b) for h, b in w["tok"]]


def split_query(w, q, theta):
    """The 2-partition of the query's terms (each side 2+) whose terms co-occur least in
    items: mean over cross pairs of co(a, b) / min(df); None unless that is below theta."""
    import itertools

    attach_sets(w)
    idf = q_idf(w, q)
    terms = list(idf)
    if len(terms) < 4:
        return None
    docs = {t: {i for i, s in enumerate(w["tset"]) if t in s} for t in terms}

    def assoc(a, b):
        m = min(len(docs[a]), len(docs[b])) or 1
        return len(docs[a] & docs[b]) / m

    best = None
    first, rest = terms[0], terms[1:]
    for r in range(1, len(rest)):
        for comb in itertools.combinations(rest, r):
            a = [first, *comb]
            b = [t for t in rest if t not in comb]
            if len(a) < 2 or len(b) < 2:
                continue
            cost = sum(assoc(x, y) for x in a for y in b) / (len(a) * len(b))
            if best is None or cost < best[0]:
                best = (cost, a, b)
    if best is None or best[0] >= theta:
        return None
    return best[1], best[2]


def cooc_decomposed(gamma, theta=0.2, how="add"):
    """Multi-aspect queries (split_query) searched per aspect with BM25 too: each aspect's
    hits + gamma x score / its best, before the feedback."""
    from memwiki.index import feedback, search

    def run(w, q):
        attach_snap(w)
        key = ("split", theta)
        if key not in q:
            q[key] = split_query(w, q, theta)
        parts = q[key]
        fused = search.fuse(q["bm25"], q["vec"], q["coverage"])
        if parts:
            snap = w["_snap"]
            rows = snap.state.rows
            fused = dict(fused)
            reader = snap.searcher().reader()
            from memwiki.index import bm25_score

            for part in parts:
                found = bm25_score.search(reader, part, 100, None)
                hits = [(rows.find(h), s) for h, s in found.items]
                hits = [(i, s) for i, s in hits if i is not None]
                if not hits:
                    continue
                top = hits[0][1] or 1.0
                for i, s in hits:
                    fused[i] = fused.get(i, 0.0) + gamma * s / top
        fused = feedback.expand(w["_snap"], fused, q["query"], None, 100)
        return lm.rollup_max(w, fused)

    return run


def attach_item_links(w) -> None:
    """w['ilinks'][i]: the files item i's own lines link to ([[stem]], as agentwiki's do)."""
    import re

    if "ilinks" in w:
        return
    root = Path(w["root"])
    by_stem = {Path(p).stem.lower(): p for p in sorted(set(w["paths"]))}
    cache: dict[str, list[str]] = {}
    out = []
    for i, p in enumerate(w["paths"]):
        if p not in cache:
            cache[p] = (root / p).read_text(encoding="utf-8").splitlines()
        a, b = w["rows_lines"][i]
        names = re.findall(r"\[\[([^\]|#]+)", "\n".join(cache[p][a - 1 : b]))
        ts = []
        for n in names:
            t = by_stem.get(Path(n.strip()).name.lower())
            if t and t != p and t not in ts:
                ts.append(t)
        out.append(ts)
    w["ilinks"] = out


def item_links(beta, m=3, how="add"):
    """Files linked from the best item of each of the top m files (the passage that
    matched, not the whole file) + beta x that item's score (add), or max(own, beta x it)."""

    def run(w, q):
        attach_item_links(w)
        items = q["expanded"]
        files = lm.rollup_max(w, items)
        order = lm.ranked(files)
        out = dict(files)
        for src in order[:m]:
            bi = max((i for i in items if w["paths"][i] == src), key=lambda i: (items[i], -i))
            for t in w["ilinks"][bi]:
                own = files.get(t, 0.0)
                gain = beta * items[bi]
                new = own + gain if how == "add" else max(own, gain)
                out[t] = max(out.get(t, 0.0), new)
        return out

    return run


def variants():
    out = [("shipped", lm.shipped), ("repro", lambda w, q: lm.rollup_max(w, pipeline(w, q)))]
    for m in (1, 2, 3, 5):
        for beta in (0.05, 0.1, 0.2, 0.3, 0.5, 0.8):
            for how in ("add", "max"):
                out.append((f"ilink m={m} b={beta} {how}", item_links(beta, m, how)))
    for th in (0.1, 0.2, 0.3):
        for g in (0.1, 0.2, 0.3, 0.5):
            out.append((f"cooc th={th} g={g}", cooc_decomposed(g, th)))
    for g in (0.05, 0.1, 0.2, 0.3, 0.5):
        for sc in ("cands", "file"):
            for nm in ("top", "abs"):
                out.append((f"spread g={g} {sc} {nm}", spread(g, sc, nm)))
    out.append(("bm25p default", bm25_params()))
    for k1 in (0.9, 1.2, 1.6, 2.0):
        for bb in (0.4, 0.75, 0.9):
            for bh in (0.0, 0.3, 0.75):
                b = {"body": bb, "name": bh, "description": bh, "tags": bh, "heading": bh}
                out.append((f"bm25p k1={k1} body={bb} head={bh}", bm25_params(k1, b)))
    for lam in (0.1, 0.2, 0.3, 0.5):
        for m in (3, 5, 10):
            for ms in (0.05, 0.1, 0.3):
                out.append((f"vocab l={lam} m={m} share={ms}", vocab_expansion(lam, m, ms)))
    for beta in (0.1, 0.2, 0.3, 0.5, 0.8):
        for k in (5, 10, 30):
            out.append((f"csls b={beta} k={k}", csls(beta, k)))
    for lam in (0.05, 0.1, 0.2, 0.3, 0.5):
        for window in (1, 3, 5, 10):
            for how in ("inv", "flat"):
                for pool in (0, 10, 20):
                    for norm in ("abs", "best"):
                        out.append(
                            (
                                f"prox l={lam} w={window} {how} pool={pool} {norm}",
                                proximity(lam, window, how, "body", pool, norm),
                            )
                        )
    return out


def score(args) -> None:
    globals()["LAB_DIR"] = str(lm.lab_dir(args[:1]))
    sets = lm.load(args[:1])
    which = args[1] if len(args) > 1 else ""
    for ws in sets.values():
        for w in ws:
            attach_text(w)
    for label, fn in variants():
        if which and which not in label and label != "shipped":
            continue
        lm.row(label, sets, fn)


def diff(args) -> None:
    """Which agentwiki queries a variant (label, exact) gains or loses on R@5-all / any."""
    globals()["LAB_DIR"] = str(lm.lab_dir(args[:1]))
    sets = lm.load(args[:1])
    w = sets["agentwiki"][0]
    attach_text(w)
    table = dict(variants())
    for label in args[1:]:
        fn = table[label]
        gained, lost = [], []
        for n, q in enumerate(w["queries"]):
            rel = set(q["relevant"])
            a = set(lm.ranked(lm.shipped(w, q))[:5])
            b = set(lm.ranked(fn(w, q))[:5])
            for kind, x, y in (("all", rel <= a, rel <= b), ("any", bool(rel & a), bool(rel & b))):
                if x != y:
                    (gained if y else lost).append(f"a{n + 1:03d}:{kind}")
        print(f"{label}: gained {gained} lost {lost}", flush=True)


def splits(args) -> None:
    sets = lm.load(args[:1])
    th = float(args[1])
    for name, ws in sets.items():
        n = m = 0
        for w in ws:
            attach_text(w)
            for j, q in enumerate(w["queries"]):
                sp = split_query(w, q, th)
                n += 1
                m += sp is not None
                if sp and name == "agentwiki":
                    print(f"  a{j + 1:03d} {sp}")
        print(name, m, "of", n, "split")


if __name__ == "__main__":
    cmd = sys.argv[1]
    {"detail": detail, "score": score, "vocab": vocab, "diff": diff, "splits": splits}[cmd](
        sys.argv[2:]
    )
