"""Indexes written by older memwiki versions: rebuilt with a line that says so, not "damaged".

Found by running memwiki of 2026-11-30 (bf4a340, index format 6: the manifest pickled as
memwiki.index.state.State, a module that no longer exists) and then the current code on
the same wiki: it answered correctly after a rebuild but announced
"index damaged (unreadable manifest (ModuleNotFoundError))". The old on-disk state is built
here by pickling a class under the old module's name, not taken from git history.
"""

from __future__ import annotations

import pickle
import sys
import types

from test_index_segments import big_wiki, hash_cfg

from memwiki.index import manifest
from memwiki.index.indexer import Index


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
