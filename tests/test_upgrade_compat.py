"""Indexes written by older memwiki versions: rebuilt with a line that says so, not "damaged".

Found by running memwiki of 2026-11-30 (bf4a340, index format 6: the manifest pickled as
memwiki.index.state.State, a module that no longer exists) and then the current code on
the same wiki: it answered correctly after a rebuild but announced
"index damaged (unreadable manifest (ModuleNotFoundError))". The old on-disk state is built
here by pickling a class under the old module's name, not taken from git history.
"""

from __future__ import annotations

import pickle
import shutil
import sys
import types

from test_index_segments import big_wiki, hash_cfg

from memwiki import markdown
from memwiki.index import columns, manifest
from memwiki.index.indexer import Index
from memwiki.wiki import Wiki


def _old_state_pickle() -> bytes:
    """state.pkl as a format-6 memwiki wrote it: a State of module memwiki.index.state."""
    module = types.ModuleType("memwiki.index.state")

    class State:  # the old class, by name; its fields do not matter to the reader
        pass

    State.__module__ = module.__name__
    State.__qualname__ = "State"
    module.State = State  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        old = State()
        old.format = 6  # type: ignore[attr-defined]
        old.files = {"memory/a.md": ("sha", 1, 2)}  # type: ignore[attr-defined]
        return pickle.dumps(old, protocol=4)
    finally:
        del sys.modules[module.__name__]


def _rebuild_messages(tmp_path, write_old) -> tuple[list[str], Index]:
    wiki = big_wiki(tmp_path / "w", files=5)
    Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
    write_old(wiki.sidecar / "index" / "state.pkl")
    messages: list[str] = []
    index = Index(wiki, hash_cfg(wiki.root), notify=messages.append)
    index.update()
    return messages, index


def test_an_index_of_a_memwiki_whose_classes_are_gone_is_rebuilt_as_older_not_damaged(tmp_path):
    messages, index = _rebuild_messages(tmp_path, lambda p: p.write_bytes(_old_state_pickle()))
    rebuilt = [m for m in messages if "rebuilding" in m]
    assert rebuilt == ["index written by another memwiki version; rebuilding it"], messages
    assert not any("damaged" in m for m in messages)
    assert len(index.snapshot().state.rows) > 0


def test_an_older_and_a_newer_format_say_which(tmp_path):
    for fmt, word in ((10, "older"), (manifest.FORMAT + 1, "newer")):

        def write_old(path, fmt=fmt):
            state = manifest.load(path)
            state.format = fmt
            manifest.save(path, state)

        messages, _ = _rebuild_messages(tmp_path / str(fmt), write_old)
        expected = (
            f"index written by an {word} memwiki (index format {fmt}, now {manifest.FORMAT}); "
            "rebuilding it"
        ) if word == "older" else (
            f"index written by a {word} memwiki (index format {fmt}, now {manifest.FORMAT}); "
            "rebuilding it"
        )  # fmt: skip
        assert [m for m in messages if "rebuilding" in m] == [expected], messages


def test_garbage_is_still_called_damaged(tmp_path):
    messages, _ = _rebuild_messages(tmp_path, lambda p: p.write_bytes(b"\x80\x04garbage"))
    assert [m for m in messages if "rebuilding" in m] == [
        "index damaged (unreadable manifest (UnpicklingError)); rebuilding it"
    ], messages


BOARD = "---\nkanban-plugin: basic\nname: board\ndescription: the board\n---\n\n## Todo\n\n- [ ] zebrafish migration\n"


def _drop_plugins_from_header(base_path) -> None:
    """The base as a memwiki before 2026-12-07 15:44 wrote it: no "plugins" in its header."""
    data = base_path.read_bytes()
    magic = len(columns.MAGIC)
    start = int.from_bytes(data[magic : magic + 8], "little")
    header = pickle.loads(data[magic + 8 : start])
    del header["plugins"]
    old = pickle.dumps(header, protocol=pickle.HIGHEST_PROTOCOL)
    # pickle.loads ignores bytes past the end: the columns stay where they were
    base_path.write_bytes(data[: magic + 8] + old.ljust(start - magic - 8, b"\0") + data[start:])


def _rebuilt(wiki: Wiki, clone):
    shutil.copytree(wiki.root, clone, ignore=shutil.ignore_patterns(".memwiki"))
    return Wiki(clone)


def _facts(wiki: Wiki):
    """What a reader sees: rows, file entries, the indexed count, an answer's files."""
    state = Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update().state
    files = {rel: (e.sha256, e.problem, e.meta, e.plugin) for rel, e in state.files.items()}
    rows = sorted((r.path, r.heading, r.sha) for r in state.rows)
    hits = [r.path for r in wiki.retrieve("zebrafish migration", mode="bm25").results]
    return rows, files, state.indexed_files(), hits


def test_a_plugin_note_an_older_memwiki_indexed_is_left_out_after_the_upgrade(
    tmp_path, monkeypatch
):
    # Found by running memwiki 64bf2a0 on a wiki with a Kanban board, then this one: the board
    # stayed the top answer for its words (a rebuild leaves it out) and doctor counted a
    # drawing as a file "not indexed: missing 'name'", until each file was next edited.
    wiki = big_wiki(tmp_path / "w", files=5)
    (wiki.root / "memory" / "board.md").write_text(BOARD)
    with monkeypatch.context() as m:
        m.setattr(markdown, "plugin_note", lambda fm_text: None)  # the older reader
        Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
    index_dir = wiki.sidecar / "index"
    state = manifest.load(index_dir / "state.pkl")
    assert "memory/board.md" in {r.path for r in state.rows}
    assert "memory/board.md" in _facts(wiki)[3]  # the older index answers with the board
    _drop_plugins_from_header(index_dir / str(state.base))

    messages: list[str] = []
    fresh = Index(wiki, hash_cfg(wiki.root), notify=messages.append).update().state
    assert "memory/board.md" not in {r.path for r in fresh.rows}
    assert fresh.files["memory/board.md"].plugin == "a Kanban board"
    assert not any("rebuilding" in m for m in messages), messages
    assert _facts(wiki) == _facts(_rebuilt(wiki, tmp_path / "rebuilt"))
    # Done once: the next reader does not look again (plugins_checked is in state.pkl).
    again = manifest.load(index_dir / "state.pkl")
    assert again.plugins_checked and not again.recheck_plugins


def test_the_plugin_check_is_done_once_not_again_after_every_update(tmp_path):
    # Found by `make bench`: plugins_checked was not carried into the state an update
    # writes, so after every edit the next reader read the head of every file again
    # (a no-change retrieve at 50,000 files took 1.2 s instead of 0.3 s).
    wiki = big_wiki(tmp_path / "w", files=30)
    Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
    index_dir = wiki.sidecar / "index"
    state = manifest.load(index_dir / "state.pkl")
    _drop_plugins_from_header(index_dir / str(state.base))
    assert manifest.load(index_dir / "state.pkl").recheck_plugins  # an older base: look once
    Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
    for n in range(3):  # edits that write a delta, not a new base
        note = wiki.root / "memory" / f"f{n:03d}.md"
        note.write_text(note.read_text() + f"\nmore {n}\n")
        Index(wiki, hash_cfg(wiki.root), notify=lambda m: None).update()
        again = manifest.load(index_dir / "state.pkl")
        assert again.base_data is not None and not again.base_data.plugins_known
        assert again.plugins_checked and not again.recheck_plugins
