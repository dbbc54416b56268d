"""BM25 feedback from the fused first pass (index/feedback.py): what it adds, and exactness."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_index import apply_ops

from memwiki.config import load
from memwiki.index import bm25, feedback, fusion, search
from memwiki.index.indexer import Index
from memwiki.wiki import Wiki

FILLER = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()


def write(root: Path, rel: str, description: str, body: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {path.stem}\ndescription: {description}\n---\n{body}", encoding="utf-8"
    )


def cfg(root: Path):
    return load({"wiki": str(root)}, environ={"HOME": str(root.parent), "MEMWIKI_EMBED": "none"})


def snapshot(root: Path):
    return Index(Wiki(root), cfg(root), notify=lambda m: None).snapshot(need_vectors=False)


@pytest.fixture
def linked_wiki(tmp_path) -> Path:
    """A release note naming the machine it runs on, the machine's own note (no word of the
    question), one more note on the yubikey, and unrelated notes to give words their rarity."""
    wiki, _ = Wiki.init(tmp_path / "w")
    root = wiki.root
    write(
        root,
        "skill/release-loomgrid.md",
        "How to publish a new loomgrid version",
        "## Steps\nBuild the wheel on kestrel, sign it with the yubikey, upload it.\n",
    )
    write(
        root,
        "memory/machines.md",
        "The machines at home",
        "## Kestrel\nkestrel is the desk workstation; the yubikey stays plugged into it.\n",
    )
    write(root, "memory/keys.md", "Hardware keys", "## Yubikey\nThe yubikey PIN is in the safe.\n")
    for n in range(30):
        words = " ".join(FILLER[(n + j) % len(FILLER)] for j in range(6))
        write(root, f"memory/note{n:02d}.md", f"Note {FILLER[n % len(FILLER)]}", f"## N\n{words}\n")
    return root


def rows_of(snap, path: str) -> list[int]:
    return [i for i, r in enumerate(snap.state.rows) if r.path == path]


def test_the_words_come_from_the_best_item_of_the_ranking_given(linked_wiki):
    # A project-scoped retrieve passes its scoped scores: the best item in scope chooses
    # the words, even when another project's item is first before scoping.
    snap = snapshot(linked_wiki)
    try:
        release = rows_of(snap, "skill/release-loomgrid.md")[0]
        other = rows_of(snap, "memory/note00.md")[0]
        fused = {other: 1.0, release: 0.9}
        query = "how do I publish a new loomgrid version"
        unscoped = feedback.expand(snap, fused, query, None, 100)
        scoped = feedback.expand(snap, fused, query, None, 100, ranking={other: 0.5, release: 0.9})
        paths = {snap.state.rows[i].path for i in scoped}
        assert "memory/machines.md" in paths  # the release note's words: kestrel, yubikey
        assert "memory/machines.md" not in {snap.state.rows[i].path for i in unscoped}
        assert scoped[other] == fused[other]  # hits are added to fused, not to the ranking
    finally:
        snap.close()


def test_feedback_finds_the_file_that_shares_the_best_items_words(linked_wiki):
    snap = snapshot(linked_wiki)
    try:
        release = rows_of(snap, "skill/release-loomgrid.md")[0]
        query = "how do I publish a new loomgrid version"
        fused = {release: 1.0}
        out = feedback.expand(snap, fused, query, None, 100)
        paths = {snap.state.rows[i].path: s for i, s in out.items()}
        # the machine note shares "kestrel" and "yubikey" with the release note, not the query
        assert paths["memory/machines.md"] > 0
        assert paths["memory/keys.md"] > 0
        assert paths["memory/machines.md"] > paths["memory/keys.md"]
        assert not any(p.startswith("memory/note") for p in paths)
        assert out[release] > fused[release]  # the feedback item matches its own words too
        assert feedback.expand(snap, fused, query, None, 100, weight=0.0) == fused
    finally:
        snap.close()


def test_expansion_terms_leave_out_query_words_unique_and_common_words(linked_wiki):
    snap = snapshot(linked_wiki)
    try:
        reader = snap.searcher().reader()
        kestrel, yubikey, loomgrid, unique, note = bm25.query_terms(
            "kestrel yubikey loomgrid onlyhere note"
        )
        counts = {kestrel: 2, yubikey: 1, loomgrid: 3, unique: 5, note: 9}
        terms = feedback.expansion_terms(reader, counts, [loomgrid])
        # "loomgrid" is a query word, "onlyhere" is in no document, "note" is in every
        # filler note (more than MAX_SHARE of the documents)
        assert terms == [kestrel, yubikey]
        assert feedback.expansion_terms(reader, counts, [loomgrid], n=1) == [kestrel]
        assert feedback.expansion_terms(reader, {}, []) == []
    finally:
        snap.close()


def test_top_item_ties_are_broken_by_item_id(linked_wiki):
    snap = snapshot(linked_wiki)
    try:
        rows = snap.state.rows
        a, b = rows_of(snap, "memory/machines.md")[0], rows_of(snap, "memory/keys.md")[0]
        assert feedback.top_item(rows, {a: 0.5, b: 0.5}) == min((a, b), key=lambda i: rows[i].id)
        assert feedback.top_item(rows, {a: 0.5, b: 0.5 + 1e-12}) == min(
            (a, b), key=lambda i: rows[i].id
        )
        assert feedback.top_item(rows, {a: 0.4, b: 0.5}) == b
        assert feedback.top_item(rows, {}) is None
    finally:
        snap.close()


def test_feedback_only_joins_hybrid_score_fusion(linked_wiki):
    snap = snapshot(linked_wiki)
    try:
        release = rows_of(snap, "skill/release-loomgrid.md")[0]
        fused = {release: 1.0}
        args = (snap, fused, "publish loomgrid", None, 100)
        assert search.with_feedback(*args, [(release, 2.0)], [], "score") is fused
        assert search.with_feedback(*args, [], [(release, 0.6)], "score") is fused
        assert search.with_feedback(*args, [(release, 2.0)], [(release, 0.6)], "rrf") is fused
        assert search.with_feedback(*args, [(release, 2.0)], [(release, 0.6)], "score") != fused
    finally:
        snap.close()


def test_feedback_reads_nothing_it_cannot_open(linked_wiki):
    """A feedback item whose file vanished behind the index's back adds nothing, fails nothing."""
    snap = snapshot(linked_wiki)
    try:
        release = rows_of(snap, "skill/release-loomgrid.md")[0]
        (linked_wiki / "skill/release-loomgrid.md").unlink()
        # its name and description are still in the manifest: only those words are used
        out = feedback.expand(snap, {release: 1.0}, "zzz", None, 100)
        assert all(s >= 0 for s in out.values())
    finally:
        snap.close()


