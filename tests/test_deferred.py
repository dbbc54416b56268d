"""Edits answered before they are written (index/deferred.py, index/bm25_overlay.py).

A retrieve with defer=True lays a few edited files over the committed index and
commits them after the answer, in a forked child. The answer must be the one the
written index gives, to the last bit; the write must land, under the writer lock, or
be found again by the next command; the overlay's in-memory segment must hold exactly
what Whoosh's writer would have written. Real wikis, real forks, real kill -9.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forkscan import TOPICS, make, write

from memwiki.config import load
from memwiki.fsutil import file_sha256
from memwiki.index import bm25, bm25_postings, deferred, forkscan
from memwiki.index.bm25_overlay import MemorySegment
from memwiki.index.chunker import Item
from memwiki.index.indexer import Index
from memwiki.index.search import retrieve
from memwiki.lock import FileLock
from memwiki.wiki import Wiki

pytestmark = pytest.mark.skipif(not deferred.available(), reason="deferred writes fork (Linux)")

QUERY = "zebracorn billing webhook release"


def index_of(wiki: Wiki) -> Index:
    env = {"HOME": str(wiki.root.parent), "MEMWIKI_EMBED": "hash"}
    return Index(wiki, load({"wiki": str(wiki.root)}, environ=env), notify=lambda m: None)


def answer(result) -> list:
    """Everything a result says, scores unrounded."""
    return [
        (
            r.path,
            r.score,
            r.name,
            r.description,
            [(s.heading, s.start_line, s.end_line, s.text, s.score) for s in r.sections],
        )
        for r in result.results
    ]


def facts(result) -> dict:
    return {k: result.index[k] for k in ("files", "items", "updated_files", "pending_items")}


def run(wiki: Wiki, mode: str = "hybrid", defer: bool = False, query: str = QUERY):
    return retrieve(
        wiki, query, mode=mode, index=index_of(wiki), notify=lambda m: None,
        background=True, defer=defer,
    )  # fmt: skip


def twin(wiki: Wiki, where: Path) -> Wiki:
    """A copy of the wiki with its index: the same state, to be updated the old way."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(wiki.root, where, symlinks=True)
    return Wiki(where)


def settle(wiki: Wiki) -> None:
    deferred.wait_for_writes()
    FileLock(wiki.sidecar / "index.lock", timeout=30).acquire().release()


def edited(tmp_path: Path, rel: str, text: str):
    """A small indexed wiki, then one file edited and a deferring retrieve: (wiki, result)."""
    wiki = make(tmp_path)
    index_of(wiki).update()
    write(wiki.root, rel, text)
    return wiki, run(wiki, defer=True)


EDITS = ["append", "rewrite", "rename", "tags", "delete", "add", "broken", "empty"]


def apply(root: Path, edits: list[tuple[str, int]]) -> None:
    """Edits of memory/note-<i>.md: sections appended, rewritten, frontmatter changed, a
    file deleted, added, made invalid or empty."""
    for op, i in edits:
        path = root / f"memory/note-{i}.md"
        if op == "add" or (op != "delete" and not path.exists()):
            write(root, f"memory/note-{i}.md", f"zebracorn {TOPICS[i % len(TOPICS)]} {i}")
        elif op == "append":
            path.write_text(path.read_text() + f"\n## More {i}\n\nrelease zebracorn {i}.\n")
        elif op == "rewrite":
            write(root, f"memory/note-{i}.md", f"webhook release billing rewrite {i}")
        elif op == "rename":
            text = path.read_text().replace(f"name: note-{i}", f"name: zebracorn-{i}", 1)
            path.write_text(text)
        elif op == "tags":
            path.write_text(path.read_text().replace("---\n#", "tags: [billing, z9]\n---\n#", 1))
        elif op == "delete":
            path.unlink(missing_ok=True)
        elif op == "broken":
            path.write_text("---\nname: [unclosed\n---\nbody\n")
        else:
            path.write_bytes(b"")


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 13)), min_size=1, max_size=5),
    mode=st.sampled_from(["hybrid", "bm25"]),
)
def test_the_deferred_answer_is_the_written_index_answer(tmp_path_factory, edits, mode) -> None:
    base = tmp_path_factory.mktemp("defer")
    wiki = make(base)
    index_of(wiki).update()
    apply(wiki.root, edits)
    other = twin(wiki, base / "twin")
    now = run(wiki, mode, defer=True)
    written = run(other, mode)  # indexed first, under the lock: the old way
    assert answer(now) == answer(written)
    assert facts(now) == facts(written)
    assert now.mode == written.mode
    # the write lands, and the wiki then answers the same without laying anything over
    if now.write_later is not None:
        # Only a one-thread process forks: a daemon thread an earlier test left running
        # made this "background" after the sync and hook tests (2 runs of 2); it ends: wait.
        until = time.monotonic() + 60
        while threading.active_count() > 1 and time.monotonic() < until:
            time.sleep(0.05)
        others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        assert now.write_later() == "forked", others
        settle(wiki)
    again = run(wiki, mode, defer=True)
    assert again.write_later is None and again.index["updated_files"] == 0
    assert answer(again) == answer(written)
    mine, theirs = index_of(wiki).committed_state()[0], index_of(other).committed_state()[0]
    assert dict(mine.files.items()) == dict(theirs.files.items())
    assert list(mine.rows) == list(theirs.rows)


