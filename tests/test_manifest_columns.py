"""The columnar manifest: lazy views equal the eager lists, id lookup, upgrade from format 11.

A cold reader decodes only the rows it touches; these tests hold it to the eager answer
for every row, id and file, with tombstones and appended rows, with every id hashed to
the same key, and for an index written by the previous format's code (a fixture built
by memwiki at format 11), which must be upgraded without touching Whoosh or the vectors.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_index_segments import assert_equals_rebuild, big_wiki, hash_cfg

from memwiki.index import columns, freshness, manifest
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve
from memwiki.layout import RACY_NS
from memwiki.wiki import Wiki

FIXTURE = Path(__file__).parent / "fixtures" / "format11"


def make_rows(n_files: int, per_file: int) -> tuple[dict, list]:
    files, rows = {}, []
    for f in range(n_files):
        rel = f"{'memory' if f % 3 else 'skill'}/n{f:03d}.md"
        problem = "line 1: bad" if f % 7 == 6 else None
        plugin = "an Excalidraw drawing" if f % 11 == 10 and not problem else None
        meta = None if problem or plugin else (f"n{f:03d}", f"note {f}", ("a", "b")[: f % 3], None)
        files[rel] = manifest.FileEntry(100 + f, 10**18 + f, f"{f:064x}", problem, meta, plugin)
        if problem or plugin:  # a plugin's own note is read and has no items
            continue
        for k in range(per_file):
            sha = f"{(f * 1000 + k) * 7919:064x}"
            rows.append(
                manifest.Row(
                    rel,
                    rel.split("/")[0],
                    f"n{f:03d}",
                    f"note {f}",
                    ("t",) * (f % 2),
                    f"Part {k}",
                    3 * k + 1,
                    3 * k + 2,
                    sha,
                    ("proj",) if f % 5 == 0 else (),
                )  # fmt: skip
            )
    return files, rows


def test_base_round_trip_decodes_every_row_and_entry(tmp_path):
    files, rows = make_rows(40, 4)
    columns.Base.build(files, rows).write(tmp_path / "b.bin")
    back = columns.Base.open(tmp_path / "b.bin")
    assert [back.row(s) for s in range(back.n_rows)] == rows
    assert {rel: back.entry(i) for i, rel in enumerate(back.rels)} == files
    # 40 files: 5 with a problem, 3 plugin notes
    assert back.ok_files == sum(1 for e in files.values() if e.indexed) == 32
    assert [back.indexed(i) for i in range(back.n_files)] == [files[r].indexed for r in back.rels]
    assert back.stats() == {rel: (e.size, e.mtime_ns) for rel, e in files.items()}
    for rel in files:
        assert back.file_slots(rel) == [s for s, r in enumerate(rows) if r.path == rel]


@settings(max_examples=40, deadline=None)
@given(
    n_files=st.integers(1, 30),
    per_file=st.integers(1, 4),
    dead=st.sets(st.integers(0, 200), max_size=40),
    extra=st.integers(0, 12),
    collide=st.booleans(),
)
def test_lazy_views_equal_the_eager_lists(n_files, per_file, dead, extra, collide):
    files, rows = make_rows(n_files, per_file)
    real_id_key, real_sha_key = columns.id_key, columns.sha_key
    if collide:  # every id and sha on one key: the decoded row must decide
        columns.id_key = columns.sha_key = lambda s: 7  # type: ignore[assignment]
    try:
        base = columns.Base.build(files, rows)
        appended = [r._replace(start_line=r.start_line + 1000) for r in rows[:extra]]
        physical = rows + appended
        dead = {d for d in dead if d < len(physical)}
        state = manifest.State(extra=appended, dead=dead, base="x", base_data=base)
        view = state.rows
        eager = [r for s, r in enumerate(physical) if s not in dead]
        assert len(view) == len(eager) and list(view) == eager
        assert [view[i] for i in range(len(eager))] == eager
        if eager:
            assert view[-1] == eager[-1]
        for n in range(len(eager)):
            assert view.live(view.slot(n)) == n
        for s in dead:
            assert view.live(s) is None
        for i, r in enumerate(eager):
            assert view.find(r.id) == i
        assert view.find("memory/none.md:1-2") is None
        for s in dead:  # a tombstoned row is not found
            if physical[s].id not in {r.id for r in eager}:
                assert view.find(physical[s].id) is None
        for track in ("memory", "skill"):
            assert view.track_mask(track) == [r.track == track for r in eager]
        paths = {r.path for r in eager[:3]}
        live_slots = [s for s, r in enumerate(physical) if s not in dead]
        assert view.slots_of(paths) == [s for s in live_slots if physical[s].path in paths]
        for r in eager[:5]:
            slot = view.slot_of_sha(r.sha)
            assert slot is not None and physical[slot].sha == r.sha and slot not in dead
    finally:
        columns.id_key, columns.sha_key = real_id_key, real_sha_key


def test_file_view_counts_and_delta():
    files, rows = make_rows(20, 2)
    base = columns.Base.build(files, rows)
    gone = {"memory/n001.md", "memory/n010.md"}  # n010: a plugin's note, never counted
    delta = {
        "memory/n002.md": manifest.FileEntry(1, 2, "0" * 64, "line 1: now broken", None),
        "memory/n004.md": manifest.FileEntry(1, 2, "2" * 64, None, None, "a Kanban board"),
        "memory/new.md": manifest.FileEntry(3, 4, "1" * 64, None, ("new", "d", (), None)),
    }
    state = manifest.State(files_delta=delta, files_gone=gone, base="x", base_data=base)
    eager = {k: v for k, v in files.items() if k not in gone} | delta
    assert dict(state.files) == eager and len(state.files) == len(eager)
    assert "memory/n001.md" not in state.files and "memory/new.md" in state.files
    assert state.indexed_files() == sum(1 for e in eager.values() if e.indexed) == 15
    assert state.files.stats() == {k: (e.size, e.mtime_ns) for k, e in eager.items()}


def test_a_reader_decodes_only_what_it_touches(tmp_path):
    wiki = big_wiki(tmp_path / "w", files=40)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    index.update()
    loaded = manifest.load(wiki.sidecar / "index" / "state.pkl")
    result = retrieve(wiki, "webhook 7", config=hash_cfg(wiki.root), index=index)
    assert result.results and result.index["files"] == 40 and result.index["items"] == 200
    # a fresh load has decoded nothing; a lookup decodes a handful of groups
    assert loaded.base_data._group_cache == {}
    row = loaded.rows[123]
    assert loaded.rows.find(row.id) == 123
    assert len(loaded.base_data._group_cache) <= 3


def install_fixture(tmp_path: Path) -> Wiki:
    wiki, _ = Wiki.init(tmp_path / "w")
    for track in ("memory", "skill"):
        shutil.copytree(FIXTURE / track, wiki.root / track, dirs_exist_ok=True)
    shutil.copytree(FIXTURE / "index", wiki.sidecar / "index")
    return wiki


def test_a_format_11_index_is_upgraded_without_a_rebuild(tmp_path):
    wiki = install_fixture(tmp_path)
    idx = wiki.sidecar / "index"
    kept = {
        p.relative_to(idx): p.read_bytes()
        for p in [*idx.glob("vectors-*.npy"), *(idx / "bm25-1").iterdir()]
    }
    assert kept and (idx / "rows-1.pkl").exists()
    messages: list[str] = []
    result = retrieve(
        wiki, "webhook secret rotation", config=hash_cfg(wiki.root), notify=messages.append
    )
    assert result.paths()[0] == "memory/f003.md"
    assert any("upgrading the index manifest (format 11 to 12)" in m for m in messages)
    assert not any("rebuilding" in m for m in messages)
    state = manifest.load(idx / "state.pkl")
    assert state.format == manifest.FORMAT and state.base == "manifest-4.bin"
    # nothing rebuilt: the same Whoosh directory and segments, and one appended segment
    # for the row format 11 had left without a vector (a hybrid retrieve embeds it)
    assert state.bm25_dir == "bm25-1" and [n for n, _ in state.segments[:3]] == [
        "vectors-1.npy",
        "vectors-2.npy",
        "vectors-3.npy",
    ]
    for rel, data in kept.items():
        assert (idx / rel).read_bytes() == data
    assert len(state.rows) == 32 and not state.unembedded and len(state.dead) == 10
    assert_equals_rebuild(wiki, tmp_path)


def test_an_upgraded_index_goes_on_with_edits(tmp_path):
    wiki = install_fixture(tmp_path)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    (wiki.root / "memory" / "f001.md").write_text(
        "---\nname: f001\ndescription: file 1 again\n---\n## Fresh\nledger rollback\n"
    )
    state = index.update().state
    assert state.format == manifest.FORMAT and not state.unembedded
    # the old base goes once no recent state names it
    assert not (wiki.sidecar / "index" / "rows-1.pkl").exists()
    assert_equals_rebuild(wiki, tmp_path)


def test_an_empty_base_round_trips(tmp_path):
    columns.Base.build({}, []).write(tmp_path / "b.bin")
    back = columns.Base.open(tmp_path / "b.bin")
    assert back.n_rows == 0 and back.n_files == 0 and back.stats() == {}


@pytest.mark.parametrize("damage", ["truncated", "garbage", "not-a-base", "empty", "cut"])
def test_a_damaged_base_is_repaired(tmp_path, damage):
    import pickle

    wiki = big_wiki(tmp_path / "w", files=10)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    state = index.update().state
    path = wiki.sidecar / "index" / state.base
    data = path.read_bytes()
    damaged = {
        "truncated": data[: len(data) // 2],
        "garbage": b"\x00" * 100,
        "empty": b"",
        "cut": data[:20],  # the magic and header length, no header
    }
    path.write_bytes(damaged.get(damage, pickle.dumps(({}, []))))
    with pytest.raises(manifest.DamagedIndex, match="manifest base"):
        manifest.load(wiki.sidecar / "index" / "state.pkl")
    messages: list[str] = []
    fresh = Index(wiki, hash_cfg(wiki.root), notify=messages.append)
    assert len(fresh.snapshot().state.rows) == len(state.rows)
    assert any("rebuilding" in m for m in messages)


def test_a_manifest_of_an_unknown_format_is_rebuilt(tmp_path):
    wiki = big_wiki(tmp_path / "w", files=5)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    state = index.update().state
    state.format = 10
    manifest.save(wiki.sidecar / "index" / "state.pkl", state)
    with pytest.raises(manifest.OtherVersionIndex, match="an older memwiki .index format 10"):
        manifest.load(wiki.sidecar / "index" / "state.pkl")


def test_an_unchanged_scan_hashes_only_racy_files(tmp_path, monkeypatch):
    wiki = big_wiki(tmp_path / "w", files=30)
    index = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None)
    state = index.update().state
    state.written_ns += 10 * RACY_NS  # every file now well before the manifest
    hashed: list[Path] = []
    real = freshness.file_sha256
    monkeypatch.setattr(freshness, "file_sha256", lambda p: hashed.append(p) or real(p))
    changes, stats = freshness.scan(wiki.root, state)
    assert not changes and len(stats) == 30 and hashed == []
    target = wiki.root / "memory" / "f004.md"
    target.write_text(target.read_text() + "\nmore\n")
    changes, _ = freshness.scan(wiki.root, state)
    assert changes.changed == ["memory/f004.md"] and hashed == [target]


def test_a_cold_bm25_retrieve_of_a_fresh_index_imports_no_numpy(tmp_path):
    import subprocess
    import sys

    wiki = big_wiki(tmp_path / "w", files=20)
    Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
    code = (
        "import sys\n"
        "from memwiki.config import load\n"
        "from memwiki.index.search import retrieve\n"
        "from memwiki.wiki import Wiki\n"
        f"root = {str(wiki.root)!r}\n"
        "cfg = load({'wiki': root}, environ={'HOME': root, 'MEMWIKI_EMBED': 'hash'})\n"
        "result = retrieve(Wiki(root), 'webhook 7', mode='bm25', config=cfg)\n"
        "assert result.paths(), result\n"
        "assert 'numpy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
