"""BM25 segments after edits (index/bm25_update.py): a reader's inline update does not merge,
the segment count stays bounded, a reindex merges, and scores never depend on the layout."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_index import LARGE_WORDS, answers, assert_same_answers, assert_same_scores, cfg, write
from test_index import large_wiki as large_wiki  # noqa: F401 - the fixture, shared

from memwiki.index import bm25, bm25_update
from memwiki.index.indexer import Index
from memwiki.wiki import Wiki

QUERIES = ["billing deploy", "kafka rollback alert", "changed queue", "note 17 cron"]


def index_of(root: Path) -> Index:
    return Index(Wiki(root), cfg(root, MEMWIKI_EMBED="none"), notify=lambda m: None)


def read_inline(root: Path) -> None:
    """What a retrieve does first: bring the index up to date through the reader's path."""
    index_of(root).snapshot(need_vectors=False).close()


def layout(root: Path) -> tuple[int, int, int]:
    """(segments, deleted documents Whoosh holds, the state's count of them), as committed."""
    state, problem = index_of(root).committed_state()
    assert problem is None and state is not None
    searcher = bm25.open_searcher(root / ".memwiki/index" / state.bm25_dir, state.whoosh_generation)
    try:
        reader = searcher.reader()
        leaves = bm25.leaf_readers(reader)
        deleted = reader.doc_count_all() - reader.doc_count()
        return len(leaves), deleted, state.bm25_deleted
    finally:
        searcher.close()


def edit(root: Path, n: int, words: list[str]) -> None:
    write(root, f"memory/f{n:04d}.md", f"changed {n}", "## One\n" + " ".join(words) + "\n")


def copy_of(large_wiki: Path, base: Path) -> Path:  # noqa: F811 - the fixture's value
    root = base / "w"
    shutil.copytree(large_wiki, root)
    return root


def same_as_rebuild(root: Path, base: Path) -> None:
    """Ranks and scores to 1e-6, files and raw BM25 items, equal those of a fresh build."""
    clone = base / "rebuilt"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    a = answers(Wiki(root), QUERIES, mode="bm25", MEMWIKI_EMBED="none")
    b = answers(Wiki(clone), QUERIES, mode="bm25", MEMWIKI_EMBED="none")
    assert_same_answers(a, b)
    snap_a = index_of(root).snapshot(need_vectors=False)
    snap_b = index_of(clone).snapshot(need_vectors=False)
    for q in QUERIES:
        assert_same_scores(
            dict(bm25.search(snap_a.bm25_dir, q, 100)), dict(bm25.search(snap_b.bm25_dir, q, 100))
        )
    snap_a.close()
    snap_b.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "edit", "delete", "create"]),
        st.integers(0, 1099),
        st.lists(st.sampled_from(LARGE_WORDS), min_size=1, max_size=12),
    ),
    min_size=4,
    max_size=16,
)


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_inline_updates_stay_bounded_and_score_as_a_rebuild(
    large_wiki,  # noqa: F811
    tmp_path_factory,
    monkeypatch,
    ops,
):
    """Many unmerged segments (and merges at the bound) rank and score exactly as a rebuild."""
    monkeypatch.setattr(bm25_update, "MAX_SEGMENTS", 4)
    base = tmp_path_factory.mktemp("inline")
    root = copy_of(large_wiki, base)
    most = 0
    for op, n, words in ops:
        if op == "delete":
            (root / f"memory/f{n:04d}.md").unlink(missing_ok=True)
        else:
            edit(root, n, words)
        read_inline(root)
        segments, deleted, counted = layout(root)
        assert segments <= 4
        assert counted == deleted  # the optimise decision counts what Whoosh really holds
        most = max(most, segments)
    assert most >= 2 or len(ops) < 2
    same_as_rebuild(root, base)


def test_edits_of_distinct_files_leave_segments_until_a_reindex_merges_them(
    large_wiki,  # noqa: F811
    tmp_path,
    run_memwiki,
):
    root = copy_of(large_wiki, tmp_path)
    for n in range(6):
        edit(root, 100 + n, ["webhook", "rotation", "secret"])
        read_inline(root)
        assert layout(root)[0] == n + 2  # the first build's segment and one per edit
    before = answers(Wiki(root), QUERIES + ["webhook rotation"], mode="bm25", MEMWIKI_EMBED="none")
    done = run_memwiki("--wiki", str(root), "reindex", env={"MEMWIKI_EMBED": "none"})
    assert done.returncode == 0, done.stderr
    segments, deleted, counted = layout(root)
    assert segments == 2  # the large first segment, and one holding every edit
    assert counted == deleted
    after = answers(Wiki(root), QUERIES + ["webhook rotation"], mode="bm25", MEMWIKI_EMBED="none")
    assert_same_answers(before, after)
    state = index_of(root).committed_state()[0]
    assert index_of(root).update(need_vectors=False).state.whoosh_generation == (
        state.whoosh_generation
    )  # nothing left to merge: a second reindex commits nothing
    same_as_rebuild(root, tmp_path)


def test_inline_updates_merge_down_when_the_bound_is_reached(
    large_wiki,  # noqa: F811
    tmp_path,
):
    root = copy_of(large_wiki, tmp_path)
    counts = []
    for n in range(bm25_update.MAX_SEGMENTS + 3):
        edit(root, 200 + n, ["ledger", "invoice", str(n)])
        read_inline(root)
        counts.append(layout(root)[0])
    assert max(counts) <= bm25_update.MAX_SEGMENTS
    assert counts[bm25_update.MAX_SEGMENTS - 2] == bm25_update.MAX_SEGMENTS
    assert counts[bm25_update.MAX_SEGMENTS - 1] <= bm25_update.MAX_SEGMENTS // 2 + 1
    same_as_rebuild(root, tmp_path)


def test_a_file_edited_again_and_again_leaves_no_dead_segments(
    large_wiki,  # noqa: F811
    tmp_path,
):
    root = copy_of(large_wiki, tmp_path)
    for i in range(8):
        edit(root, 7, ["webhook", "secret", "rotation", str(i)])
        read_inline(root)
        segments, deleted, counted = layout(root)
        # the first segment with the file's old items deleted, and the latest edit's
        assert segments == 2
        assert counted == deleted == 2
    same_as_rebuild(root, tmp_path)


def test_many_deletions_still_rewrite_the_index_whole(large_wiki, tmp_path):  # noqa: F811
    root = copy_of(large_wiki, tmp_path)
    state = index_of(root).committed_state()[0]
    total = len(state.rows)
    optimised = False
    for step in range(14):  # 20 files (40 items) a step: past 10 % within the loop
        for n in range(20 * step, 20 * step + 20):
            (root / f"memory/f{n:04d}.md").unlink()
        read_inline(root)
        segments, deleted, counted = layout(root)
        assert counted == deleted
        if deleted == 0 and step:
            optimised = True
            assert segments == 1
            break
        assert deleted <= total * bm25.MAX_DELETED_SHARE + 40
    assert optimised
    same_as_rebuild(root, tmp_path)