def test_the_child_holds_the_writer_lock_until_the_write_is_committed(tmp_path) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update()
    state_file = wiki.sidecar / "index" / "state.pkl"
    before = state_file.stat().st_mtime_ns
    write(wiki.root, "memory/note-3.md", "zebracorn billing edit")
    result = run(wiki, defer=True)
    assert result.results[0].path == "memory/note-3.md"
    assert state_file.stat().st_mtime_ns == before  # the answer came before any write
    assert result.write_later() == "forked"
    assert FileLock(wiki.sidecar / "index.lock").is_held_elsewhere()
    settle(wiki)
    state = index_of(wiki).committed_state()[0]
    entry = state.files["memory/note-3.md"]
    assert entry.sha256 == file_sha256(wiki.root / "memory/note-3.md")
    assert not deferred._CHILDREN  # reaped


def test_a_writer_killed_half_way_loses_nothing(tmp_path) -> None:
    wiki, result = edited(tmp_path, "memory/note-4.md", "zebracorn kill edit")
    assert result.write_later() == "forked"
    os.kill(deferred._CHILDREN[-1], signal.SIGKILL)
    deferred.wait_for_writes()
    assert not FileLock(wiki.sidecar / "index.lock").is_held_elsewhere()  # the OS released it
    again = run(wiki)  # finds the edit again and indexes it
    assert again.results[0].path == "memory/note-4.md"
    assert answer(again) == answer(run(twin(wiki, tmp_path / "twin")))
    assert run(wiki).index["updated_files"] == 0


def test_another_writer_at_work_gets_the_edit_from_the_next_command(tmp_path) -> None:
    wiki, result = edited(tmp_path, "memory/note-5.md", "zebracorn busy edit")
    lock = FileLock(wiki.sidecar / "index.lock")
    assert lock.try_acquire()
    try:
        assert result.write_later() == "none"
    finally:
        lock.release()
    again = run(wiki, defer=True)
    assert again.write_later is not None  # still to be written, and still in the answer
    assert again.results[0].path == "memory/note-5.md"


