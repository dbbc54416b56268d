"""Query and representation laboratory: what lab.py's fusion grid leaves out (docs/retrieval.md).

    python tests/bench/lab.py gather          # once: BM25 + MiniLM candidates in /tmp/memwiki-lab
    python tests/bench/lab_query.py embed     # stripped queries, item texts headed by tags too
    python tests/bench/lab_query.py bm25      # BM25 again with other analysis and field boosts
    python tests/bench/lab_query.py score     # every variant: LoCoMo dev, agentwiki, its halves
    python tests/bench/lab_query.py halves    # fusion re-tuned per vector variant, held-out halves
    python tests/bench/lab_query.py oracle [VEC]   # the best vector weight per query: the ceiling

Every variant is scored on the same candidates; agentwiki's halves are its alternate queries
(a001, a003, ... and a002, a004, ...), so every kind is split. Not part of `make bench`;
LoCoMo test is never used here.
"""

from __future__ import annotations

import itertools
import math
import pickle
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402

KINDS = ["paraphrase", "identifier", "skill", "multi-hop", "keyword"]
SHIPPED = (0.3, 1.5, 2.0)  # VECTOR_WEIGHT, VECTOR_WEIGHT_MAX, WEIGHT_POWER
LINK = re.compile(r"\[\[([^\[\]\n|#]+)")


def _wiki_root(set_name: str, w: dict) -> Path:
    return lab.wiki_root(set_name, w)


def gather_demo() -> None:
    """Add the demo wiki's 54 queries (examples/eval, never used to tune the fusion) as a set."""
    from memwiki.evaluate import load_queries

    examples = Path(__file__).resolve().parents[2] / "examples"
    root = lab.LAB / "wikis" / "demo"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(examples / "demo-wiki", root, ignore=shutil.ignore_patterns(".memwiki"))
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    queries = load_queries(examples / "eval" / "demo-queries.jsonl")
    sets["demo"] = [lab.gather_wiki("demo", root, queries)]
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


def _snapshot(root: Path, vectors: bool = True):
    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    index = Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None)
    return index, index.snapshot(need_vectors=vectors)


def _bodies(root: Path, rows) -> list[str]:
    """Each item's text as the chunker cut it (its lines of the file on disk)."""
    cache: dict[str, list[str]] = {}
    out = []
    for r in rows:
        if r.path not in cache:
            cache[r.path] = (root / r.path).read_text(encoding="utf-8").splitlines()
        out.append("\n".join(cache[r.path][r.start_line - 1 : r.end_line]).strip())
    return out


# ------------------------------------------------------------------ query and item texts


def stop_words() -> frozenset[str]:
    """The function words BM25 drops (analysis.py): the stripped query drops them too."""
    from memwiki.index.analysis import EXTRA_STOP_WORDS
    from memwiki.index.whoosh_light import import_whoosh

    import_whoosh()
    from whoosh.analysis import STOP_WORDS

    return frozenset(STOP_WORDS | EXTRA_STOP_WORDS)


def strip_query(query: str, stops: frozenset[str]) -> str:
    """The query without its question and function words ("what does my ..."); kept if all are."""
    kept = [t for t in query.split() if re.sub(r"[^\w']", "", t.lower()) not in stops]
    return " ".join(kept) if kept else query


def tagged_text(row, body: str) -> str:
    """The shipped embed text (chunker.Item.embed_text) with the file's tags after the description."""
    head = f"{row.name.replace('-', ' ')}: {row.description}"
    if row.tags:
        head += "\n" + " ".join(row.tags)
    if row.heading:
        head += f"\n{row.heading}"
    return f"{head}\n{body}"


