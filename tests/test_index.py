"""The sidecar index: freshness, incremental updates equal a rebuild, damage repair, bad files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki.config import load
from memwiki.index import bm25
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve
from memwiki.recallfile import MAX_FILE_BYTES
from memwiki.wiki import Wiki

FILES = {
    "memory/billing.md": (
        "Billing service stack and deployment",
        "## Stack\nGo 1.23, Postgres 16, River jobs.\n\n## Deploy\nArgo CD promotes tags to production.\n",
    ),
    "memory/dashboard.md": (
        "The React dashboard and its ClickHouse backend",
        "## Data\nClickHouse serves the usage charts.\n",
    ),
    "skill/release.md": (
        "How to release the billing service",
        "## Steps\n1. Tag v2.\n2. Verify staging.\n3. Promote to production.\n",
    ),
}


def write(root: Path, rel: str, description: str, body: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {path.stem}\ndescription: {description}\n---\n{body}", encoding="utf-8"
    )


def make_wiki(root: Path, files=FILES) -> Wiki:
    wiki, _ = Wiki.init(root)
    for rel, (desc, body) in files.items():
        write(wiki.root, rel, desc, body)
    return wiki


def cfg(root: Path, **extra):
    return load({"wiki": str(root)}, environ={"HOME": str(root.parent), **extra})


def snapshot_facts(wiki: Wiki, queries=("billing deploy", "clickhouse charts", "staging release")):
    """Everything a rebuild must reproduce: items, vectors by item, BM25 hits per query."""
    index = Index(wiki, cfg(wiki.root), notify=lambda m: None)
    snap = index.snapshot(need_vectors=True)
    rows = {r.id: r for r in snap.state.rows}
    matrix = snap.matrix()
    vectors = {r.id: matrix[i] for i, r in enumerate(snap.state.rows)}
    hits = {q: dict(bm25.search(snap.bm25_dir, q, 20)) for q in queries}
    return rows, vectors, hits, snap


def assert_same_scores(a: dict, b: dict) -> None:
    """Same ids, and the same score for each to 1e-6."""
    assert set(a) == set(b)
    for key in a:
        assert abs(a[key] - b[key]) <= 1e-6, (key, a[key], b[key])


def apply_ops(index: Index, root: Path, ops) -> None:
    """Create, edit or delete memory/f<n>.md for each (op, n, words), updating the index each
    time; an existing file edited or deleted leaves Whoosh holding deleted documents."""
    replaced = False
    state = None
    for op, n, words in ops:
        rel = f"memory/f{n:04d}.md"
        replaced |= op != "create" and (root / rel).exists()
        if op == "delete":
            (root / rel).unlink(missing_ok=True)
        else:
            write(root, rel, f"changed {n}", "## One\n" + " ".join(words) + "\n")
        state = index.update(need_vectors=False).state
    assert state is not None and (state.bm25_deleted > 0 or not replaced)


def answers(wiki: Wiki, queries, mode="hybrid", **extra):
    """Ranked files and their scores per query, from the command's library entry."""
    c = cfg(wiki.root, **extra)
    index = Index(wiki, c, notify=lambda m: None)  # one model load for every query
    out = {}
    for q in queries:
        result = retrieve(wiki, q, k=10, mode=mode, config=c, index=index, budget=0)
        out[q] = [(r.path, r.score) for r in result.results]
    return out


def assert_same_answers(a: dict, b: dict) -> None:
    """Same files in the same order with the same scores to 1e-6."""
    for q in a:
        assert [p for p, _ in a[q]] == [p for p, _ in b[q]], q
        for (_, s1), (_, s2) in zip(a[q], b[q], strict=True):
            assert abs(s1 - s2) <= 1e-6, (q, s1, s2)


