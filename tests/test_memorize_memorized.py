"""Which sessions were memorized: read from history and run records in proportion to what changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_memorize_support import git, make_wiki, payload, recall, write

from memwiki import memorize
from memwiki.errors import StateError
from memwiki.memorize.memorized import cache_path, memorized_sessions


def trailer_commit(wiki, name: str, *sessions: str) -> str:
    """A real commit on the wiki's branch whose message names sessions, as a run's merge does."""
    write(wiki.root, f"memory/{name}.md", f"---\nname: {name}\ndescription: d\n---\nx\n")
    git(wiki.root, "add", "-A")
    message = f"memorize: merge run {name}\n\nMemwiki-Sessions: {', '.join(sessions)}\n"
    git(wiki.root, "commit", "-qm", message)
    return git(wiki.root, "rev-parse", "--short=7", "HEAD").strip()


def whole(wiki) -> dict[str, str]:
    """What a read without the cache finds (the reference the cached read must equal)."""
    cache_path(wiki.sidecar).unlink(missing_ok=True)
    return memorized_sessions(wiki)


def test_new_commits_are_read_on_top_of_the_cache_and_old_ones_are_not_walked(tmp_path):
    wiki = make_wiki(tmp_path)
    wiki.sidecar.mkdir(exist_ok=True)
    first = trailer_commit(wiki, "one", "payload:aaa", "payload:bbb")
    assert memorized_sessions(wiki) == {
        "payload:aaa": f"in commit {first}",
        "payload:bbb": f"in commit {first}",
    }
    cache = json.loads(cache_path(wiki.sidecar).read_text())
    assert cache["head"] == git(wiki.root, "rev-parse", "HEAD").strip()
    # Mark the cached entry: if the next read walked the old commit again, it would say so.
    cache["history"]["payload:aaa"] = "in commit marked!"
    cache_path(wiki.sidecar).write_text(json.dumps(cache))
    second = trailer_commit(wiki, "two", "payload:bbb", "payload:ccc")
    found = memorized_sessions(wiki)
    assert found == {
        "payload:aaa": "in commit marked!",  # from the cache: the old commit was not read
        "payload:bbb": f"in commit {second}",  # the newest mention wins, as in a whole read
        "payload:ccc": f"in commit {second}",
    }
    assert {k: v for k, v in whole(wiki).items() if k != "payload:aaa"} == {
        k: v for k, v in found.items() if k != "payload:aaa"
    }


@pytest.mark.parametrize("how", ["reset", "rebase", "damaged-cache", "unknown-head"])
def test_a_rewritten_history_or_a_bad_cache_is_read_whole(tmp_path, how):
    wiki = make_wiki(tmp_path)
    wiki.sidecar.mkdir(exist_ok=True)
    trailer_commit(wiki, "one", "payload:aaa")
    trailer_commit(wiki, "two", "payload:bbb")
    assert set(memorized_sessions(wiki)) == {"payload:aaa", "payload:bbb"}
    if how == "reset":  # the commit naming bbb is gone: bbb is not memorized any more
        git(wiki.root, "reset", "-q", "--hard", "HEAD~1")
    elif how == "rebase":  # both commits rewritten, the second one dropped
        git(wiki.root, "reset", "-q", "--hard", "HEAD~2")
        trailer_commit(wiki, "other", "payload:aaa")
    elif how == "damaged-cache":
        cache_path(wiki.sidecar).write_text('{"format": 1, "head": 7}')
    else:  # a cache from another clone: its head is no commit of this repository
        cache = json.loads(cache_path(wiki.sidecar).read_text())
        cache["head"] = "0" * 40
        cache["history"]["payload:zzz"] = "in commit 0000000"
        cache_path(wiki.sidecar).write_text(json.dumps(cache))
    found = memorized_sessions(wiki)
    rewritten = how in ("reset", "rebase")
    assert set(found) == ({"payload:aaa"} if rewritten else {"payload:aaa", "payload:bbb"})
    assert found == whole(wiki)


def test_committed_run_records_are_cached_and_a_discard_or_a_new_run_of_the_same_id_is_seen(
    tmp_path,
):
    wiki = make_wiki(tmp_path)
    s1, s2 = payload(tmp_path, "1.json", ["one"]), payload(tmp_path, "2.json", ["two"])
    run = memorize.prepare(wiki, [s1], run_id="same")
    sid1 = json.loads((wiki.sidecar / "runs" / "same" / "run.json").read_text())["sessions"][0][
        "source_id"
    ]
    assert memorized_sessions(wiki) == {sid1: "in the open run same"}
    result = memorize.commit(wiki, run.run_id)  # changed nothing: only the record knows
    assert result.commit is None
    assert memorized_sessions(wiki) == {sid1: "by run same"}
    assert "same" in json.loads(cache_path(wiki.sidecar).read_text())["runs"]
    assert memorized_sessions(wiki) == {sid1: "by run same"}  # from the cache
    shutil.rmtree(wiki.sidecar / "runs" / "same")  # by hand, as discard would
    assert memorized_sessions(wiki) == {}
    memorize.prepare(wiki, [s1], run_id="same")  # the same id again: not the cached record
    assert memorized_sessions(wiki) == {sid1: "in the open run same"}
    memorize.prepare(wiki, [s2], run_id="later")
    with pytest.raises(StateError, match="already memorized"):
        memorize.prepare(wiki, [s2])


def test_a_wiki_without_a_sidecar_gets_none_made_for_the_cache(tmp_path):
    wiki = make_wiki(tmp_path)
    shutil.rmtree(wiki.sidecar, ignore_errors=True)
    trailer_commit(wiki, "one", "payload:aaa")
    assert set(memorized_sessions(wiki)) == {"payload:aaa"}
    assert not wiki.sidecar.exists()


def test_status_opens_only_the_records_changed_since_the_cache_and_says_the_same(
    tmp_path, monkeypatch
):
    """Bug: `memorize status` read every run record on every call (~250 ms at 3,000)."""
    from memwiki.memorize import runstate

    wiki = make_wiki(tmp_path)
    for i, rid in enumerate(("a", "b", "c")):
        run = memorize.prepare(wiki, [payload(tmp_path, f"{rid}.json", [rid])], run_id=rid)
        if i < 2:  # c changes nothing: a record without a commit
            write(Path(run.workspace), f"memory/{rid}.md", recall(rid, f"From {rid}.\n"))
        memorize.commit(wiki, rid)
    memorize.prepare(wiki, [payload(tmp_path, "d.json", ["d"])], run_id="d")  # open; caches
    opened = []
    real = runstate.load_state
    monkeypatch.setattr(runstate, "load_state", lambda d: opened.append(d.name) or real(d))
    cached = [s.to_dict() for s in memorize.status(wiki)]
    assert opened == ["d"] and [s["state"] for s in cached] == ["committed"] * 3 + ["prepared"]
    # a record rewritten since (a new file, as every save is) is read again, not trusted
    state = real(wiki.sidecar / "runs" / "b")
    state.updated_files = ["memory/other.md"]
    runstate.save_state(wiki.sidecar / "runs" / "b", state)
    opened.clear()
    after = [s.to_dict() for s in memorize.status(wiki)]
    assert opened == ["b", "d"] and "memory/other.md" in after[1]["changed"]
    cache_path(wiki.sidecar).unlink()
    assert [s.to_dict() for s in memorize.status(wiki)] == after
    assert len(opened) == 2 + 4 and not cache_path(wiki.sidecar).exists()  # status writes nothing


def test_status_lists_the_runs_beside_a_symbolic_link_in_the_runs_folder(tmp_path):
    """Bug: a link in .memwiki/runs/ (to any folder) ended `memorize status` for every run
    with `refused run id 'elsewhere'` (exit 2): it was listed as a run, then refused."""
    wiki = make_wiki(tmp_path)
    memorize.prepare(wiki, [payload(tmp_path, "a.json", ["a"])], run_id="a")
    (tmp_path / "other").mkdir()
    (wiki.sidecar / "runs" / "elsewhere").symlink_to(tmp_path / "other")
    assert [(s.run_id, s.state) for s in memorize.status(wiki)] == [("a", "prepared")]


def test_a_prepare_that_checks_nothing_keeps_the_summary_status_reads(tmp_path, monkeypatch):
    """Bug: only a checking `memorize prepare` wrote memorized.json; `bridge prepare` (what
    the scheduled job runs) never did, so status kept opening every committed record."""
    from memwiki.memorize import prepare_sessions, runstate
    from memwiki.memorize.schema import load_sessions

    wiki = make_wiki(tmp_path)
    for rid in ("a", "b", "c"):  # as bridge prepare opens runs: no memorized check
        sessions = load_sessions([payload(tmp_path, f"{rid}.json", [rid])])
        run = prepare_sessions(wiki, sessions, run_id=rid)
        if rid != "c":
            write(Path(run.workspace), f"memory/{rid}.md", recall(rid, f"From {rid}.\n"))
            memorize.commit(wiki, rid)
    opened = []
    real = runstate.load_state
    monkeypatch.setattr(runstate, "load_state", lambda d: opened.append(d.name) or real(d))
    assert [s.state for s in memorize.status(wiki)] == ["committed", "committed", "prepared"]
    assert opened == ["c"]