def embed() -> None:
    """q['cos:strip'], q['cos:tags'], q['cos:tags-strip']: cosines of the variants, every item."""
    import numpy as np

    from memwiki.config import load
    from memwiki.embed import load_embedder

    emb, why = load_embedder(load({}), threads=2)
    assert emb is not None, why
    stops = stop_words()
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    for name, ws in sets.items():
        for w in ws:
            root = _wiki_root(name, w)
            _, snap = _snapshot(root)
            rows = snap.state.rows
            matrix = np.asarray(snap.matrix() @ np.eye(snap.matrix().shape[1], dtype=np.float32))
            stripped = emb.embed([strip_query(q["query"], stops) for q in w["queries"]])
            plain = emb.embed([q["query"] for q in w["queries"]])
            tagged = matrix
            if any(r.tags for r in rows):
                texts = [tagged_text(r, b) for r, b in zip(rows, _bodies(root, rows), strict=True)]
                tagged = np.asarray(emb.embed(texts), dtype=np.float32)
            for n, q in enumerate(w["queries"]):
                q["cos:strip"] = matrix @ stripped[n]
                q["cos:tags"] = tagged @ plain[n]
                q["cos:tags-strip"] = tagged @ stripped[n]
            snap.close()
            print(name, w["name"], file=sys.stderr)
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


# Narrower strips: the question's frame only (wh-words, auxiliaries, the asker's pronouns),
# keeping the words that carry meaning for a sentence model ("both", "been", "no", "before").
FRAME = frozenset(
    """what whats what's which who whom whose when where why how do does did doing is are was
    were am be can could should would will shall may might must i i'm i've i'd me my mine we
    we're our ours us you your""".split()
)
ARTICLES = frozenset("a an the".split())


def strip_lead(query: str, words: frozenset[str]) -> str:
    """Drop frame words at the start of the query only ("what did I ..." -> "...")."""
    tokens = query.split()
    n = 0
    while n < len(tokens) - 1 and re.sub(r"[^\w']", "", tokens[n].lower()) in words:
        n += 1
    return " ".join(tokens[n:])


def strips() -> None:
    """q['cos:frame'], q['cos:frame+art'], q['cos:lead']: narrower query strips, same items."""
    import numpy as np

    from memwiki.config import load
    from memwiki.embed import load_embedder

    emb, why = load_embedder(load({}), threads=2)
    assert emb is not None, why
    variants = {
        "frame": lambda t: strip_query(t, FRAME),
        "frame+art": lambda t: strip_query(t, FRAME | ARTICLES),
        "lead": lambda t: strip_lead(t, FRAME | ARTICLES),
    }
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    for name, ws in sets.items():
        for w in ws:
            _, snap = _snapshot(_wiki_root(name, w))
            matrix = np.asarray(snap.matrix() @ np.eye(snap.matrix().shape[1], dtype=np.float32))
            for key, fn in variants.items():
                vecs = emb.embed([fn(q["query"]) for q in w["queries"]])
                for n, q in enumerate(w["queries"]):
                    q[f"cos:{key}"] = matrix @ vecs[n]
            snap.close()
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


def e5() -> None:
    """q['cos:e5'], q['cos:e5-lead']: multilingual-e5-small (the ensemble's second model) cosines."""
    import numpy as np

    from memwiki.embed.e5 import E5Embedder
    from memwiki.index.vectors import embed_text_of

    model = E5Embedder(threads=1)
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    for name, ws in sets.items():
        for w in ws:
            root = _wiki_root(name, w)
            _, snap = _snapshot(root)
            items = model.embed([embed_text_of(root, r) for r in snap.state.rows])
            texts = [q["query"] for q in w["queries"]]
            plain = model.embed_query(texts)
            lead = model.embed_query([strip_lead(t, FRAME | ARTICLES) for t in texts])
            for n, q in enumerate(w["queries"]):
                q["cos:e5"] = np.asarray(items @ plain[n])
                q["cos:e5-lead"] = np.asarray(items @ lead[n])
            snap.close()
            print(name, w["name"], file=sys.stderr, flush=True)
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


# ------------------------------------------------------------------ BM25 variants