def test_first_retrieve_builds_and_finds(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    result = retrieve(
        wiki,
        "how do I promote a release to production",
        config=cfg(wiki.root),
        notify=lambda m: None,
    )
    assert result.mode == "hybrid"
    assert result.paths()[0] == "skill/release.md"
    section = result.results[0].sections[0]
    lines = (wiki.root / "skill/release.md").read_text().splitlines()
    assert section.text == "\n".join(lines[section.start_line - 1 : section.end_line]).strip()


def test_edit_is_seen_by_the_next_retrieve(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    c = cfg(wiki.root)
    assert (
        "memory/dashboard.md" not in retrieve(wiki, "kafka topics", mode="bm25", config=c).paths()
    )
    write(wiki.root, "memory/dashboard.md", "Dashboard", "## Data\nKafka topics feed the charts.\n")
    assert retrieve(wiki, "kafka topics", mode="bm25", config=c).paths() == ["memory/dashboard.md"]
    (wiki.root / "memory/dashboard.md").unlink()
    assert retrieve(wiki, "kafka topics", mode="bm25", config=c).paths() == []


OPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "edit", "rename", "delete"]),
        st.sampled_from(["a", "b", "c", "d"]),
        st.sampled_from(["a", "b", "c", "d"]),
        st.lists(
            st.sampled_from(["release", "billing", "staging", "kafka", "charts", "deploy", "go"]),
            min_size=1,
            max_size=30,
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_incremental_updates_equal_a_rebuild(tmp_path_factory, ops):
    base = tmp_path_factory.mktemp("prop")
    wiki = make_wiki(base / "w", files={})
    index = Index(wiki, cfg(wiki.root), notify=lambda m: None)
    for op, name, other, words in ops:
        path = wiki.root / "memory" / f"{name}.md"
        if op in ("create", "edit"):
            body = (
                "## Notes\n"
                + " ".join(words)
                + "\n"
                + ("## More\n" + " ".join(reversed(words)) + "\n") * (len(words) % 2)
            )
            write(wiki.root, f"memory/{name}.md", f"About {name}", body)
        elif op == "rename" and path.exists() and name != other:
            text = path.read_text().replace(f"name: {name}", f"name: {other}")
            (wiki.root / "memory" / f"{other}.md").write_text(text)
            path.unlink()
        elif op == "delete" and path.exists():
            path.unlink()
        index.update(need_vectors=len(words) % 3 != 0)  # some steps leave vectors to fill in later
    rows, vectors, hits, _ = snapshot_facts(wiki)
    clone = base / "rebuilt"
    shutil.copytree(wiki.root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    rows2, vectors2, hits2, _ = snapshot_facts(Wiki(clone))
    assert {k: (r.sha, r.heading) for k, r in rows.items()} == {
        k: (r.sha, r.heading) for k, r in rows2.items()
    }
    for q in hits:
        assert_same_scores(hits[q], hits2[q])
    for key, vec in vectors.items():
        np.testing.assert_allclose(vec, vectors2[key], atol=1e-5)
    queries = ["billing deploy", "release staging go", "kafka charts", "about a"]
    assert_same_answers(answers(wiki, queries), answers(Wiki(clone), queries))


LARGE_WORDS = (
    "release billing staging kafka charts deploy go ledger invoice webhook postgres "
    "migration cluster rollback alert backup restore queue worker cron lint merge"
).split()


@pytest.fixture(scope="module")
def large_wiki(tmp_path_factory):
    """A BM25-only wiki of 1,010 files, 2 items each: above the size optimised on every update."""
    import random

    rng = random.Random(11)
    root = tmp_path_factory.mktemp("large") / "w"
    wiki, _ = Wiki.init(root)
    for n in range(1010):
        words = [rng.choice(LARGE_WORDS) for _ in range(12)]
        body = f"## One\n{' '.join(words[:6])}\n\n## Two\n{' '.join(words[6:])}\n"
        write(root, f"memory/f{n:04d}.md", f"note {n} {words[0]}", body)
    index = Index(wiki, cfg(root, MEMWIKI_EMBED="none"), notify=lambda m: None)
    state = index.update().state
    assert len(state.rows) > bm25.OPTIMIZE_BELOW
    return root


LARGE_OPS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "delete", "create"]),
        st.integers(0, 1099),
        st.lists(st.sampled_from(LARGE_WORDS), min_size=1, max_size=12),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=LARGE_OPS)
