"""A rewrite keeps the file's own line ending (and byte-order mark) on every line it writes."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memwiki.recallfile import LINE_BREAKS, InvalidRecallFile, parse, render

LINE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=LINE_BREAKS), max_size=30
)
WORD = st.text("abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=20).map(lambda s: "w" + s)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    newline=st.sampled_from(["\n", "\r\n"]),
    bom=st.sampled_from(["", "\ufeff"]),
    description=WORD,
    extra=st.lists(st.sampled_from(["owner: ada", "# a comment", "aliases: [x]", ""]), max_size=3),
    body=st.lists(LINE, max_size=5),
    new_description=LINE.filter(str.strip),
    tags=st.lists(WORD, max_size=3),
    stamp=st.booleans(),
)
def test_a_rewrite_writes_every_line_in_the_files_line_ending(
    newline, bom, description, extra, body, new_description, tags, stamp
) -> None:
    """Bug: `add -d` on a CRLF file wrote the fences, the description and new stamps with LF."""
    lines = ["---", "name: x", f"description: {description}", *extra, "---", *body]
    text = bom + "".join(line + newline for line in lines)
    try:
        rf = parse(text, "memory", "x")
    except InvalidRecallFile:
        assume(False)  # a body line that happens to be a conflict marker
    assert (rf.bom, rf.newline) == (bom, newline)
    rf.description = new_description.strip()
    rf.tags = tags
    if stamp:
        rf.updated = "2026-12-01T10:18:02Z"
    out = render(rf)
    assert out.startswith(bom + "---" + newline)
    endings = [line[len(line.rstrip("\r\n")) :] for line in out.removeprefix(bom).splitlines(True)]
    assert set(endings) == {newline}, out
    again = parse(out, "memory", "x")
    assert again == rf and (again.bom, again.newline) == (bom, newline)


def test_add_keeps_a_crlf_files_line_endings_and_bom(tmp_path, run_memwiki) -> None:
    """Bug: `echo new | memwiki add memory crlf -d y` left a CRLF file with mixed endings."""
    from memwiki.wiki import Wiki

    wiki, _ = Wiki.init(tmp_path / "w")
    path = wiki.root / "memory/crlf.md"
    path.write_bytes(
        b"\xef\xbb\xbf---\r\nname: crlf\r\ndescription: x\r\nowner: ada\r\n---\r\nbody\r\n"
    )
    done = run_memwiki("--wiki", wiki.root, "add", "memory", "crlf", "-d", "y", input="new\nbody\n")
    assert done.returncode == 0, done.stderr
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf---\r\nname: crlf\r\ndescription: y\r\nowner: ada\r\n")
    assert data.endswith(b"---\r\nnew\r\nbody\r\n")
    assert data.count(b"\n") == data.count(b"\r\n")
    done = run_memwiki("--wiki", wiki.root, "add", "memory", "crlf", "-d", "z", "-t", "a")
    assert done.returncode == 0, done.stderr
    data = path.read_bytes()
    assert b"description: z\r\n" in data and b"tags: [a]\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n") and data.endswith(b"new\r\nbody\r\n")