WORDS = (
    "release billing staging kafka charts deploy go ledger invoice webhook postgres "
    "migration cluster rollback alert backup restore queue worker cron lint merge"
).split()


@pytest.fixture(scope="module")
def large_wiki(tmp_path_factory):
    """A BM25-only wiki above the size optimised on every update (edits keep deleted documents)."""
    rng = random.Random(5)
    root = tmp_path_factory.mktemp("prf-large") / "w"
    Wiki.init(root)
    for n in range(1010):
        words = [rng.choice(WORDS) for _ in range(12)] + [f"w{n % 97}", f"v{n % 13}"]
        body = f"## One\n{' '.join(words[:7])}\n\n## Two\n{' '.join(words[7:])}\n"
        write(root, f"memory/f{n:04d}.md", f"note {n} {words[0]}", body)
    state = Index(Wiki(root), cfg(root), notify=lambda m: None).update().state
    assert len(state.rows) > bm25.OPTIMIZE_BELOW
    return root


def feedback_answers(root: Path, queries) -> dict:
    """Per query: the expansion terms and every expanded item's score, by item id."""
    snap = snapshot(root)
    try:
        rows = snap.state.rows
        reader = snap.searcher().reader()
        out = {}
        for q in queries:
            hits = [(rows.find(h), s) for h, s in bm25.search(snap.bm25_dir, q, 100)]
            fused = fusion.score_fusion(hits, [])
            best = feedback.top_item(rows, fused)
            terms = feedback.expansion_terms(
                reader, feedback.item_terms(snap, rows[best]), bm25.query_terms(q)
            )
            scores = feedback.expand(snap, fused, q, None, 100)
            out[q] = (terms, {rows[i].id: s for i, s in scores.items()})
        leaves = [leaf for leaf, _ in bm25.leaf_readers(reader)]
        gone = [leaf.deleted_docs_set if leaf.has_deletions() else frozenset() for leaf in leaves]
        out["df"] = {
            t: feedback.live_df(leaves, gone, "body", t, float("inf"))
            for t in bm25.query_terms(" ".join(WORDS + ["w3", "v5", "w11", "changed"]))
        }
        return out
    finally:
        snap.close()


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["edit", "delete", "create"]),
            st.integers(0, 1099),
            st.lists(st.sampled_from(WORDS + ["w3", "v5", "w11"]), min_size=1, max_size=10),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_feedback_after_edits_equals_a_rebuild(large_wiki, tmp_path_factory, ops):
    """Live document counts and the second search ignore Whoosh's deleted documents."""
    base = tmp_path_factory.mktemp("prf-prop")
    root = base / "w"
    shutil.copytree(large_wiki, root)
    index = Index(Wiki(root), cfg(root), notify=lambda m: None)
    apply_ops(index, root, ops)
    clone = base / "rebuilt"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    queries = ["billing deploy", "kafka rollback w3", "changed queue", "note 17 cron v5"]
    a, b = feedback_answers(root, queries), feedback_answers(clone, queries)
    assert a["df"] == b["df"]
    for q in queries:
        assert a[q][0] == b[q][0], q
        assert set(a[q][1]) == set(b[q][1]), q
        for key, score in a[q][1].items():
            assert abs(score - b[q][1][key]) <= 1e-6, (q, key)


