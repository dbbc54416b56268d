"""Issue 11, sixth pass: anchor text, the lines that link to a note, indexed with the note.

    python tests/bench/lab_anchor.py none 0     # agentwiki as it is (the shipped figures)
    python tests/bench/lab_anchor.py line CAP   # each note gets a "Linked from" section

A copy of agentwiki is written where every note that other notes link to (`[[name]]`,
`[[name|alias]]`, `[[name#heading]]`) ends with a section holding up to CAP of the lines
that link to it, links turned into their text; then the real pipeline (index, hybrid
retrieve) runs the 120 queries. The section is one more item: BM25 and the vectors both
see it. Per-query ranks go to /tmp/memwiki-anchor-<variant>-<cap>.json for `diff`:

    python tests/bench/lab_anchor.py diff none-0 line-10

Only agentwiki is read (LoCoMo's wikis have no links; opswiki is never tuned on).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENTWIKI = ROOT.parent / "shared/eval/agentwiki"
LINK = re.compile(r"\[\[([^\]|#]+)(#[^\]|]*)?(?:\|([^\]]*))?\]\]")
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")


def _plain(line: str) -> str:
    line = LINK.sub(lambda m: m.group(3) or m.group(1), line)
    return LIST_MARK.sub("", line).strip()


def anchored(src: Path, dst: Path, cap: int) -> int:
    """Copy src to dst with anchor sections appended; the number of anchor lines."""
    shutil.copytree(src, dst)
    files = {p.stem: p for p in (dst / "wiki").rglob("*.md")}
    anchors: dict[str, list[str]] = defaultdict(list)
    for p in sorted(files.values()):
        text = p.read_text(encoding="utf-8")
        body = text.split("---", 2)[2] if text.startswith("---") else text
        for line in body.splitlines():
            for m in LINK.finditer(line):
                target = m.group(1).strip()
                s = _plain(line)
                if target in files and target != p.stem and s and s not in anchors[target]:
                    anchors[target].append(s)
    for target, lines in anchors.items():
        p = files[target]
        extra = "\n".join(f"- {s}" for s in lines[:cap])
        p.write_text(
            p.read_text(encoding="utf-8").rstrip("\n") + f"\n\n## Linked from\n\n{extra}\n"
        )
    return sum(min(len(v), cap) for v in anchors.values())


def run(variant: str, cap: int) -> None:
    """Score one variant on agentwiki (hybrid, k=5) and keep its rankings."""
    sys.path.insert(0, str(ROOT))
    from memwiki.config import load
    from memwiki.evaluate import by_kind, load_queries, run_queries, summarise
    from memwiki.wiki import Wiki

    tmp = Path(tempfile.mkdtemp(prefix="memwiki-anchor-"))
    try:
        if variant == "none":
            shutil.copytree(AGENTWIKI, tmp / "s")
        else:
            print("anchor lines", anchored(AGENTWIKI, tmp / "s", cap))
        root = tmp / "s" / "wiki"
        queries = load_queries(tmp / "s" / "queries.jsonl")
        runs = run_queries(Wiki(root), queries, ["hybrid"], k=5, config=load({"wiki": str(root)}))
        r = summarise("hybrid", queries, runs["hybrid"], 5)
        print(f"{variant} {cap}: R@5 {r.recall_any:.3f} / {r.recall_all:.3f}, MRR {r.mrr:.3f}")
        for kind, rep in by_kind(queries, runs, "hybrid", 5).items():
            print(f"  {kind}: {rep.recall_any:.3f} / {rep.recall_all:.3f}")
        out = [
            [q.query, q.relevant, ranked[:10]]
            for q, (ranked, _) in zip(queries, runs["hybrid"], strict=True)
        ]
        Path(f"/tmp/memwiki-anchor-{variant}-{cap}.json").write_text(json.dumps(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def diff(a: str, b: str) -> None:
    """The queries whose top-5 relevant files differ between two saved runs."""
    ra = json.loads(Path(f"/tmp/memwiki-anchor-{a}.json").read_text())
    rb = json.loads(Path(f"/tmp/memwiki-anchor-{b}.json").read_text())
    for i, ((query, relevant, one), (_, _, two)) in enumerate(zip(ra, rb, strict=True), 1):
        if {r for r in relevant if r in one[:5]} != {r for r in relevant if r in two[:5]}:
            print(f"a{i:03d} {query}")
            for r in relevant:
                rank = [str(x.index(r) + 1) if r in x else "-" for x in (one, two)]
                print(f"    {r}: {rank[0]} -> {rank[1]}")


if __name__ == "__main__":
    if sys.argv[1] == "diff":
        diff(sys.argv[2], sys.argv[3])
    else:
        run(sys.argv[1], int(sys.argv[2]))