_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _split_identifiers_filter():
    """A Whoosh filter (defined at module level, so the schema pickles) yielding identifier parts."""
    from memwiki.index import analysis as a
    from memwiki.index.whoosh_light import import_whoosh

    import_whoosh()
    from whoosh.analysis import Filter

    global SplitIdentifiers

    class SplitIdentifiers(Filter):
        def __call__(self, tokens):
            for t in tokens:
                text = t.text
                yield t
                mixed = any(c.isupper() for c in text[1:]) and any(c.islower() for c in text)
                if a.is_cjk(text) or not ("_" in text or "." in text or mixed):
                    continue
                found = _PARTS.findall(text)
                for p in found if len(found) > 1 else ():
                    t.text = p
                    yield t

    SplitIdentifiers.__qualname__ = "SplitIdentifiers"
    return SplitIdentifiers()


def _identifier_analyzer():
    """The shipped analysis, plus the parts of snake_case, dotted.key and camelCase words."""
    from memwiki.index import analysis as a
    from memwiki.index.whoosh_light import import_whoosh

    import_whoosh()
    from whoosh.analysis import STOP_WORDS, LowercaseFilter, RegexTokenizer, StopFilter

    return (
        RegexTokenizer(a.TOKEN_PATTERN)
        | _split_identifiers_filter()
        | LowercaseFilter()
        | StopFilter(stoplist=STOP_WORDS | a.EXTRA_STOP_WORDS, minsize=1)
        | a.CJKFilter()
        | a.StemNonCJK()
    )


BM25_VARIANTS = {
    "split": ("identifier parts indexed too", {}),
    "desc2.5": ("description boost 2.5 (1.5)", {"description": 2.5}),
    "desc1": ("description boost 1.0", {"description": 1.0}),
    "name3": ("name boost 3.0 (2.0)", {"name": 3.0}),
    "head1": ("heading boost 1.0 (1.5)", {"heading": 1.0}),
    "flat": (
        "every field boost 1.0",
        {"name": 1.0, "description": 1.0, "heading": 1.0, "tags": 1.0},
    ),
}


def bm25_variants() -> None:
    """Rebuild each lab wiki's BM25 (no vectors) per variant: q['bm25:V'], q['cover:V']."""
    from memwiki.index import analysis, bm25

    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    shipped_boosts, shipped_analyzer = dict(bm25.FIELD_BOOSTS), analysis.analyzer
    for key, (_, boosts) in BM25_VARIANTS.items():
        bm25.FIELD_BOOSTS.clear()
        bm25.FIELD_BOOSTS.update({**shipped_boosts, **boosts})
        analysis.analyzer = _identifier_analyzer if key == "split" else shipped_analyzer
        for name, ws in sets.items():
            for w in ws:
                work = lab.LAB / "bm25-variant"
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(
                    _wiki_root(name, w), work, ignore=shutil.ignore_patterns(".memwiki")
                )
                index, snap = _snapshot(work, vectors=False)
                rows = snap.state.rows
                assert [r.path for r in rows] == w["paths"], "rows differ from the lab's"
                row_of = {r.id: i for i, r in enumerate(rows)}
                for q in w["queries"]:
                    found = bm25.search_hits(
                        snap.bm25_dir, q["query"], 200, searcher=snap.searcher()
                    )
                    q[f"bm25:{key}"] = [(row_of[h], s) for h, s in found.items if h in row_of]
                    q[f"cover:{key}"] = [found.coverage]
                snap.close()
        print(key, file=sys.stderr)
    bm25.FIELD_BOOSTS.clear()
    bm25.FIELD_BOOSTS.update(shipped_boosts)
    analysis.analyzer = shipped_analyzer
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


# ------------------------------------------------------------------ fusion families


def weight(q, p=SHIPPED, bm="") -> float:
    lo, hi, power = p
    return lo + (hi - lo) * (1 - q[f"cover{bm}"][0]) ** power


