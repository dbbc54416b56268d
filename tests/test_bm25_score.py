"""BM25 scored from the raw posting lists equals Whoosh's own scoring, bit for bit.

bm25.search_hits reads Whoosh's posting blocks itself (bm25_score) instead of letting
Whoosh's matchers score one posting at a time. Whatever the segments and deletions, the
result must be what bm25.search_hits_whoosh (Whoosh's ArrayUnionMatcher with the exact
live statistics) gives: the same items in the same order, the same scores, the same
coverage; and an index after edits must still answer as a rebuild of the same items.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki.index import bm25, bm25_postings, bm25_score, bm25_update
from memwiki.index.chunker import Item

WORDS = (
    "release billing staging kafka charts deploy go ledger webhook rollback secret rotate".split()
)
TRACKS = ("memory", "skill", "project")


def item(path: str, n: int, words: list[str]) -> Item:
    """An item of file `path` whose fields take their words from a rotation of `words`."""
    w = words or ["empty"]

    def pick(k: int, size: int) -> str:
        return " ".join(w[(k + j) % len(w)] for j in range(size))

    return Item(
        path=path,
        track=path.split("/", 1)[0],
        name=Path(path).stem,
        description=pick(1, 1 + n % 3),
        tags=tuple(pick(2, n % 2).split()),
        heading=pick(3, n % 4),
        start_line=1 + 10 * n,
        end_line=9 + 10 * n,
        text=pick(n, len(w) * (1 + n % 3)),
    )


def file_items(track: int, name: int, words: list[str], sections: int) -> list[Item]:
    path = f"{TRACKS[track % 3]}/f-{name}.md"
    return [item(path, n, words[n:] + words[:n]) for n in range(sections)]


FILES = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.integers(0, 40),
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=12),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=30,
)
QUERIES = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS + ["absent", "the", "how"]), max_size=5),
        st.sampled_from([None, "memory", "skill", "nosuchtrack"]),
    ),
    min_size=1,
    max_size=6,
)


def build(directory: Path, batches: list[list[tuple]]) -> dict[str, list[Item]]:
    """An index made by one create and then one unoptimised update per batch; its files."""
    files: dict[str, list[Item]] = {}
    for k, batch in enumerate(batches):
        removed, added = [], []
        last = {f"{TRACKS[t % 3]}/f-{name}.md": (t, name, w, n) for t, name, w, n in batch}
        for path, (track, name, words, sections) in last.items():
            if path in files:
                removed.append(path)
                del files[path]
            if words or k == 0:  # an empty word list deletes the file
                files[path] = file_items(track, name, words, sections)
                added.extend(files[path])
        if k == 0:
            bm25.create(directory, [i for items in files.values() for i in items])
        else:
            bm25_update.update(directory, removed, added, optimize=False)
    return files


def compare(directory: Path, queries, limit: int = 7) -> None:
    searcher = bm25.open_searcher(directory)
    try:
        reader = searcher.reader()
        for words, track in queries:
            q = " ".join(words)
            terms = bm25.query_terms(q)
            ref = (
                bm25.search_hits_whoosh(reader, terms, limit, track) if terms else bm25.Hits([], 0)
            )
            got = bm25.search_hits(directory, q, limit, track, searcher=searcher)
            assert [i for i, _ in got.items] == [i for i, _ in ref.items], (q, track)
            assert [s for _, s in got.items] == [s for _, s in ref.items], (q, track)
            assert got.coverage == ref.coverage
            if terms and reader.doc_count():
                # the raw path itself (in Python and with numpy), not a silent fall back
                for vectorised in (False, True):
                    assert bm25_score.search(reader, terms, limit, track, vectorised) == got
    finally:
        searcher.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(FILES, min_size=1, max_size=4), queries=QUERIES)
def test_raw_scoring_equals_whoosh_scoring(tmp_path_factory, batches, queries):
    directory = tmp_path_factory.mktemp("ix") / "bm25"
    build(directory, batches)
    compare(directory, queries)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(FILES, min_size=2, max_size=4), queries=QUERIES)
def test_edited_index_scores_as_a_rebuild(tmp_path_factory, batches, queries):
    root = tmp_path_factory.mktemp("ix")
    files = build(root / "edited", batches)
    bm25.create(root / "rebuilt", [i for items in files.values() for i in items])
    for words, track in queries:
        q = " ".join(words)
        edited = bm25.search_hits(root / "edited", q, 7, track)
        rebuilt = bm25.search_hits(root / "rebuilt", q, 7, track)
        assert [i for i, _ in edited.items] == [i for i, _ in rebuilt.items], q
        for (_, a), (_, b) in zip(edited.items, rebuilt.items, strict=True):
            assert abs(a - b) <= 1e-9
        assert abs(edited.coverage - rebuilt.coverage) <= 1e-9


def posting_bytes(leaf, field: str, term: str) -> bytes:
    """The raw bytes of a term's posting list in one segment, as Whoosh stored them."""
    offset, length = leaf.term_info(field, term).extent()
    length = length[0] if isinstance(length, tuple) else length
    return leaf._terms._postfile.get(offset, length)


