"""The frontmatter fast path (recallfile/plain_yaml.py) against yaml.safe_load: whatever it
accepts, it reads exactly as PyYAML does (same types, values, key order, time zones), and
it accepts the frontmatter memwiki and its users write, so that PyYAML is not imported."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memwiki import markdown
from memwiki.recallfile.plain_yaml import OTHER, load

FUZZ = settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
ROOT = Path(__file__).resolve().parents[1]

# Scalars that YAML 1.1 reads as something else, or that break a plain scalar.
NASTY = [
    "yes", "Yes", "YES", "no", "No", "on", "On", "OFF", "off", "true", "True", "FALSE", "y",
    "n", "Y", "null", "Null", "NULL", "nULL", "~", "", " ", "0", "00", "007", "08", "-1", "+1",
    "0o7", "0x1F", "0b101", "1_000", "1:20", "190:20:30", "1.5", "-1.5e+3", "1e3", "1.0e3",
    ".5", ".inf", "-.Inf", ".NaN", ".nan.", "1.", "2026-11-02", "2026-11-02T10:14:00Z",
    "2026-1-2T3:04:05", "2026-11-02t10:14:00", "2026-11-02 10:14:00", "2026-11-02 10:14:00 +02:00",
    "2026-11-02T10:14:00.123456789-05", "2026-11-02T10:14:00.5+5:30", "2026-11-02T10:14:00.",
    "2026-13-45", "2026-02-30T00:00:00Z", "2026-11-02T25:00:00Z", "2026-11-02T10:14:00+99",
    "2026-11-2", "20261102", "=", "<<", "!", "!x", "&a", "*a", "%x", "@x", "`x", "|", ">",
    "|-", "-", "- x", "-x", "--", "---", "...", "?", "?x", "? x", ":", ":x", "a: b", "a:",
    "a:b", "a::b", "a :b", "a #b", "a#b", "#", "#x", "a, b", "a,b", "a  b", "a ", " a",
    "'q'", '"q"', "'it''s'", "''''", "'a'b'", "'a''", "'", '"', '"a\\nb"', '"a\\"', '"é"',
    "[a, b]", "[]", "[ ]", "[a,]", "[,a]", "[a, [b]]", "[a:b, c]", "[a: b]", "[a #b]",
    "[claude-code:8c41d0f3-2b6a, x]", "[yes, no]", "[1, 2]", "[~]", "[a b, c]", "['a', b]",
    "[a?, b]", "[a] x", "{a: b}", "{}", "é", "日本語", "naïve café", "\xa0x", "x\xa0",
    "a\u3000b", "x\u2028y", "\u2029", "\ufeffx", "\x85", "\x7f", "\x9f", "\t", "a\tb", "\r",
    "\x00", "\U0001f600", "\ud7ff", "\ue000", "\ufffd", "\ufffe", "a\\b", "C:\\x", "http://x/y?z=1#f",
    "fix #123 bug", "50%", "x" * 300,
]  # fmt: skip
KEYS = [
    "name", "description", "tags", "sources", "created", "updated", "project", "projects",
    "aliases", "_x", "a-b", "a_b", "A", "yes", "on", "No", "null", "NULL", "true", "y", "x1",
    "1x", "-x", "é", "k" * 127, "k" * 128, "k" * 129, "name ", " name", "<<", "=", "~", "a b",
]  # fmt: skip

scalar = st.one_of(
    st.sampled_from(NASTY),
    st.text(st.sampled_from("ab:#-[]{},'\" ?!&*é\xa0\t1.~"), max_size=8),
    st.lists(st.sampled_from(NASTY), min_size=1, max_size=3).map(" ".join),
)
flow = st.lists(scalar, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")
indent = st.sampled_from(["", " ", "  ", "   ", "    "])


@st.composite
def line(draw) -> str:
    kind = draw(st.sampled_from(["key", "key", "key", "empty", "comment", "item", "raw"]))
    if kind == "key":
        value = draw(st.one_of(scalar, flow, st.just("")))
        sep = draw(st.sampled_from([": ", ":  ", ":", ": " if value else ":"]))
        return draw(st.sampled_from(KEYS)) + sep + value + draw(st.sampled_from(["", " ", "  "]))
    if kind == "empty":
        return draw(st.sampled_from(["", " ", "   "]))
    if kind == "comment":
        return draw(indent) + "#" + draw(scalar)
    if kind == "item":
        return draw(indent) + draw(st.sampled_from(["- ", "-  ", "-"])) + draw(scalar)
    return draw(indent) + draw(scalar)


# Text that is mostly plain, so that the fast path accepts much of what is generated.
WORDS = st.text(st.sampled_from("aeyonTFl019_.:-#,'\" ~éü日\xa0"), min_size=1, max_size=12)
plausible_value = st.one_of(
    WORDS,
    st.lists(WORDS, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
    WORDS.map(lambda w: f"'{w}'"),
    WORDS.map(lambda w: f'"{w}"'),
    st.sampled_from(NASTY),
)
plausible = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(KEYS[:12]), plausible_value).map(lambda kv: f"{kv[0]}: {kv[1]}"),
        st.tuples(st.sampled_from(KEYS[:12]), st.lists(WORDS, min_size=1, max_size=3), indent).map(
            lambda k: f"{k[0]}:\n" + "\n".join(f"{k[2]}- {w}" for w in k[1])
        ),
        st.sampled_from(["", "# c", "#", "# a: b"]),
    ),
    max_size=8,
).map(lambda ls: "\n".join(ls) + "\n")

documents = st.one_of(
    plausible,
    plausible,
    st.lists(line(), max_size=10).map(lambda ls: "\n".join(ls) + "\n"),
    st.lists(line(), max_size=10).map("\n".join),
    st.text(max_size=60),
)


def same(a, b) -> bool:
    """Equal, of the same types all the way down (True is not 1; aware is not naive)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dt.datetime):
        return a == b and a.utcoffset() == b.utcoffset()
    return a == b