def test_a_sidecar_that_cannot_take_the_lock_still_answers(tmp_path, run_memwiki) -> None:
    """Bug: with the lock file unopenable (a read-only sidecar; here its name is a folder),
    retrieve printed the answer with the edit, then failed with exit 70 taking the lock."""
    wiki = make(tmp_path)
    index_of(wiki).update()
    lock = wiki.sidecar / "index.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    write(wiki.root, "memory/note-2.md", "zebracorn unlockable edit")
    env = {"HOME": str(tmp_path), "MEMWIKI_EMBED": "hash"}
    done = run_memwiki("--wiki", str(wiki.root), "retrieve", "zebracorn unlockable", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "## memory/note-2.md" in done.stdout.splitlines()  # the edit, in the answer
    again = run(wiki, defer=True)  # left to the next command, which finds the edit again
    assert again.write_later is not None
    assert again.results[0].path == "memory/note-2.md"


def test_a_commit_between_the_answer_and_the_write_is_kept(tmp_path) -> None:
    wiki, result = edited(tmp_path, "memory/note-6.md", "zebracorn first edit")
    write(wiki.root, "memory/note-7.md", "zebracorn second edit")
    index_of(wiki).update()  # another writer commits both edits meanwhile
    assert result.write_later() == "forked"
    settle(wiki)
    state = index_of(wiki).committed_state()[0]
    for rel in ("memory/note-6.md", "memory/note-7.md"):
        assert state.files[rel].sha256 == file_sha256(wiki.root / rel)
    assert answer(run(wiki)) == answer(run(twin(wiki, tmp_path / "twin")))


def test_many_edited_files_are_written_before_the_answer(tmp_path) -> None:
    wiki = make(tmp_path, n=deferred.MAX_FILES + 2)
    index_of(wiki).update()
    for i in range(deferred.MAX_FILES + 1):
        write(wiki.root, f"memory/note-{i}.md", f"zebracorn many {i}")
    result = run(wiki, defer=True)
    assert result.write_later is None
    assert result.index["updated_files"] == deferred.MAX_FILES + 1
    assert run(wiki).index["updated_files"] == 0


def test_a_threaded_caller_leaves_the_write_to_the_background_build(tmp_path) -> None:
    wiki, result = edited(tmp_path, "memory/note-8.md", "zebracorn thread edit")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        how = result.write_later()
    finally:
        stop.set()
        other.join()
    assert how == "background"
    from memwiki.index import background

    sha = file_sha256(wiki.root / "memory/note-8.md")
    until = time.monotonic() + 60
    while time.monotonic() < until:  # written by the background build, not by a retrieve
        if index_of(wiki).committed_state()[0].files["memory/note-8.md"].sha256 == sha:
            break
        time.sleep(0.1)
    assert index_of(wiki).committed_state()[0].files["memory/note-8.md"].sha256 == sha
    FileLock(background.lock_path(wiki.sidecar), timeout=60).acquire().release()
    reap_finished_children()


def reap_finished_children() -> None:
    """Reap the background build this process started (later tests count children)."""
    until = time.monotonic() + 30
    while time.monotonic() < until:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            time.sleep(0.05)


def test_the_forked_scan_of_a_large_wiki_defers_too(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(forkscan, "SPECULATE_MIN_FILES", 1)
    wiki, result = edited(tmp_path, "memory/note-9.md", "zebracorn speculative edit")
    assert result.write_later is not None
    expected = answer(run(twin(wiki, tmp_path / "twin")))
    assert answer(result) == expected
    assert result.write_later() == "forked"
    settle(wiki)
    assert run(wiki).index["updated_files"] == 0


def test_the_cli_answers_then_writes(tmp_path, run_memwiki) -> None:
    wiki = make(tmp_path)
    index_of(wiki).update()
    write(wiki.root, "memory/note-2.md", "zebracorn command edit")
    env = {"HOME": str(tmp_path), "MEMWIKI_EMBED": "hash"}
    done = run_memwiki("--wiki", str(wiki.root), "retrieve", "zebracorn command", env=env)
    assert done.returncode == 0, done.stderr
    first = [line for line in done.stdout.splitlines() if line.startswith("## ")][0]
    assert first == "## memory/note-2.md"  # the answer holds the edit
    settle(wiki)
    state = index_of(wiki).committed_state()[0]
    assert state.files["memory/note-2.md"].sha256 == file_sha256(wiki.root / "memory/note-2.md")
    assert (wiki.sidecar / "logs" / deferred.LOG_NAME).exists()


WORDS = st.text(
    alphabet=st.sampled_from("abc xyz éü 日本語 -_/.\n#0123456789"), min_size=0, max_size=60
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(WORDS, WORDS, WORDS, WORDS), min_size=1, max_size=6))
def test_the_memory_segment_holds_what_whoosh_writes(tmp_path_factory, texts) -> None:
    # Every posting list (ids, float32 weights) and length column of the in-memory
    # segment equals the one Whoosh's writer puts on disk for the same items.
    items = [
        Item(f"memory/f{n}.md", "memory", f"f{n}", desc, (tag,) if tag.strip() else (),
             heading, n + 1, n + 3, body)
        for n, (desc, tag, heading, body) in enumerate(texts)
    ]  # fmt: skip
    where = tmp_path_factory.mktemp("seg")
    bm25.create(where, items)
    searcher = bm25.open_searcher(where)
    try:
        reader = searcher.reader()
        (leaf, _) = bm25.leaf_readers(reader)[0]
        memory = MemorySegment(items)
        for field in (*bm25.FIELD_BOOSTS, "track"):
            terms = {t.decode() if isinstance(t, bytes) else t for t in reader.lexicon(field)}
            assert terms == {t for f, t in memory._postings if f == field}
            for term in terms:
                assert (
                    memory.memory_blocks(field, term).read()
                    == bm25_postings.blocks(leaf, field, term).read()
                )
            disk = bm25_postings.length_bytes(leaf, field)
            mine = memory.memory_lengths(field)
            assert (disk or b"").rstrip(b"\0") == (mine or b"").rstrip(b"\0")
        assert [memory.stored_fields(d)["id"] for d in range(len(items))] == [
            leaf.stored_fields(d)["id"] for d in range(leaf.doc_count_all())
        ]
    finally:
        searcher.close()


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_a_new_file_in_an_index_of_one_file(tmp_path, mode) -> None:
    wiki, _ = Wiki.init(tmp_path / "w")
    write(wiki.root, "memory/only.md", "billing only")
    index_of(wiki).update()
    write(wiki.root, "memory/zebracorn.md", "zebracorn release newcomer")
    (wiki.root / "memory/only.md").unlink()
    now = run(wiki, mode, defer=True)
    assert [r.path for r in now.results] == ["memory/zebracorn.md"]
    assert answer(now) == answer(run(twin(wiki, tmp_path / "twin"), mode))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
