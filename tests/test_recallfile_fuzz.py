"""Fuzzing the RecallFile parser: any bytes give a RecallFile or a one-line error, never a
traceback; whatever parses survives a rewrite."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memwiki.errors import MemwikiError
from memwiki.recallfile import InvalidRecallFile, parse, render

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))

VALID = [
    b"---\nname: x\ndescription: a file\ntags: [a, b]\ncreated: 2026-11-02T10:14:00Z\n---\n# T\nbody\n",
    b"---\r\nname: x\r\ndescription: crlf\r\n...\r\nbody\r\n",
    b"\xef\xbb\xbf---\nname: x\ndescription: bom\n# comment\nowner: {a: [1, 2]}\n---\n",
    b"---\nname: x\ndescription: >-\n  folded\nsources:\n  - s1\n  - 2\nextra: !!binary aGk=\n---\n",
    b"---\nname: x\ndescription: d\naliases: [y]\nupdated: 2026-13-45\n---\n```\n# x\n```\n",
]
TOKENS = [
    b"---\n", b"...\n", b"\xef\xbb\xbf", b"\x00", b"\xff\xfe", b"\xc3", b"\r", b"\n", b"\t",
    b": ", b"- ", b"[", b"{", b"'", b'"', b"&a", b"*a", b"!!python/object:os.system", b"?",
    b"\xe2\x80\xa8", b"\x85", b"name: x\n", b"description: d\n", b"created: 99999-01-01\n",
    b"tags: 1\n", b"%YAML 1.1\n", b"<<: *a\n", b"a" * 5000, b"#" * 7, b"````\n",
    b"<<<<<<< HEAD\n", b"=======\n", b">>>>>>> b\n", b"name: y\n",
]  # fmt: skip


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "token"]))
        at = draw(st.integers(0, len(data)))
        if op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        else:
            data[at:at] = draw(st.sampled_from(TOKENS))
    return bytes(data)


inputs = st.one_of(
    st.binary(max_size=300),
    mutated(),
    st.lists(st.sampled_from(TOKENS), max_size=12).map(b"".join),
    st.text(max_size=200).map(lambda t: ("---\n" + t + "\n---\n").encode("utf-8", "replace")),
)


def _check(data: bytes) -> None:
    try:
        rf = parse(data, "memory", "x")
    except InvalidRecallFile as exc:
        assert exc.problems and all("\n" not in str(p) for p in exc.problems)
        assert "\n" not in str(exc)
        return
    except MemwikiError as exc:  # any other documented error is fine too, on one line
        assert "\n" not in str(exc)
        return
    # What parses must survive a rewrite: render it and read it back as the same file.
    again = parse(render(rf), "memory", "x")
    assert again == rf
    assert again.bom == rf.bom and again.newline == rf.newline


@FUZZ
@given(inputs)
@example(b"\xef\xbb\xbf")
@example(b"---\nname: x\ndescription: d\ncreated: 2026-13-45\n---\n")
@example(b"---\nname: x\ndescription: d\n" + b"k: " + b"[" * 5000 + b"\n---\n")
@example(b"---\nname: x\ndescription: " + b"y" * 2_000_000 + b"\n---\n")
def test_any_input_is_a_recallfile_or_a_one_line_error(data):
    _check(data)
