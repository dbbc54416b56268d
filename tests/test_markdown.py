"""The markdown layer: fences, headings and frontmatter as CommonMark reads them, one answer
for every caller (chunker, link scanner, RecallFile parser)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki import markdown
from memwiki.index.chunker import chunk
from memwiki.links import scan
from memwiki.recallfile import RecallFile

FOUR_BACKTICKS = "# Real\ntext\n````markdown\n```\n# Not a heading\n```\n````\nafter\n"


def _chunk(body: str):
    return chunk(body, 1, path="memory/a.md", track="memory", name="a", description="d")


def test_a_shorter_fence_inside_a_longer_one_does_not_close_it():
    lines = FOUR_BACKTICKS.splitlines()
    assert markdown.code_lines(lines) == [False, False, True, True, True, True, True, False]
    assert [i.heading for i in _chunk(FOUR_BACKTICKS)] == ["Real"]


def test_four_backtick_fence_shows_no_heading_in_retrieve(wiki, cli):
    wiki.save(
        RecallFile(
            "memory",
            "fence-demo",
            "how fences nest in markdown examples",
            body="# Fences\nNesting fences in markdown examples.\n\n" + FOUR_BACKTICKS[7:],
        )
    )
    code, out, err = cli("--wiki", wiki.root, "retrieve", "nesting fences", "--mode", "bm25")
    assert code == 0, err
    assert "memory/fence-demo.md" in out
    headings = [ln for ln in out.splitlines() if ln.startswith("### ")]
    assert headings and all("Not a heading" not in h for h in headings), out
    assert "### Fences" in out


def test_fence_rules():
    code = markdown.code_lines
    # tildes, info strings, indentation up to three spaces
    assert code(["~~~ python", "# x", "~~~"]) == [True, True, True]
    assert code(["   ```js", "# x", "   ```"]) == [True, True, True]
    # four spaces: an indented code block, not a fence; a backtick info string with a
    # backtick is not a fence either
    assert code(["text", "", "    ```", "# x"]) == [False, False, True, False]
    assert code(["``` a`b", "# x"]) == [False, False]
    # closing: same character, at least as long, nothing after it
    assert code(["~~~", "```", "# x", "~~~~"]) == [True] * 4
    assert code(["````", "```", "# in", "`````", "# out"]) == [True] * 4 + [False]
    assert code(["```", "``` not a close", "# in"]) == [True] * 3
    # an unclosed fence runs to the end
    assert code(["```", "# a", "# b"]) == [True] * 3


def test_headings():
    h = markdown.heading
    assert h("# Title") == (1, "Title")
    assert h("### Steps ###") == (3, "Steps")
    assert h("   ## C#") == (2, "C#")
    assert h("#") == (1, "")
    assert h("####### seven") is None
    assert h("#5 bolt") is None
    assert h("    # code") is None


def test_frontmatter_split_keeps_bom_aside_and_counts_lines():
    text = "\ufeff---\nname: a\n---\nbody\n"
    assert markdown.strip_bom(text)[0] == "\ufeff"
    assert markdown.split_frontmatter(text) == ("name: a\n", "body\n", 4)
    assert markdown.split_frontmatter("---\r\nname: a\r\n...\r\nx") == ("name: a\r\n", "x", 4)
    assert markdown.split_frontmatter("no frontmatter\n") is None
    assert markdown.body_of("\ufeff# T\n") == ("# T\n", 1)


def test_key_lines_and_blocks():
    fm = "# comment\nname: a\ntags:\n  - x\n- y: z\nweird key: v\n"
    assert markdown.key_line(fm, "tags") == 4
    assert markdown.key_line(fm, "missing") == 2
    assert [k for k, _ in markdown.key_blocks(fm)] == [None, "name", "tags", "weird key"]
    assert "".join(t for _, t in markdown.key_blocks(fm)) == fm


def test_code_spans_do_not_run_through_a_heading():
    lines = ["text `open", "# Heading [[b]]", "close` [[c]]"]
    masked = markdown.mask_code(lines)
    assert "[[b]]" in masked[1]


# ------------------------------------------------------ the chunker and links agree

FENCE = st.tuples(
    st.sampled_from(["", " ", "   "]),
    st.sampled_from(["`", "~"]),
    st.integers(3, 6),
    st.sampled_from(["", "python", " md", "a`b", "   "]),
).map(lambda t: f"{t[0]}{t[1] * t[2]}{t[3]}")
TEXT = st.sampled_from(
    ["plain words", "`span` here", "a ``` b", "- item", "1. first", "    indented", "", "> quote"]
)
PROBE = st.integers(0, 10**6).map(lambda n: f"# H{n} [[note-{n}]]")
LINES = st.lists(st.one_of(FENCE, TEXT, PROBE, st.just("")), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES)
def test_chunker_and_link_scanner_agree_on_what_is_code(lines):
    """A probe line `# Hn [[note-n]]` is a section heading exactly when its link is found."""
    body = "\n".join(lines) + "\n"
    text = f"---\nname: a\ndescription: d\n---\n{body}"
    linked = {inner for _, _, inner, _ in scan(text)}
    # The chunker cuts its sections at exactly these lines.
    headed = {h[1] for h in markdown.headings(body.splitlines()) if h is not None}
    for line in lines:
        if line.startswith("# H"):
            n = line.split()[1][1:]
            assert (f"note-{n}" in linked) == (f"H{n} [[note-{n}]]" in headed), (line, lines)


def test_closing_fence_matches_the_open_one():
    assert markdown.closing_fence(["text", "````md", "```", "x"]) == "````"
    assert markdown.closing_fence(["- item", "  ~~~", "  x"]) == "  ~~~"
    assert markdown.closing_fence(["```", "x", "```"]) is None