def test_incremental_equals_rebuild_exactly_above_the_optimise_size(
    large_wiki, tmp_path_factory, ops
):
    """Whoosh keeps deleted documents in its statistics; scores must not depend on that."""
    base = tmp_path_factory.mktemp("large-prop")
    root = base / "w"
    shutil.copytree(large_wiki, root)
    wiki = Wiki(root)
    index = Index(wiki, cfg(root, MEMWIKI_EMBED="none"), notify=lambda m: None)
    apply_ops(index, root, ops)
    clone = base / "rebuilt"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    queries = ["billing deploy", "kafka rollback alert", "changed queue", "note 17 cron"]
    a = answers(wiki, queries, mode="bm25", MEMWIKI_EMBED="none")
    b = answers(Wiki(clone), queries, mode="bm25", MEMWIKI_EMBED="none")
    assert_same_answers(a, b)
    snap_a = Index(wiki, cfg(root, MEMWIKI_EMBED="none")).snapshot(need_vectors=False)
    snap_b = Index(Wiki(clone), cfg(clone, MEMWIKI_EMBED="none")).snapshot(need_vectors=False)
    for q in queries:
        assert_same_scores(
            dict(bm25.search(snap_a.bm25_dir, q, 100)), dict(bm25.search(snap_b.bm25_dir, q, 100))
        )


