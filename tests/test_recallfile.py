"""RecallFile parse/render: round trips, byte-preserving rewrites, precise validation."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memwiki.recallfile import (
    KNOWN_KEYS,
    LINE_BREAKS,
    InvalidRecallFile,
    RecallFile,
    parse,
    render,
    split_frontmatter,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- strategies

slugs = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True)

# Characters YAML treats specially, mixed into otherwise arbitrary one-line text.
YAML_SPECIAL = list(":#'\"-[]{}&*!|>%@`,?\\") + [": ", " #", "- ", "---", "...", "~", "null"]
any_chars = st.characters(blacklist_categories=["Cs"])
# Tags and sources may hold any character, even exotic line breaks; they must round-trip.
strings = st.lists(st.one_of(any_chars, st.sampled_from(YAML_SPECIAL)), min_size=1).map("".join)
# A description is one line (no LINE_BREAKS character) and stored stripped, as parse strips it.
line_chars = st.characters(blacklist_categories=["Cs"], blacklist_characters=LINE_BREAKS)
descriptions = (
    st.lists(st.one_of(line_chars, st.sampled_from(YAML_SPECIAL)), min_size=1)
    .map("".join)
    .map(str.strip)
    .filter(bool)
)

timestamps = st.one_of(
    st.none(),
    st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2100, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
    ),
)

body_lines = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40),
    st.sampled_from(["---", "...", "--- ", "name: not-frontmatter", "# Heading", "", "\t- item"]),
)
bodies = st.lists(body_lines, max_size=8).map("\n".join)

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
extra_keys = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True).filter(
    lambda k: k not in KNOWN_KEYS
)


@st.composite
def recall_files(draw) -> RecallFile:
    name = draw(slugs)
    return RecallFile(
        track=draw(st.sampled_from(["memory", "skill", "projects"])),
        name=name,
        description=draw(descriptions),
        body=draw(bodies),
        tags=draw(st.lists(strings, max_size=4)),
        created=draw(timestamps),
        updated=draw(timestamps),
        sources=draw(st.lists(strings, max_size=3)),
        extra=draw(st.dictionaries(extra_keys, json_values, max_size=3)),
    )


# ------------------------------------------------------------ round trips


@FAST
@given(recall_files())
@example(
    RecallFile(
        "memory",
        "a",
        "- leading dash: with colon # and hash 'quotes' \"double\" ünïcødé ✓",
        body="---\nnot: frontmatter\n---\n",
        tags=["release", "billing: prod", "#tag"],
        sources=["claude-code:5f1c"],
    )
)
def test_parse_render_round_trip(rf: RecallFile) -> None:
    text = render(rf)
    assert parse(text, rf.track, rf.name) == rf
    # Rendering what was parsed changes nothing: the file is stable under rewrites.
    again = parse(text, rf.track, rf.name)
    assert render(again) == text


@FAST
@given(recall_files().filter(lambda rf: "\x00" not in rf.body))
def test_round_trip_through_utf8_bytes(rf: RecallFile) -> None:
    # Files are read from disk as bytes; the bytes path must agree with the str path.
    assert parse(render(rf).encode("utf-8"), rf.track, rf.name) == rf


@FAST
@given(recall_files(), bodies)
def test_body_bytes_are_exactly_what_follows_the_frontmatter(rf: RecallFile, body: str) -> None:
    rf.body = body
    text = render(rf)
    assert text.endswith(body)
    assert parse(text, rf.track, rf.name).body == body


# Unknown blocks as people and Obsidian write them: comments, odd spacing, nested values.
UNKNOWN_BLOCKS = [
    "aliases:\n  - Billing release\n  - 'release: billing'\n",
    "owner :   bob   # the person who knows\n",
    "# a comment about the next key\npriority: 3\n",
    "meta:\n  nested:\n    deep: [1, 2, {a: b}]\n  empty:\n",
    "folded: >\n  some folded\n  text\n",
    "literal: |-\n    keep   this\n       indentation\n",
    "\"quoted key\": 'single # not a comment'\n",
    "cssclasses: [wide,  dark]\n",
    "publish: yes\n",
    "date-ish: 2024-01-01\n",
    "sequence:\n- flush left\n- 'a: b'\n",
    "\n",
]


@FAST
@given(
    blocks=st.lists(st.sampled_from(UNKNOWN_BLOCKS), min_size=1, max_size=6, unique=True),
    position=st.integers(0, 6),
    old=descriptions,
    new=descriptions,
    body=bodies,
)
def test_unknown_keys_survive_a_description_change_byte_for_byte(
    blocks: list[str], position: int, old: str, new: str, body: str
) -> None:
    old_line = render(RecallFile("memory", "x", old)).splitlines(keepends=True)[2]
    position = min(position, len(blocks))
    fm_blocks = ["name: x\n", *blocks[:position], old_line, *blocks[position:], "tags: [a]\n"]
    text = "---\n" + "".join(fm_blocks) + "---\n" + body
    rf = parse(text, "memory", "x")
    before_extra = rf.extra

    rf.description = new
    rewritten = render(rf)

    fm, new_body, _ = split_frontmatter(rewritten)
    # Exactly one thing changed: the description line; every other byte is where it was.
    new_line = render(RecallFile("memory", "x", new)).splitlines(keepends=True)[2]
    expected = "".join(fm_blocks).replace(old_line, new_line, 1)
    assert fm == expected
    assert new_body == body
    back = parse(rewritten, "memory", "x")
    assert back.description == new
    assert back.extra == before_extra
    assert back.tags == ["a"]


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"])
def test_unicode_line_separators_in_values_are_escaped(char: str) -> None:
    # YAML reads these as line breaks; written raw they would fold the value.
    rf = RecallFile("memory", "a", "d", tags=[f"x{char}y"], extra={"note": f"p{char}q"})
    text = render(rf)
    assert char not in text
    assert parse(text, "memory", "a") == rf


def test_unchanged_file_renders_to_the_same_bytes() -> None:
    text = (
        "---\n"
        "name:   odd-spacing   # kept\n"
        'description: "double quoted"\n'
        "tags:\n  - one\n  - two\n"
        "created: 2026-11-02T10:14:00Z\n"
        "---\n"
        "Body   with  spaces  \n\n\n* list\n"
    )
    rf = parse(text, "memory", "odd-spacing")
    assert rf.tags == ["one", "two"]
    assert render(rf) == text


def test_changing_tags_rewrites_only_the_tags_block() -> None:
    text = "---\nname: a\ndescription: d\ntags:\n  - one\nowner: me  # hi\n---\nbody\n"
    rf = parse(text, "memory", "a")
    rf.tags = ["one", "two"]
    # A block list stays one, at its indent (as Obsidian's Properties editor writes it).
    assert render(rf) == (
        "---\nname: a\ndescription: d\ntags:\n  - one\n  - two\nowner: me  # hi\n---\nbody\n"
    )
    rf = parse(text.replace("tags:\n  - one\n", "tags: [one]\n"), "memory", "a")
    rf.tags = ["one", "two"]
    assert "\ntags: [one, two]\nowner: me" in render(rf)  # an inline list stays inline


def test_clearing_an_optional_key_removes_it() -> None:
    rf = parse("---\nname: a\ndescription: d\ntags: [x]\nz: 1\n---\n", "memory", "a")
    rf.tags = []
    assert render(rf) == "---\nname: a\ndescription: d\nz: 1\n---\n"


def test_timestamps_from_yaml_are_normalised_to_utc_z() -> None:
    rf = parse(
        "---\nname: a\ndescription: d\ncreated: 2026-11-02 12:14:00+02:00\n---\n", "memory", "a"
    )
    assert rf.created == "2026-11-02T10:14:00Z"


# ------------------------------------------------------------ validation


def problems_of(data: str | bytes, stem: str = "a", track: str = "memory") -> list[tuple]:
    with pytest.raises(InvalidRecallFile) as err:
        parse(data, track, stem)
    return [(p.path, p.line, p.message) for p in err.value.problems]


def test_missing_name() -> None:
    assert problems_of("---\ndescription: d\n---\n") == [
        ("memory/a.md", 2, "missing 'name' in frontmatter")
    ]


@pytest.mark.parametrize("bad", ["Billing", "a_b", "a--b", "-a", "a-", "ä", "a b", "x" * 81])
def test_non_slug_name(bad: str) -> None:
    [(path, line, message)] = problems_of(f"---\ndescription: d\nname: '{bad}'\n---\n", stem=bad)
    assert (path, line) == (f"memory/{bad}.md", 3)
    assert "not a slug" in message or "longer than 80" in message


def test_name_must_equal_stem() -> None:
    assert problems_of("---\nname: other\ndescription: d\n---\n", stem="a") == [
        ("memory/a.md", 2, "name 'other' does not match the file name 'a'")
    ]


def test_name_must_be_a_string() -> None:
    [(_, line, message)] = problems_of("---\nname: 12\ndescription: d\n---\n", stem="12")
    assert (line, message) == (2, "'name' must be a string")


@pytest.mark.parametrize("value", ["", " ''", " '   '", " ~"])
def test_missing_description(value: str) -> None:
    assert problems_of(f"---\nname: a\ndescription:{value}\n---\n") == [
        ("memory/a.md", 3, "missing 'description' in frontmatter")
    ]
    assert problems_of("---\nname: a\n---\n") == [
        ("memory/a.md", 2, "missing 'description' in frontmatter")
    ]


@pytest.mark.parametrize(
    "value", ["|\n  one\n  two", '"one\\ntwo"', '"one\\rtwo"', '"one\\u2028two"', '"a\\Nb"']
)
def test_multi_line_description(value: str) -> None:
    assert problems_of(f"---\nname: a\ndescription: {value}\n---\n") == [
        ("memory/a.md", 3, "'description' must be one line")
    ]


def test_every_problem_is_reported_at_once() -> None:
    found = problems_of("---\ntags: 5\nname: B\n---\n")
    assert [(line, msg.split()[0]) for _, line, msg in found] == [
        (3, "name"),
        (2, "missing"),
        (2, "'tags'"),
    ]


@pytest.mark.parametrize("fm", ["- a\n- b\n", "just a string\n", "42\n"])
def test_frontmatter_not_a_mapping(fm: str) -> None:
    assert problems_of(f"---\n{fm}---\nbody\n") == [
        ("memory/a.md", 2, "frontmatter is not a mapping of keys to values")
    ]


def test_invalid_yaml_reports_the_line_of_the_error() -> None:
    text = "---\nname: a\ndescription: fine\nowner: [unclosed\nnext: 1\n---\n"
    [(_, line, message)] = problems_of(text)
    assert message.startswith("invalid YAML in frontmatter")
    # PyYAML notices only at the next key; the line to fix is where the '[' opened.
    assert line == 4
    [(_, line, _)] = problems_of("---\nname: a\ndescription: a: b\n---\n")
    assert line == 3
    [(_, line, _)] = problems_of("---\nname: a\ndescription: d\n\tbad: tab\n---\n")
    assert line == 4


def test_non_utf8_bytes_report_their_line() -> None:
    data = b"---\nname: a\ndescription: d\n---\nline five\ncaf\xe9 on six\n"
    assert problems_of(data) == [("memory/a.md", 6, "not valid UTF-8 text")]


def test_empty_file() -> None:
    assert problems_of(b"") == [("memory/a.md", 1, "empty file")]
    assert problems_of("  \n\n") == [("memory/a.md", 1, "empty file")]


def test_binary_file() -> None:
    assert problems_of(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") == [
        ("memory/a.md", 1, "binary file, not markdown")
    ]


@pytest.mark.parametrize(
    "text", ["# Just markdown\n", "---\nname: a\ndescription: d\n", "text\n---\nname: a\n---\n"]
)
def test_no_frontmatter(text: str) -> None:
    [(path, line, message)] = problems_of(text)
    assert (path, line) == ("memory/a.md", 1)
    assert message.startswith("missing frontmatter")


def test_crlf_file_parses() -> None:
    rf = parse("---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n", "memory", "a")
    assert (rf.name, rf.description, rf.body) == ("a", "d", "body\r\n")


def test_problem_formats_as_path_line_message() -> None:
    with pytest.raises(InvalidRecallFile) as err:
        parse("---\nname: a\n---\n", "memory", "a", path="memory/a.md")
    assert str(err.value.problems[0]) == "memory/a.md:2: missing 'description' in frontmatter"
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("fm", "line"),
    [
        ("name: a\ndescription: 'unclosed\ntags: [x]\n", 3),
        ("name: a\ntags: [x, y\ndescription: d\n", 3),
        ('name: a\ndescription: d\nz: "open\n', 4),
    ],
)
def test_unclosed_yaml_is_reported_where_it_opens(fm: str, line: int) -> None:
    [(_, got, message)] = problems_of(f"---\n{fm}---\n")
    assert (got, message.split(":")[0]) == (line, "invalid YAML in frontmatter")