def test_live_counts_without_the_raw_posting_reader(large_wiki, tmp_path, monkeypatch):
    """If Whoosh's posting layout changes, the counts come from its public postings, equal."""
    from memwiki.index import bm25_postings

    root = tmp_path / "w"
    shutil.copytree(large_wiki, root)
    for n in (3, 4, 50, 51, 52):
        (root / f"memory/f{n:04d}.md").unlink()
    state = Index(Wiki(root), cfg(root), notify=lambda m: None).update(need_vectors=False).state
    assert state.bm25_deleted > 0
    snap = snapshot(root)
    try:
        leaves = [leaf for leaf, _ in bm25.leaf_readers(snap.searcher().reader())]
        gone = [leaf.deleted_docs_set if leaf.has_deletions() else frozenset() for leaf in leaves]
        terms = bm25.query_terms(" ".join(WORDS + ["w3", "v5", "w50"]))
        exact = {t: feedback.live_df(leaves, gone, "body", t, float("inf")) for t in terms}

        def unreadable(*args):
            raise bm25_postings.Unreadable("test")

        monkeypatch.setattr(bm25_postings, "blocks", unreadable)
        assert {t: feedback.live_df(leaves, gone, "body", t, float("inf")) for t in terms} == exact
    finally:
        snap.close()
    clone = tmp_path / "rebuilt"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    rebuilt = snapshot(clone)
    try:
        reader = rebuilt.searcher().reader()
        assert {t: reader.doc_frequency("body", t) for t in terms} == exact
    finally:
        rebuilt.close()


def test_feedback_weighs_at_most_max_terms_words_of_a_huge_item(tmp_path, monkeypatch):
    """A note of one 5 MB line (a pasted JSON) is one item of 100,000 distinct words; their
    document frequencies took 3 s of every query it answered (found by the vault audit).
    The most frequent MAX_TERMS are weighed; the choice is the same on every device."""
    wiki, _ = Wiki.init(tmp_path / "w")
    words = [f"w{n:05d}" for n in range(feedback.MAX_TERMS * 3)]
    line = " ".join(words + words[:50])  # 50 words twice: the most frequent
    write(wiki.root, "memory/dump.md", "a pasted json dump", line + "\n")
    write(wiki.root, "memory/other.md", "another note", "w00001 w00002 w00003\n")
    snap = snapshot(wiki.root)
    looked: list[str] = []
    real = feedback.live_df

    def counting(leaves, gone, field, term, most):
        looked.append(term)
        return real(leaves, gone, field, term, most)

    monkeypatch.setattr(feedback, "live_df", counting)
    try:
        dump = rows_of(snap, "memory/dump.md")[0]
        counts = feedback.item_terms(snap, snap.state.rows[dump])
        assert len(counts) > feedback.MAX_TERMS
        terms = feedback.expansion_terms(snap.searcher().reader(), counts, [], 10)
        assert len(looked) <= feedback.MAX_TERMS * len(feedback.DF_FIELDS)
        assert set(words[:50]) <= set(looked)  # the most frequent ones are weighed
        assert terms == feedback.expansion_terms(snap.searcher().reader(), counts, [], 10)
    finally:
        snap.close()