def raw_matcher_postings(leaf, field: str, text) -> tuple[list[int], list[float]]:
    """A term's postings as Whoosh's own block matcher reads them, deleted ones included."""
    m = leaf._terms.matcher(field, text, leaf.schema[field].format)
    ids, weights = [], []
    while m.is_active():
        ids.append(m.id())
        weights.append(m.weight())
        m.next()
    return ids, weights


def test_postings_read_as_whoosh_reads_them(tmp_path):
    # 375 items: every common word has several blocks of 128 postings; rare words have
    # lists of one to three postings (pickled without a MARK), weights of every shape
    files = [(n % 2, n, WORDS[n % 12 :] + WORDS[: n % 5], 1 + n % 4) for n in range(150)]
    rare = [(1, 100 + n, ["zephyr"] * (n + 1), 1) for n in range(3)]
    directory = tmp_path / "bm25"
    build(directory, [files + rare, files[:20], rare[:1]])
    searcher = bm25.open_searcher(directory)
    try:
        longest = 0
        leaves = [leaf for leaf, _ in bm25.leaf_readers(searcher.reader())]
        assert len(leaves) > 1 and any(leaf.has_deletions() for leaf in leaves)
        for leaf in leaves:
            for field, text in leaf.all_terms():
                if field == "id":
                    continue
                got = bm25_postings.postings(leaf, field, text.decode("utf-8"))
                assert got == raw_matcher_postings(leaf, field, text), (field, text)
                longest = max(longest, len(got[0]))
        assert longest > 2 * 128
    finally:
        searcher.close()
    compare(directory, [(["webhook", "secret", "rotate"], None), (["go", "zephyr"], "skill")])


def test_ties_at_the_cut_are_broken_by_item_id(tmp_path):
    # 60 identical items in three segments: every score ties, whatever the document numbers
    same = [(0, n, ["webhook", "secret"], 1) for n in range(60)]
    directory = tmp_path / "bm25"
    build(directory, [same[::3], same[1::3], same[2::3]])
    hits = bm25.search_hits(directory, "webhook", 5)
    assert [i for i, _ in hits.items] == sorted(i for i, _ in hits.items)
    assert hits.items[0][0] == "memory/f-0.md:1-9"
    assert len({s for _, s in hits.items}) == 1
    # limit 2: each segment's 20 ties are more than it keeps (2 + TIE_MARGIN), so it is read whole
    compare(directory, [(["webhook"], None), (["webhook", "secret"], "memory")], limit=2)
    compare(directory, [(["webhook"], None), (["webhook", "secret"], "memory")])


