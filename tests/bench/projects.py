"""Project scope on a four-project wiki: scoped (`--project auto`) vs unscoped (`--project all`).

The wiki (tests/fixtures/projects/wiki) has the same kinds of files for ledger, harbor,
atlas and quill (tests, deploy, migrations, code style, local setup, a project file)
plus global memory. Every query names the directory it is asked from; this module makes
real git repositories for them, one per identity source (an ssh origin, an https origin,
no remote, a linked worktree), and resolves each directory the way `retrieve` does.

Kinds: `ambiguous` (asked inside a project without naming it: that project's file must
come first), `named` (names another project: its file must be in the top 5) and
`personal` (global memory must come first, from any project or from outside one) and
`project-person` (who-questions whose answer is a project's own file: the cost of
preferring global memory for questions that ask who).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "projects"
# How each project's checkout is made: (repository directory, origin URL or None, cwd root).
REPOS = {
    "ledger": ("ledger", "git@github.com:acme/ledger.git", "ledger"),
    "harbor": ("harbor-src", "https://gitlab.com/acme/harbor.git", "harbor-src"),
    "atlas": ("atlas", None, "atlas"),
    "quill": ("quill", "ssh://git@git.example.com:2222/acme/quill", "quill-feature"),
}


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_checkouts(base: Path, subdirs: set[str]) -> Path:
    """Create the repositories (and the directories queries are asked from) under base."""
    for _project, (repo, url, _root) in REPOS.items():
        path = base / repo
        path.mkdir(parents=True)
        _git("init", "-q", "-b", "main", cwd=path)
        if url:
            _git("remote", "add", "origin", url, cwd=path)
        (path / "README.md").write_text(f"# {repo}\n")
        _git("add", "README.md", cwd=path)
        _git("-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init", cwd=path)
    # quill is asked from a linked worktree: one project with its main checkout.
    _git("worktree", "add", "-q", "-b", "feature", str(base / "quill-feature"), cwd=base / "quill")
    for sub in subdirs:
        (base / sub).mkdir(parents=True, exist_ok=True)
    return base


def load_queries(path: Path = FIXTURE / "queries.jsonl") -> list[dict]:
    """The queries with their kind and directory."""
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def directory_of(base: Path, cwd: str) -> Path:
    """The real directory a query's `cwd` names (its first part is the project)."""
    if cwd == "outside":
        return base / "outside"
    project, _, rest = cwd.partition("/")
    return base / REPOS[project][2] / rest


def run(modes: list[str], work: Path | None = None) -> dict:
    """{mode: {kind: {"scoped": (top1, top5), "unscoped": (top1, top5), "n": n}}}."""
    import shutil

    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.index.search import retrieve
    from memwiki.project import scope
    from memwiki.wiki import Wiki

    work = work or Path(tempfile.mkdtemp(prefix="memwiki-projects-"))
    wiki_dir = work / "wiki"
    shutil.copytree(FIXTURE / "wiki", wiki_dir)
    queries = load_queries()
    base = make_checkouts(work / "checkouts", set())
    for q in queries:
        directory_of(base, q["cwd"]).mkdir(parents=True, exist_ok=True)
    cfg = load({"wiki": str(wiki_dir)}, environ={"HOME": str(work)})
    wiki = Wiki(wiki_dir)
    index = Index(wiki, cfg, notify=lambda _m: None)
    index.snapshot(need_vectors=any(m != "bm25" for m in modes))
    out: dict = {}
    for mode in modes:
        table: dict = {}
        for q in queries:
            slug = scope("auto", directory_of(base, q["cwd"]))
            row = table.setdefault(q["kind"], {"scoped": [0, 0], "unscoped": [0, 0], "n": 0})
            row["n"] += 1
            for label, project in (("scoped", slug), ("unscoped", None)):
                paths = retrieve(
                    wiki, q["query"], k=5, mode=mode, index=index, budget=0, project=project
                ).paths()
                row[label][0] += bool(paths) and paths[0] in q["relevant"]
                row[label][1] += any(p in q["relevant"] for p in paths[:5])
        out[mode] = table
    return out


def print_table(results: dict) -> None:
    """Scoped and unscoped side by side, per mode and query kind."""
    print("\nProject scope (tests/fixtures/projects: 4 projects + global memory, k=5)")
    print(
        f"  {'mode':<7} {'kind':<14} {'n':>3}  {'top-1 scoped':>12} {'unscoped':>9}"
        f"  {'top-5 scoped':>12} {'unscoped':>9}"
    )
    for mode, table in results.items():
        for kind in ("ambiguous", "named", "personal", "project-person"):
            row = table.get(kind)
            if not row:
                continue
            n = row["n"]
            s1, s5 = (v / n for v in row["scoped"])
            u1, u5 = (v / n for v in row["unscoped"])
            print(f"  {mode:<7} {kind:<14} {n:>3}  {s1:>12.3f} {u1:>9.3f}  {s5:>12.3f} {u5:>9.3f}")


def main(argv: list[str] | None = None) -> None:
    """`python tests/bench/projects.py [--modes bm25,hybrid]`."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--modes", default="bm25,vector,hybrid")
    args = ap.parse_args(argv)
    print_table(run(args.modes.split(",")))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