def fused_items(q, p=SHIPPED, bm="", shape=(1.0, 1.0)) -> dict[int, float]:
    """The shipped item fusion (index/fusion.score_fusion, adaptive weight); shape: powers of both parts."""
    import numpy as np

    cos = lab.vec_scores(q)
    top = np.argsort(-cos)[:100]
    vec = [(int(i), float(cos[i])) for i in top if cos[i] >= 0.15]
    hits = q[f"bm25{bm}"][:100]
    w, out = weight(q, p, bm), {}
    if hits:
        best = hits[0][1] or 1.0
        out = {i: (s / best) ** shape[0] for i, s in hits}
    if vec:
        best = vec[0][1] or 1.0
        for i, s in vec:
            out[i] = out.get(i, 0.0) + w * (s / best) ** shape[1]
    return out


def max_rollup(w, items: dict[int, float], second: float = 0.0) -> dict[str, float]:
    """File score: its best item (+ second x its second best)."""
    per: dict[str, list[float]] = {}
    for i, s in items.items():
        per.setdefault(w["paths"][i], []).append(s)
    out = {}
    for path, scores in per.items():
        scores.sort(reverse=True)
        out[path] = scores[0] + (second * scores[1] if len(scores) > 1 else 0.0)
    return out


def shipped(q, w, p=SHIPPED, bm=""):
    return max_rollup(w, fused_items(q, p, bm))


def file_level(q, w, mix=1.0, p=SHIPPED):
    """Roll each list up to files first (best item), then fuse files; mix: share of this."""
    import numpy as np

    cos = lab.vec_scores(q)
    top = np.argsort(-cos)[:100]
    vec = [(int(i), float(cos[i])) for i in top if cos[i] >= 0.15]
    b: dict[str, float] = {}
    v: dict[str, float] = {}
    for hits, into in ((q["bm25"][:100], b), (vec, v)):
        best = (hits[0][1] or 1.0) if hits else 1.0
        for i, s in hits:
            into[w["paths"][i]] = max(into.get(w["paths"][i], 0.0), s / best)
    items = shipped(q, w, p) if mix < 1 else {}
    wt = weight(q, p)
    return {
        f: mix * (b.get(f, 0.0) + wt * v.get(f, 0.0)) + (1 - mix) * items.get(f, 0.0)
        for f in set(b) | set(v)
    }


def length_prior(q, w, alpha):
    count: dict[str, int] = {}
    for path in w["paths"]:
        count[path] = count.get(path, 0) + 1
    return {f: s - alpha * math.log(count[f]) for f, s in shipped(q, w).items()}


def attach_links(sets) -> None:
    """w['links'][row]: the files that row's lines link to with [[wikilinks]] (by file stem)."""
    for name, ws in sets.items():
        for w in ws:
            root = _wiki_root(name, w)
            stems = {Path(p).stem: p for p in w["files"]}
            _, snap = _snapshot(root, vectors=False)
            w["links"] = [
                {stems[m.strip()] for m in LINK.findall(body) if m.strip() in stems} - {r.path}
                for r, body in zip(snap.state.rows, _bodies(root, snap.state.rows), strict=True)
            ]
            snap.close()


def linked(q, w, g, how="max", top_files=5):
    """Files linked from the top files' candidate items take g x that item's score (max or add)."""
    items = fused_items(q)
    files = max_rollup(w, items)
    top = set(sorted(files, key=lambda f: (-files[f], f))[:top_files])
    out = dict(files)
    prop: dict[str, float] = {}
    for i, s in items.items():
        if w["paths"][i] in top:
            for target in w["links"][i]:
                prop[target] = max(prop.get(target, 0.0), s)
    for target, s in prop.items():
        out[target] = (
            max(out.get(target, 0.0), g * s) if how == "max" else out.get(target, 0) + g * s
        )
    return out