def test_empty_queries_absent_terms_and_an_all_deleted_index(tmp_path):
    directory = tmp_path / "bm25"
    build(directory, [[(0, 1, ["kafka", "deploy"], 2)]])
    assert bm25.search_hits(directory, "", 10) == bm25.Hits([], 0.0)
    assert bm25.search_hits(directory, "the how of", 10) == bm25.Hits([], 0.0)
    assert bm25.search_hits(directory, "absentword", 10) == bm25.Hits([], 0.0)
    assert bm25.search_hits(directory, "kafka", 0) == bm25.Hits([], 0.0)
    # a term no item has weighs nothing in the coverage
    assert bm25.search_hits(directory, "kafka absentword", 10).coverage == 1.0
    bm25_update.update(directory, ["memory/f-1.md"], [], optimize=False)
    assert bm25.search_hits(directory, "kafka", 10) == bm25.Hits([], 0.0)


@given(st.binary(max_size=3000))
def test_length_total_sums_what_the_bytes_stand_for(data):
    from whoosh.util.numeric import byte_to_length

    assert bm25_postings.length_total(data) == sum(byte_to_length(b) for b in data)


@pytest.mark.parametrize(
    "damage",
    [
        lambda buf: b"XXXX" + buf[4:],  # no block tag
        lambda buf: buf[: len(buf) // 2],  # cut short
        lambda buf: buf[:8] + bytes(len(buf) - 8),  # the first block's info zeroed
    ],
)
def test_damaged_posting_blocks_are_unreadable_not_misread(tmp_path, damage):
    directory = tmp_path / "bm25"
    build(directory, [[(0, n, ["kafka"] * 3, 2) for n in range(80)]])
    searcher = bm25.open_searcher(directory)
    try:
        leaf = searcher.reader()
        buf = posting_bytes(leaf, "body", "kafka")
        got = bm25_postings.read_blocks(buf).read()
        assert got == raw_matcher_postings(leaf, "body", b"kafka")
        with pytest.raises(bm25_postings.Unreadable):
            bm25_postings.read_blocks(damage(buf)).read()
    finally:
        searcher.close()


def test_body_blocks_that_cannot_matter_are_skipped_and_scores_stay_exact(tmp_path):
    # "webhook" in every body (a low idf there) but in the titles of only the first ten
    # files: the three best are decided by the titles, and body blocks of none but
    # untitled files are never decoded
    titled = [(0, n, ["webhook"] * 3 + ["secret"], 4) for n in range(10)]
    plain = [(1, n, ["ledger", "kafka", "go", "webhook"], 1) for n in range(10, 400)]
    directory = tmp_path / "bm25"
    build(directory, [titled + plain, plain[:40:7]])
    queries = [(["webhook"], None), (["webhook", "secret"], None), (["webhook"], "memory")]
    for words, track in queries:
        compare(directory, [(words, track)], limit=3)
        for vectorised in (False, True):
            searcher = bm25.open_searcher(directory)
            terms = bm25.query_terms(" ".join(words))
            bm25_score.search(searcher.reader(), terms, 3, track, vectorised)
            searcher.close()
            # the three body blocks of untitled files only are never decoded
            assert bm25_score.LAST_RUN["skipped"] >= 3 and bm25_score.LAST_RUN["read"] > 0
    compare(directory, queries)  # limit 7 and others: whatever the pruning does


def test_numpy_is_not_ready_while_another_thread_imports_it() -> None:
    # A hybrid retrieve imports numpy in its vector thread while BM25 runs; BM25 must not
    # take the numpy path then (`import numpy` would wait for the whole import).
    import subprocess
    import sys

    code = """
import sys, threading, time
from memwiki.index.bm25_score import numpy_ready
assert not numpy_ready()
seen = []
t = threading.Thread(target=lambda: __import__("numpy"))
t.start()
for _ in range(20000):
    if "numpy" in sys.modules:
        seen.append(numpy_ready())
        break
    time.sleep(0.0001)
t.join()
print(seen, numpy_ready())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out == ["[False]", "True"]
