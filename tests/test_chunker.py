"""The chunker: headings cut sections, long sections become overlapping windows, no line is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memwiki.index.chunker import chunk, windows

WORDS = st.sampled_from(
    ["alpha", "beta", "release", "billing", "staging", "x", "deploy", "```", "#"]
)
LINE = st.one_of(
    st.lists(WORDS, min_size=0, max_size=40).map(" ".join),
    st.tuples(st.sampled_from(["#", "##", "###"]), st.text("abc ", min_size=1, max_size=8)).map(
        " ".join
    ),
    st.just(""),
    st.just("```"),
)


def _chunk(body: str, first: int = 1, **kw):
    return chunk(body, first, path="memory/a.md", track="memory", name="a", description="d", **kw)


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, min_size=0, max_size=80), st.integers(min_value=1, max_value=30))
def test_every_body_line_belongs_to_an_item(lines, first):
    body = "\n".join(lines) + ("\n" if lines else "")
    items = _chunk(body, first, max_words=25, overlap=8)
    assert items, "a file always yields at least one item"
    covered = set()
    for it in items:
        assert first <= it.start_line <= it.end_line or not lines
        covered.update(range(it.start_line, it.end_line + 1))
    assert set(range(first, first + len(lines))) <= covered
    # the text of an item is exactly its lines
    for it in items:
        if lines:
            assert (
                it.text == "\n".join(lines[it.start_line - first : it.end_line - first + 1]).strip()
            )


def test_sections_follow_headings_and_skip_code_fences():
    body = "# Title\nintro\n## Steps\none\n```\n# not a heading\n```\n## Pitfalls\ntwo\n"
    items = _chunk(body, 5)
    assert [(i.heading, i.start_line, i.end_line) for i in items] == [
        ("Title", 5, 6),
        ("Title > Steps", 7, 11),
        ("Title > Pitfalls", 12, 13),
    ]


def test_bare_heading_joins_the_next_section():
    items = _chunk("# Title\n\n## A\ntext\n")
    assert len(items) == 1 and items[0].heading == "Title > A" and items[0].start_line == 1


def test_long_section_is_windowed_with_overlap():
    lines = [f"line {i} " + "word " * 18 for i in range(30)]  # 20 words each
    items = _chunk("## Long\n" + "\n".join(lines) + "\n", max_words=150, overlap=30)
    assert len(items) > 3
    for a, b in zip(items, items[1:], strict=False):
        assert b.start_line <= a.end_line + 1, "consecutive windows leave no gap"
        assert b.start_line > a.start_line, "windows always move forward"
    assert any(b.start_line <= a.end_line for a, b in zip(items, items[1:], strict=False)), (
        "some overlap"
    )
    assert all(len(i.text.split()) <= 150 + 20 for i in items)


def test_windows_make_progress_on_huge_lines():
    lines = ["w " * 500] * 3
    assert list(windows(lines, 0, 2, 150, 30)) == [(0, 0), (1, 1), (2, 2)]


def test_name_and_description_head_the_embedded_text():
    (item,) = _chunk("## Steps\nrun it\n")
    assert item.embed_text.startswith("a: d\nSteps\n")
    assert item.sha == _chunk("## Steps\nrun it\n")[0].sha
    assert item.sha != _chunk("## Steps\nrun it again\n")[0].sha


def test_empty_body_still_gives_one_item():
    (item,) = _chunk("", 4)
    assert item.text == "" and item.start_line == 4