def linked_boost(q, w, g, top_files=1):
    """Files linked from the top files keep their own score times (1 + g)."""
    files = shipped(q, w)
    ranked = sorted(files, key=lambda f: (-files[f], f))[:top_files]
    boosted = set()
    for i, targets in enumerate(w["links"]):
        if w["paths"][i] in ranked:
            boosted |= targets
    boosted -= set(ranked)
    return {f: s * (1 + g) if f in boosted else s for f, s in files.items()}


def mmr(q, w, lam, pool=15):
    """Maximal marginal relevance over the top files, a file represented by its best item's vector."""
    import numpy as np

    files = shipped(q, w)
    order = sorted(files, key=lambda f: (-files[f], f))[:pool]
    cos = lab.vec_scores(q)
    best_row: dict[str, int] = {}
    for i, path in enumerate(w["paths"]):
        if path in files and (path not in best_row or cos[i] > cos[best_row[path]]):
            best_row[path] = i
    vec = {f: np.asarray(w["matrix"][best_row[f]]) for f in order}
    top = files[order[0]] if order else 1.0
    chosen: list[str] = []
    rest = list(order)
    while rest and len(chosen) < 5:

        def value(f):
            return files[f] / top - lam * max((float(vec[f] @ vec[c]) for c in chosen), default=0)

        pick = max(rest, key=lambda f: (value(f), -order.index(f)))
        chosen.append(pick)
        rest.remove(pick)
    out = {f: 100.0 - n for n, f in enumerate(chosen)}
    for f, s in files.items():
        out.setdefault(f, s / top)
    return out


def attach_terms(sets) -> None:
    """w['fterms'][file]: the analysed terms of the whole file; q['terms']: the query's."""
    from memwiki.index import bm25

    for name, ws in sets.items():
        for w in ws:
            root = _wiki_root(name, w)
            _, snap = _snapshot(root, vectors=False)
            rows = snap.state.rows
            terms: dict[str, set[str]] = {}
            for r, body in zip(rows, _bodies(root, rows), strict=True):
                text = f"{r.name.replace('-', ' ')} {r.description} {' '.join(r.tags)} {r.heading}"
                terms.setdefault(r.path, set()).update(bm25.query_terms(f"{text} {body}"))
            w["fterms"] = terms
            snap.close()
            for q in w["queries"]:
                q["terms"] = bm25.query_terms(q["query"])


def term_coverage(q, w, mu, pool=10):
    """Greedy top 5 from the best `pool` files: score / best + mu x share of the query's IDF
    in terms no file chosen so far contains (diversity by query aspect, xQuAD-like)."""
    files = shipped(q, w)
    order = sorted(files, key=lambda f: (-files[f], f))[:pool]
    n = len(w["fterms"])
    df: dict[str, int] = {}
    for terms in w["fterms"].values():
        for t in terms:
            df[t] = df.get(t, 0) + 1
    weights = {t: math.log(1 + n / (df[t] + 1)) for t in q["terms"] if df.get(t)}
    total = sum(weights.values()) or 1.0
    top = files[order[0]] if order else 1.0
    chosen: list[str] = []
    covered: set[str] = set()
    rest = list(order)
    while rest and len(chosen) < 5:

        def value(f, covered=covered):
            new = sum(v for t, v in weights.items() if t in w["fterms"][f] and t not in covered)
            return files[f] / top + mu * new / total

        pick = max(rest, key=lambda f: (value(f), -order.index(f)))
        chosen.append(pick)
        rest.remove(pick)
        covered = covered | w["fterms"][pick]
    out = {f: 100.0 - k for k, f in enumerate(chosen)}
    for f, s in files.items():
        out.setdefault(f, s / top)
    return out


# ------------------------------------------------------------------ scoring