def test_unchanged_text_is_never_embedded_twice(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    index = Index(wiki, cfg(wiki.root), notify=lambda m: None)
    assert index.update().embedded == 3 + 1  # billing has two sections
    release = wiki.root / "skill/release.md"
    original = release.read_text()
    release.write_text(original.replace("Tag v2.", "Tag v3."))
    assert index.update().embedded == 1
    release.write_text(original)  # back to known text: comes from the cache
    assert index.update().embedded == 0
    shutil.rmtree(wiki.sidecar / "index" / "cache")
    release.rename(
        wiki.root / "memory/release.md"
    )  # moved to another track: same text, same vector
    report = index.update()
    assert report.embedded == 0 and report.indexed == ["memory/release.md"]


@pytest.mark.parametrize(
    "damage",
    ["truncate-matrix", "garbage-manifest", "missing-segment", "model-change", "corrupt-segment"],
)
def test_damaged_index_is_rebuilt_with_one_line(tmp_path, damage):
    wiki = make_wiki(tmp_path / "w")
    before = retrieve(wiki, "release staging", config=cfg(wiki.root), notify=lambda m: None).paths()
    idx = wiki.sidecar / "index"
    if damage == "truncate-matrix":
        matrix = next(idx.glob("vectors-*.npy"))
        matrix.write_bytes(matrix.read_bytes()[:100])
    elif damage == "garbage-manifest":
        (idx / "state.pkl").write_bytes(b"\x00garbage")
    elif damage == "missing-segment":
        for seg in idx.glob("bm25-*/*.seg"):
            seg.unlink()
        for toc in idx.glob("bm25-*/*.toc"):
            toc.unlink()
    elif damage == "corrupt-segment":  # the table of contents still names it
        for seg in idx.glob("bm25-*/*.seg"):
            seg.write_bytes(b"\x00" * 64)
    messages: list[str] = []
    c = cfg(wiki.root)
    if damage == "model-change":
        state = (idx / "state.pkl").read_bytes()
        from memwiki.index import manifest as stmod

        s = stmod.load(idx / "state.pkl")
        s.embedder = {"provider": "onnx", "model": "another-model", "dim": 384}
        stmod.save(idx / "state.pkl", s)
        assert state != (idx / "state.pkl").read_bytes()
    after = retrieve(wiki, "release staging", config=c, notify=messages.append)
    assert after.paths() == before
    if damage in ("garbage-manifest", "missing-segment", "corrupt-segment"):
        assert len(messages) == 1 and "rebuilding" in messages[0]
    snap = Index(wiki, c).snapshot()
    assert snap.state.embedder["model"] == "all-MiniLM-L6-v2-int8"
    assert snap.matrix().shape == (len(snap.state.rows), 384)


def test_bad_files_are_reported_and_the_rest_indexed(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    (wiki.root / "memory/broken.md").write_text(
        "---\nname: broken\ndescription: [unclosed\n---\nbody\n"
    )
    (wiki.root / "memory/empty.md").write_bytes(b"")
    (wiki.root / "memory/binary.md").write_bytes(b"\x89PNG\x00\x01\x02" * 100)
    (wiki.root / "memory/latin1.md").write_bytes(
        "---\nname: latin1\ndescription: caf\xe9\n---\n".encode("latin-1")
    )
    big = "---\nname: big\ndescription: big file\n---\n" + (
        "lorem ipsum dolor sit amet\n" * (MAX_FILE_BYTES // 27 + 1)
    )
    (wiki.root / "memory/big.md").write_text(big)
    assert (wiki.root / "memory/big.md").stat().st_size > MAX_FILE_BYTES
    messages: list[str] = []
    result = retrieve(
        wiki, "billing deploy", mode="bm25", config=cfg(wiki.root), notify=messages.append
    )
    assert "memory/billing.md" in result.paths()
    reported = "\n".join(messages)
    for name in ("broken", "empty", "binary", "latin1", "big"):
        assert f"memory/{name}.md" in reported
    assert len(messages) == 5
    assert result.index["files"] == 3
    # reported once, not on every retrieve
    messages.clear()
    retrieve(wiki, "billing", mode="bm25", config=cfg(wiki.root), notify=messages.append)
    assert messages == []


def test_dot_folders_and_outside_symlinks_are_not_indexed(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    write(wiki.root, ".obsidian/plugins/x.md", "obsidian settings", "zebra\n")
    write(wiki.root, "memory/.trash/old.md", "trash", "zebra\n")
    outside = tmp_path / "outside"
    write(outside, "memory/secret.md", "outside", "zebra\n")
    (wiki.root / "memory/link.md").symlink_to(outside / "memory/secret.md")
    result = retrieve(wiki, "zebra", mode="bm25", config=cfg(wiki.root), notify=lambda m: None)
    assert result.paths() == []


def test_deleting_the_sidecar_loses_nothing(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    c = cfg(wiki.root)
    first = retrieve(wiki, "clickhouse usage charts", config=c, notify=lambda m: None).to_dict()
    shutil.rmtree(wiki.sidecar)
    again = retrieve(wiki, "clickhouse usage charts", config=c, notify=lambda m: None).to_dict()
    assert [r["path"] for r in again["results"]] == [r["path"] for r in first["results"]]
    assert again["results"][0]["sections"] == first["results"][0]["sections"]


def test_git_clone_retrieves_the_same(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    wiki.commit("add files")
    original = retrieve(wiki, "promote production", config=cfg(wiki.root), notify=lambda m: None)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(wiki.root), str(clone)], check=True)
    assert not (clone / ".memwiki").exists()
    cloned = retrieve(Wiki(clone), "promote production", config=cfg(clone), notify=lambda m: None)
    assert cloned.paths() == original.paths()
    assert [s.to_dict() for r in cloned.results for s in r.sections] == [
        s.to_dict() for r in original.results for s in r.sections
    ]


def test_bm25_mode_never_imports_onnxruntime(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    code = (
        "import sys\n"
        "from memwiki.cli import main\n"
        f"rc = main(['--wiki', {str(wiki.root)!r}, 'retrieve', 'billing', '--mode', 'bm25', '--files'])\n"
        "assert rc == 0, rc\n"
        "assert 'onnxruntime' not in sys.modules, 'onnxruntime was imported'\n"
        "assert 'tokenizers' not in sys.modules\n"
    )
    # twice: once building the index from nothing, once on a fresh index
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert "memory/billing.md" in out.stdout


def test_embed_none_falls_back_to_bm25(tmp_path):
    wiki = make_wiki(tmp_path / "w")
    c = cfg(wiki.root, MEMWIKI_EMBED="none")
    result = retrieve(wiki, "billing deploy", config=c, notify=lambda m: None)
    assert result.mode == "bm25" and "BM25 only" in result.index["note"]
    assert result.paths()[0] == "memory/billing.md"
