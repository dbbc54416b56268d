"""Whoosh imported light: the segment's parts are read from the mapped memory, not copied."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_index_crash import build_wiki, env_for

from memwiki.index.whoosh_light import ViewFile

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("read"), st.integers(-2, 40)),
        st.tuples(st.just("readline"), st.integers(-1, 40)),
        st.tuples(st.just("readinto"), st.integers(0, 40)),
        st.tuples(st.just("seek"), st.integers(0, 60), st.sampled_from([0, 1, 2])),
        st.tuples(st.just("tell")),
    ),
    max_size=30,
)


def _apply(f, op):
    name = op[0]
    if name == "read":
        return f.read(op[1])
    if name == "readline":
        return f.readline(op[1])
    if name == "readinto":
        buf = bytearray(op[1])
        n = f.readinto(buf)
        return n, bytes(buf[:n])
    if name == "seek":
        offset = op[1] if op[2] == 0 else op[1] - 30  # relative and end seeks go both ways
        try:
            return f.seek(offset, op[2])
        except ValueError:
            return "ValueError"
    return f.tell()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=50).map(lambda b: b.replace(b"\x07", b"\n")), OPS)
def test_view_file_reads_like_bytesio(data, ops):
    view, ref = ViewFile(memoryview(data)), io.BytesIO(data)
    for op in ops:
        assert _apply(view, op) == _apply(ref, op), op
    view.seek(0)
    ref.seek(0)
    assert list(view) == list(ref)
    assert view.getvalue() == data


SEARCH = """
import json, sys
if sys.argv[2] == "plain":
    import whoosh.searching  # Whoosh as it comes: memwiki's light import then does nothing
from memwiki.index import bm25, manifest
from memwiki.index.whoosh_light import ViewFile
root = sys.argv[1]
state = manifest.load(__import__("pathlib").Path(root) / ".memwiki/index/state.pkl")
searcher = bm25.open_searcher(__import__("pathlib").Path(root) / ".memwiki/index" / state.bm25_dir)
out = {}
for q in ("release staging webhook", "rollback the cluster", "nothing-matches-this"):
    hits = bm25.search_hits(None, q, 20, searcher=searcher)
    out[q] = [hits.items, hits.coverage]
files = [r._terms._dbfile.file for r in [searcher.reader()] if hasattr(r, "_terms")]
print(json.dumps({"hits": out, "views": [isinstance(f, ViewFile) for f in files]}))
"""


def test_search_with_views_equals_plain_whoosh(tmp_path):
    env = env_for(tmp_path, MEMWIKI_EMBED="none")
    wiki = build_wiki(tmp_path / "w", files=40)
    built = subprocess.run(
        [sys.executable, "-m", "memwiki", "--wiki", str(wiki.root), "reindex"],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    got = {}
    for kind in ("plain", "light"):
        done = subprocess.run(
            [sys.executable, "-c", SEARCH, str(wiki.root), kind],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        got[kind] = json.loads(done.stdout)
    assert got["light"]["hits"] == got["plain"]["hits"]
    assert got["light"]["hits"]["release staging webhook"][0]  # the queries do find items
    assert got["light"]["views"] == [True] and got["plain"]["views"] == [False]