def metrics(ws, fn, keep=None, k=5) -> tuple[float, float]:
    """R@k-any and R@k-all of fn (query, wiki) -> {file: score} over the queries keep accepts."""
    hit_any = hit_all = n = 0
    for w in ws:
        for j, q in enumerate(w["queries"]):
            if keep and not keep(j, q):
                continue
            files = fn(q, w)
            top = set(sorted(files, key=lambda f: (-files[f], f))[:k])
            rel = set(q["relevant"])
            hit_any += bool(rel & top)
            hit_all += rel <= top
            n += 1
    return hit_any / n, hit_all / n


def line(name: str, sets, fn) -> None:
    """One table row: LoCoMo dev, agentwiki, its two halves, recall per kind, the demo set."""
    aw = sets["agentwiki"]
    la, lal = metrics(sets["locomo-dev"], fn)
    aa, aal = metrics(aw, fn)
    h = [metrics(aw, fn, lambda j, q, half=half: j % 2 == half) for half in (0, 1)]
    kinds = [metrics(aw, fn, lambda j, q, kind=kind: q["kind"] == kind)[0] for kind in KINDS]
    da, dal = metrics(sets["demo"], fn) if "demo" in sets else (float("nan"),) * 2
    print(
        f"{name:<40} {la:.3f} {lal:.3f} | {aa:.3f} {aal:.3f} | "
        f"{h[0][0]:.3f} {h[0][1]:.3f} {h[1][0]:.3f} {h[1][1]:.3f} | "
        + " ".join(f"{x:.3f}" for x in kinds)
        + f" | {da:.3f} {dal:.3f}",
        flush=True,
    )


def vector_only(q, w):
    files: dict[str, float] = {}
    for i, s in enumerate(lab.vec_scores(q)):
        files[w["paths"][i]] = max(files.get(w["paths"][i], -1.0), float(s))
    return files


def _with_vec(vec, fn):
    def run(q, w):
        lab.VEC = vec
        try:
            return fn(q, w)
        finally:
            lab.VEC = "cos"

    return run


def score() -> None:
    """Every variant in one table."""
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    print(
        f"{'variant':<40} {'LoCoMo dev':<11} | {'agentwiki':<11} | {'half 0':<11} {'half 1':<11} | "
        + " ".join(f"{k[:5]:<5}" for k in KINDS)
        + " | demo"
    )
    line("shipped", sets, shipped)
    vecs = [
        v
        for v in (
            "cos:strip",
            "cos:frame",
            "cos:frame+art",
            "cos:lead",
            "cos:tags",
            "cos:tags-strip",
        )
        if v in sets["agentwiki"][0]["queries"][0]
    ]
    for vec in ["cos", *vecs, *(f"mean:{v}" for v in vecs)]:
        line(f"vectors alone, {vec}", sets, _with_vec(vec, vector_only))
        if vec != "cos":
            line(f"hybrid, {vec}", sets, _with_vec(vec, shipped))
    for key, (what, _) in BM25_VARIANTS.items():
        if f"bm25:{key}" in sets["agentwiki"][0]["queries"][0]:
            line(f"bm25 {what}", sets, lambda q, w, key=key: shipped(q, w, bm=f":{key}"))
    for second in (0.1, 0.3, 0.5):
        line(
            f"file = best + {second} x second",
            sets,
            lambda q, w, s=second: max_rollup(w, fused_items(q), s),
        )
    for mix in (1.0, 0.7, 0.5):
        line(f"file-level fusion, mix {mix}", sets, lambda q, w, m=mix: file_level(q, w, m))
    for shape in ((0.5, 1.0), (2.0, 1.0), (1.0, 2.0), (1.0, 4.0)):
        line(
            f"bm25^{shape[0]} + vec^{shape[1]}",
            sets,
            lambda q, w, s=shape: max_rollup(w, fused_items(q, shape=s)),
        )
    for alpha in (0.01, 0.05, 0.1):
        line(
            f"file length prior {alpha} x log(items)",
            sets,
            lambda q, w, a=alpha: length_prior(q, w, a),
        )
    attach_links(sets)
    for g in (0.3, 0.5, 0.7):
        line(f"links from top 5: max(own, {g} x linker)", sets, lambda q, w, g=g: linked(q, w, g))
    for g in (0.1, 0.2):
        line(
            f"links from top 10: own + {g} x linker",
            sets,
            lambda q, w, g=g: linked(q, w, g, "add", 10),
        )
    for g in (0.1, 0.3):
        line(
            f"linked from the top file: x (1 + {g})", sets, lambda q, w, g=g: linked_boost(q, w, g)
        )
    attach_terms(sets)
    for mu in (0.1, 0.3, 0.5):
        line(f"query-aspect diversity, mu {mu}", sets, lambda q, w, mu=mu: term_coverage(q, w, mu))
    for name, ws in sets.items():
        for w in ws:
            _, snap = _snapshot(_wiki_root(name, w))
            w["matrix"] = snap.matrix()
    for lam in (0.05, 0.1, 0.3):
        line(f"MMR over the top 15 files, lambda {lam}", sets, lambda q, w, lam=lam: mmr(q, w, lam))


