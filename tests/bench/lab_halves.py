"""Leave-half-out check of the adaptive fusion's parameters (see docs/retrieval.md).

Tune (lo, hi, power) on LoCoMo dev plus one half of agentwiki's queries (odd or even
positions, so every kind is split), score the other half. Run after `lab.py gather`.
"""

from __future__ import annotations

import itertools
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lab  # noqa: E402


def main() -> None:
    # argv[1]: the vector scores to use (lab.py's VEC: cos, or z:cos:MODEL for the ensemble)
    lab.VEC = sys.argv[1] if len(sys.argv) > 1 else "cos"
    sets = pickle.loads((lab.LAB / "cands.pkl").read_bytes())
    aw = sets["agentwiki"][0]
    pos = {id(q): n for n, q in enumerate(aw["queries"])}
    grid = list(itertools.product((0.2, 0.3, 0.4, 0.5), (0.7, 1.0, 1.5, 2.0, 3.0), (1.0, 2.0, 3.0)))
    loco = {g: lab.metrics(sets["locomo-dev"], lab.adaptive(g[0], g[1], 1, g[2])) for g in grid}
    for half in (0, 1):

        def tune(q, half=half):
            return pos[id(q)] % 2 == half

        def held(q, half=half):
            return pos[id(q)] % 2 != half

        def objective(g):
            a, al, _ = lab.metrics([aw], lab.adaptive(g[0], g[1], 1, g[2]), tune)
            la, lal, _ = loco[g]
            return (a + al) / 2 + (la + lal) / 2

        best = max(grid, key=objective)
        fuse = lab.adaptive(best[0], best[1], 1, best[2])
        t = lab.metrics([aw], fuse, tune)
        h = lab.metrics([aw], fuse, held)
        print(
            f"tuned on half {half}: lo={best[0]} hi={best[1]} power={best[2]}  "
            f"LoCoMo dev {loco[best][0]:.3f}/{loco[best][1]:.3f}  "
            f"tuning half {t[0]:.3f}/{t[1]:.3f}  held-out half {h[0]:.3f}/{h[1]:.3f}"
        )
        for shipped in ((0.3, 1.5, 2.0), (0.3, 3.0, 2.0)):
            h2 = lab.metrics([aw], lab.adaptive(shipped[0], shipped[1], 1, shipped[2]), held)
            print(f"   {shipped} on that held-out half: {h2[0]:.3f}/{h2[1]:.3f}")


if __name__ == "__main__":
    main()