def check(text: str) -> object:
    got = load(text)
    if got is OTHER:
        return got
    try:
        expected = yaml.safe_load(text)
    except Exception as exc:  # PyYAML refuses: the fast path must have too
        raise AssertionError(f"fast path accepted {text!r} as {got!r}; PyYAML: {exc}") from None
    assert same(got, expected), (text, got, expected)
    return got


@FUZZ
@given(documents)
@example("name: x\ndescription: a: b\n")
@example("tags:\n- a\n  - b\n")
@example("tags:\n  - a\n- b\n")
@example("tags:\n# c\n- a\nname: x\n")
@example("a: x\n  b\n")
@example("a: 'x' # c\n")
def test_fast_path_reads_what_pyyaml_reads(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(KEYS), scalar), max_size=6))
def test_one_key_per_line(pairs: list[tuple[str, str]]) -> None:
    check("".join(f"{k}: {v}\n" for k, v in pairs))


@FUZZ
@given(st.sampled_from(KEYS), indent, st.lists(scalar, min_size=1, max_size=4))
def test_block_lists(key: str, pad: str, items: list[str]) -> None:
    check(f"name: x\n{key}:\n" + "".join(f"{pad}- {i}\n" for i in items) + "description: d\n")


COMMON = [
    "name: billing-service\ndescription: Architecture, stack, layout (billingd) - the Go service\n"
    "tags: [billing, go, architecture]\naliases: [billingd]\ncreated: 2025-10-07T09:30:00Z\n"
    "updated: 2026-11-03T11:05:00Z\nsources: [claude-code:8c41d0f3-2b6a-4e97-b1d5-7a0e9c3f2286]\n"
    "project: billing\n",
    "name: x\ndescription: 'quoted: with a colon'\ntags:\n  - a\n  - b-c\n",
    'name: x\ndescription: "double # quoted"\ntags: []\nstatus: draft\n',
    "# a comment\nname: x\n\ndescription: naïve café — 日本語, 50% done; C:\\path\n",
    "name: x\ndescription: d\ncreated: 2026-11-02\nprojects: [a, b]\n",
]


def test_common_frontmatter_takes_the_fast_path() -> None:
    for text in COMMON:
        assert check(text) is not OTHER, text


def test_every_example_and_fixture_file_reads_the_same() -> None:
    """Every RecallFile shipped in the repository: the fast path equals PyYAML, and the
    plain ones (all of the example wiki's) take it."""
    taken = 0
    files = sorted((ROOT / "examples").rglob("*.md")) + sorted((ROOT / "tests").rglob("*.md"))
    for path in files:
        parts = markdown.split_frontmatter(path.read_text("utf-8", "replace"))
        if parts is not None:
            taken += check(parts.text) is not OTHER
    demo = list((ROOT / "examples" / "demo-wiki").rglob("*.md"))
    assert taken >= len([p for p in demo if markdown.split_frontmatter(p.read_text())])


def test_plain_file_is_parsed_without_importing_pyyaml(tmp_path: Path) -> None:
    """A real process: parsing a plain RecallFile leaves PyYAML unimported; a file the fast
    path refuses still parses (through PyYAML), with its problem reported the same way."""
    code = (
        "import sys\n"
        "from memwiki.recallfile import parse, InvalidRecallFile\n"
        "rf = parse(b'---\\nname: x\\ndescription: d\\ntags: [a]\\n"
        "created: 2026-11-02T10:14:00Z\\n---\\nbody\\n', 'memory', 'x')\n"
        "assert rf.tags == ['a'] and rf.created == '2026-11-02T10:14:00Z', rf\n"
        "assert 'yaml' not in sys.modules\n"
        "try:\n"
        "    parse(b'---\\nname: x\\ndescription: [oops\\n---\\n', 'memory', 'x')\n"
        "except InvalidRecallFile as exc:\n"
        "    print(exc.problems[0].line, exc.problems[0].message)\n"
        "assert 'yaml' in sys.modules\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.startswith("3 invalid YAML in frontmatter")


@FUZZ
@given(plausible)
def test_plausible_frontmatter(text: str) -> None:
    check(text)


@FUZZ
@given(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)),
    st.sampled_from(
        [
            "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%S+05:30",
            "%Y-%m-%dT%H:%M:%S-0800", "%Y-%m-%d %H:%M:%S -02", "%Y-%m-%dt%H:%M:%S",
            "%Y-%-m-%-dT%-H:%M:%S", "%Y-%m-%dT%H:%M", "%Y%m%dT%H%M%SZ",
        ]
    ),
)  # fmt: skip
def test_timestamps(when: dt.datetime, fmt: str) -> None:
    text = f"created: {when.strftime(fmt)}\nupdated: [{when.strftime(fmt)}]\n"
    got = check(text.split("\n")[0] + "\n")
    check(text)
    if fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d") and when.year >= 1000:
        assert got is not OTHER  # the forms memwiki writes take the fast path