GRID = list(itertools.product((0.2, 0.3, 0.4, 0.5), (1.0, 1.5, 2.0, 3.0), (1.0, 2.0, 3.0)))


def halves() -> None:
    """Per vector variant: (lo, hi, power) tuned on LoCoMo dev + one agentwiki half, scored on the other."""
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    aw = sets["agentwiki"]
    for vec in (
        "cos",
        "cos:strip",
        "cos:frame",
        "cos:frame+art",
        "cos:lead",
        "mean:cos:lead",
        "mean:cos:frame",
    ):
        if vec.removeprefix("mean:") not in aw[0]["queries"][0]:
            continue
        lab.VEC = vec
        loco = {g: metrics(sets["locomo-dev"], lambda q, w, g=g: shipped(q, w, g)) for g in GRID}
        held_out = []
        for half in (0, 1):

            def tune(j, q, half=half):
                return j % 2 == half

            def objective(g, tune=tune, loco=loco):
                a, al = metrics(aw, lambda q, w: shipped(q, w, g), tune)
                return (a + al) / 2 + sum(loco[g]) / 2

            best = max(GRID, key=objective)
            h = metrics(aw, lambda q, w, b=best: shipped(q, w, b), lambda j, q, t=tune: not t(j, q))
            held_out.append(h)
            print(
                f"{vec:<22} half {half}: best {best}, LoCoMo dev {loco[best][0]:.3f} / "
                f"{loco[best][1]:.3f}, held-out half {h[0]:.3f} / {h[1]:.3f}"
            )
        print(
            f"{vec:<22} mean of the held-out halves "
            f"{sum(h[0] for h in held_out) / 2:.3f} / {sum(h[1] for h in held_out) / 2:.3f}"
        )
    lab.VEC = "cos"


def oracle(vec: str = "cos") -> None:
    """The best single vector weight per query (from 0 to 100): what no weight rule can beat."""
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    lab.VEC = vec
    weights = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0)
    for name in ("locomo-dev", "agentwiki"):
        hit_any = hit_all = n = 0
        for w in sets[name]:
            for q in w["queries"]:
                rel = set(q["relevant"])
                tops = []
                for x in weights:
                    files = shipped(q, w, (x, x, 1.0))
                    tops.append(set(sorted(files, key=lambda f: (-files[f], f))[:5]))
                hit_any += any(rel & t for t in tops)
                hit_all += any(rel <= t for t in tops)
                n += 1
        print(f"{name}: the best weight per query gives R@5 {hit_any / n:.3f} / {hit_all / n:.3f}")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "score"
    if command == "embed":
        embed()
    elif command == "demo":
        gather_demo()
    elif command == "e5":
        e5()
    elif command == "strips":
        strips()
    elif command == "bm25":
        bm25_variants()
    elif command == "halves":
        halves()
    elif command == "oracle":
        oracle(sys.argv[2] if len(sys.argv) > 2 else "cos")
    else:
        score()
