"""Processes killed with SIGKILL at each checkpoint of prepare and commit, then recovered."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from test_memorize_support import (
    clean_status,
    git,
    make_wiki,
    merges,
    payload,
    recall,
    run_branches,
    run_python,
    worktree_count,
    write,
)

from memwiki import memorize
from memwiki.errors import StateError

# A child process that runs one memorize call and kills itself at the named checkpoint.
KILLER = """
import os, signal, sys
from pathlib import Path
from memwiki import memorize
from memwiki.wiki import Wiki

wiki_path, op, stop, *rest = sys.argv[1:]

def checkpoint(name):
    if name == stop:
        os.kill(os.getpid(), signal.SIGKILL)

wiki = Wiki.open(Path(wiki_path))
if op == "prepare":
    memorize.prepare(wiki, rest[1:], run_id=rest[0], _checkpoint=checkpoint)
else:
    memorize.commit(wiki, rest[0], _checkpoint=checkpoint)
print("not killed")
"""


def killed(*args: str) -> None:
    done = run_python(KILLER, *args)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr


@pytest.mark.parametrize("stop", ["state-written", "worktree-created", "files-written"])
def test_prepare_killed_half_way_is_incomplete_and_discardable(tmp_path, stop):
    wiki = make_wiki(tmp_path)
    session = payload(tmp_path, "s.json", ["hello"])
    killed(str(wiki.root), "prepare", stop, "half", str(session))
    (st,) = memorize.status(wiki)
    assert (st.run_id, st.state) == ("half", "incomplete")
    with pytest.raises(StateError, match="incomplete"):
        memorize.commit(wiki, "half")
    assert memorize.discard(wiki, "half").state == "incomplete"
    assert memorize.status(wiki) == []
    assert not (wiki.sidecar / "runs" / "half").exists()
    assert run_branches(wiki.root) == [] and worktree_count(wiki.root) == 1
    # the id is free again
    memorize.prepare(wiki, [session], run_id="half")


@pytest.mark.parametrize(
    "stop", ["run-committed", "hand-edits-committed", "merge-made", "merged", "recorded"]
)
def test_commit_killed_then_run_again_merges_exactly_once(tmp_path, stop):
    wiki = make_wiki(tmp_path, {"memory/notes.md": recall("notes", "one\ntwo\n")})
    run = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hello"])], run_id="crash")
    write(Path(run.workspace), "memory/new.md", recall("new", "From the run.\n"))
    write(wiki.root, "memory/notes.md", recall("notes", "one\ntwo\nthree by hand\n"))
    killed(str(wiki.root), "commit", stop, "crash")
    assert memorize.status(wiki, "crash")[0].state in ("edited", "committed")
    result = memorize.commit(wiki, "crash")
    assert result.created == ["memory/new.md"]
    # From merge-made on, the update is recorded (memwiki/git/update.py): it is finished.
    assert result.already_committed == (stop in ("merge-made", "merged", "recorded"))
    assert len(merges(wiki.root)) == 1
    assert git(wiki.root, "rev-parse", "HEAD").strip() == result.commit
    assert "three by hand" in (wiki.root / "memory/notes.md").read_text()
    assert (wiki.root / "memory/new.md").is_file()
    assert clean_status(wiki.root) == ""
    assert run_branches(wiki.root) == [] and worktree_count(wiki.root) == 1
    assert memorize.status(wiki)[0].state == "committed"
    # and once more, for good measure
    assert memorize.commit(wiki, "crash").already_committed
    assert len(merges(wiki.root)) == 1


def test_status_after_a_kill_between_merge_and_cleanup(tmp_path):
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hello"])], run_id="late")
    write(Path(run.workspace), "memory/new.md", recall("new", "From the run.\n"))
    killed(str(wiki.root), "commit", "merged", "late")
    (st,) = memorize.status(wiki)
    assert st.state == "committed" and "clean up" in st.detail
    assert run_branches(wiki.root) == ["memwiki/run/late"]
    assert memorize.commit(wiki, "late").already_committed
    assert run_branches(wiki.root) == []


def test_a_kill_between_checkout_and_ref_update_is_finished_without_a_second_merge(tmp_path):
    """Simulates the narrowest window: files already at the merge, the branch not moved yet."""
    wiki = make_wiki(tmp_path)
    run = memorize.prepare(wiki, [payload(tmp_path, "s.json", ["hello"])], run_id="narrow")
    write(Path(run.workspace), "memory/new.md", recall("new", "From the run.\n"))
    killed(str(wiki.root), "commit", "merge-made", "narrow")
    state = (wiki.sidecar / "runs" / "narrow" / "run.json").read_text()
    merge_commit = json.loads(state)["merge_commit"]
    git(wiki.root, "read-tree", "-u", "-m", "HEAD", merge_commit)  # the checkout, done by git
    result = memorize.commit(wiki, "narrow")
    assert result.commit == merge_commit and result.already_committed
    assert git(wiki.root, "rev-parse", "HEAD").strip() == merge_commit
    assert len(merges(wiki.root)) == 1 and clean_status(wiki.root) == ""


@pytest.mark.parametrize(
    "damage",
    [b"", b"\xff\xfe not json", b"[]", b'{"phase": "bogus"}', "sessions-int", "sessions-items"],
)
def test_a_damaged_run_state_is_listed_and_discarded_never_an_internal_error(tmp_path, damage):
    """Bugs: an unreadable run.json stopped `memorize status` for every run (exit 5) and
    left discard unable to remove the run (its worktree and branch stayed); a run.json of
    another shape ended status, commit and discard with an internal error (exit 70); a
    commit of an unknown phase ran anyway."""
    from memwiki.errors import StorageError

    wiki = make_wiki(tmp_path)
    session = payload(tmp_path, "s.json", ["hello"])
    memorize.prepare(wiki, [session], run_id="bad")
    memorize.prepare(wiki, [payload(tmp_path, "t.json", ["other"])], run_id="good")
    state = wiki.sidecar / "runs" / "bad" / "run.json"
    if isinstance(damage, bytes):
        state.write_bytes(damage)
    else:
        data = json.loads(state.read_text())
        data["sessions"] = 5 if damage == "sessions-int" else [5]
        state.write_text(json.dumps(data))
    listed = {s.run_id: s for s in memorize.status(wiki)}
    assert listed["good"].state == "prepared"
    assert listed["bad"].state == "incomplete" and "discard it" in listed["bad"].detail
    with pytest.raises(StorageError, match="memwiki memorize discard bad"):
        memorize.commit(wiki, "bad")
    assert memorize.discard(wiki, "bad").state == "incomplete"
    assert [s.run_id for s in memorize.status(wiki)] == ["good"]
    assert run_branches(wiki.root) == ["memwiki/run/good"] and worktree_count(wiki.root) == 2
