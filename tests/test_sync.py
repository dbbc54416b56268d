"""memwiki sync, clone and remote on real repositories (bare remotes on disk, pygit2 and git)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.errors import NotFound, StateError
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki


def gitcli(root: Path, *args: str) -> str:
    """The git CLI, as a cross-check of what pygit2 wrote."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def bare(tmp_path: Path, name: str = "remote.git") -> Path:
    path = tmp_path / name
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def recall(name: str, body: str, description: str | None = None) -> str:
    desc = description or f"Notes about {name.replace('-', ' ')}"
    return f"---\nname: {name}\ndescription: {desc}\n---\n{body}"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def head(root: Path) -> str:
    return gitcli(root, "rev-parse", "HEAD").strip()


def seeded_remote(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[Path, Wiki]:
    """A bare remote holding a wiki pushed from tmp_path/seed (with files)."""
    remote = bare(tmp_path)
    seed, _ = Wiki.init(tmp_path / "seed")
    for rel, text in (files or {}).items():
        write(seed.root, rel, text)
    syncmod.add_remote(seed, str(remote))
    syncmod.sync(seed, load())
    return remote, seed


def clone_to(remote: Path, path: Path) -> Wiki:
    syncmod.clone(str(remote), path, load())
    return Wiki.open(path)


Y_ORIGINAL = (
    "# Deploys\n\nFirst paragraph: deploy the service from the main branch.\n\n"
    "Middle paragraph: the pipeline runs the tests.\n\nAnother middle paragraph.\n\n"
    "Last paragraph: roll back by redeploying the previous tag.\n"
)


# ------------------------------------------------------------------ acceptance 1


def test_acceptance_two_clones_converge_and_lose_nothing(tmp_path, cli, run_memwiki):
    remote, _ = seeded_remote(
        tmp_path,
        {
            "memory/y.md": recall("y", Y_ORIGINAL, "How deploys work"),
            "memory/z.md": recall("z", "Zebra crossings are painted white.\n"),
        },
    )
    a, b = tmp_path / "A", tmp_path / "B"
    assert cli("clone", remote, a)[0] == 0
    assert cli("clone", remote, b)[0] == 0
    # A creates X and edits the first paragraph of Y (hand edits, uncommitted).
    write(a, "memory/x.md", recall("x", "Xylophone lessons are on Fridays.\n"))
    y = read(a, "memory/y.md")
    write(a, "memory/y.md", y.replace("First paragraph: deploy", "First paragraph (A): canary"))
    # B edits the last paragraph, then the first one differently, and deletes Z.
    y = read(b, "memory/y.md").replace("Last paragraph: roll back", "Last paragraph (B): revert")
    y = y.replace("First paragraph: deploy", "First paragraph (B): blue-green")
    write(b, "memory/y.md", y)
    (b / "memory/z.md").unlink()

    results = []
    for where in (a, b, a):
        code, out, err = cli("--wiki", where, "sync", "--json")
        assert code == 0, err
        results.append(json.loads(out))
    assert results[0]["pushed"] and results[0]["committed"]
    assert results[1]["merged"] == "merge" and results[1]["pushed"]
    assert results[2]["merged"] == "fast-forward" and not results[2]["pushed"]
    (conflict,) = results[1]["conflicts"]
    assert conflict["path"] == "memory/y.md" and conflict["kind"] == "both-modified"
    copy = conflict["copy"]
    assert copy.startswith("memory/y.conflict-remote-") and copy.endswith(".md")

    # Same commit everywhere, checked with the git CLI.
    assert head(a) == head(b) == gitcli(remote, "rev-parse", "main").strip()
    for root in (a, b):
        assert gitcli(root, "status", "--porcelain") == ""
        assert (root / "memory/x.md").is_file()
        assert not (root / "memory/z.md").exists()
        kept, other = read(root, "memory/y.md"), read(root, copy)
        assert "First paragraph (B): blue-green" in kept  # B's own version stays at the path
        assert "Last paragraph (B): revert" in kept  # B's last-paragraph edit
        assert "First paragraph (A): canary" in other  # A's version beside it
        assert "conflict_of: memory/y" in other
    gitcli(remote, "fsck", "--no-progress")
    merge = gitcli(a, "log", "-1", "--format=%P%n%s", head(a)).splitlines()
    assert len(merge[0].split()) == 2 and merge[1] == "memwiki sync: merge origin/main"
    code, out, _ = cli("--wiki", a, "lint")
    assert code == 1 and "unresolved conflict copy of memory/y" in out

    def answers(root: Path, query: str, mode: str) -> list:
        done = run_memwiki("--wiki", root, "retrieve", query, "--mode", mode, "--json")
        assert done.returncode == 0, done.stderr
        return [(r["path"], r["score"], r["sections"]) for r in json.loads(done.stdout)["results"]]

    for query in ("deploy blue-green canary", "xylophone", "zebra crossings", "roll back revert"):
        assert answers(a, query, "bm25") == answers(b, query, "bm25")
    assert answers(a, "xylophone", "bm25")[0][0] == "memory/x.md"
    assert answers(a, "zebra crossings", "bm25") == []
    assert answers(a, "how do we deploy", "hybrid") == answers(b, "how do we deploy", "hybrid")


# ------------------------------------------------------------------ remotes and first push


def test_first_sync_pushes_to_an_empty_remote_and_sets_upstream(tmp_path, cli):
    remote = bare(tmp_path)
    root = tmp_path / "w"
    assert cli("init", root)[0] == 0
    code, out, _ = cli("--wiki", root, "remote", "add", remote)
    assert code == 0 and out == f"origin  {remote}\n"
    code, out, _ = cli("--wiki", root, "remote", "show", "--json")
    shown = json.loads(out)
    assert shown["remotes"] == [{"name": "origin", "url": str(remote)}]
    assert (shown["ahead"], shown["behind"]) == (None, None)
    code, out, err = cli("--wiki", root, "sync")
    assert code == 0, err
    assert "pushed    main to origin" in out
    assert gitcli(remote, "rev-parse", "main").strip() == head(root)
    assert gitcli(root, "rev-parse", "--abbrev-ref", "@{u}").strip() == "origin/main"
    again = syncmod.sync(Wiki.open(root), load())
    assert (again.merged, again.pushed, again.fetched, again.committed) == ("none", False, 0, None)
    code, out, _ = cli("--wiki", root, "remote", "show")
    assert "ahead 0, behind 0" in out


def test_file_url_remote_and_relative_path(tmp_path, monkeypatch):
    remote = bare(tmp_path)
    a, _ = Wiki.init(tmp_path / "a")
    syncmod.add_remote(a, remote.as_uri())
    write(a.root, "memory/one.md", recall("one", "One.\n"))
    assert syncmod.sync(a, load()).pushed
    monkeypatch.chdir(tmp_path)
    b = clone_to(Path("remote.git"), tmp_path / "b")  # a relative path is stored absolute
    assert b.repo.remotes["origin"].url == str(remote)
    assert read(b.root, "memory/one.md") == recall("one", "One.\n")


def test_remote_add_replaces_the_url_and_errors_are_one_line(tmp_path, cli, wiki):
    assert cli("--wiki", wiki.root, "remote", "add", tmp_path / "r1.git")[0] == 0
    code, out, _ = cli("--wiki", wiki.root, "remote", "add", tmp_path / "r2.git", "--json")
    assert json.loads(out) == {
        "name": "origin",
        "url": str(tmp_path / "r2.git"),
        "previous": str(tmp_path / "r1.git"),
    }
    code, out, err = cli("--wiki", wiki.root, "sync")
    assert code == 5 and err.count("\n") == 1 and "cannot fetch from" in err
    code, _, err = cli("--wiki", wiki.root, "sync", "--remote", "backup")
    assert code == 3 and "memwiki remote add URL" in err
    code, _, err = cli("--wiki", wiki.root, "remote", "add", "two words")
    assert code == 2


def test_remote_show_without_a_remote(wiki, cli):
    assert cli("--wiki", wiki.root, "remote", "show")[1] == (
        "No remote: add one with `memwiki remote add URL`\n"
    )


# ------------------------------------------------------------------ merging


def test_delete_on_one_side_and_edit_on_the_other_keeps_the_edit(tmp_path):
    remote, _ = seeded_remote(
        tmp_path,
        {"memory/w.md": recall("w", "Old W.\n"), "memory/v.md": recall("v", "Old V.\n")},
    )
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    (a.root / "memory/w.md").unlink()
    write(a.root, "memory/v.md", recall("v", "V edited on A.\n"))
    write(b.root, "memory/w.md", recall("w", "W edited on B.\n"))
    (b.root / "memory/v.md").unlink()
    syncmod.sync(a, load())
    result = syncmod.sync(b, load())
    kinds = {c.path: (c.kind, c.kept) for c in result.conflicts}
    assert kinds == {
        "memory/w.md": ("deleted-by-theirs", "ours"),
        "memory/v.md": ("deleted-by-ours", "theirs"),
    }
    syncmod.sync(a, load())
    for w in (a, b):
        assert read(w.root, "memory/w.md") == recall("w", "W edited on B.\n")
        assert read(w.root, "memory/v.md") == recall("v", "V edited on A.\n")
    assert head(a.root) == head(b.root)


def test_init_remote_onto_a_wiki_made_elsewhere_merges_both_histories(tmp_path):
    """Two histories with nothing in common: a device that never synced merges them (a
    remote replaced after a sync is refused instead: test_team_rewrite.py)."""
    remote, _ = seeded_remote(tmp_path, {"memory/far.md": recall("far", "From afar.\n")})
    near, _ = Wiki.init(tmp_path / "near")
    write(near.root, "memory/near.md", recall("near", "From here.\n"))
    syncmod.add_remote(near, str(remote))
    result = syncmod.sync(near, load())
    assert result.merged == "merge" and result.pushed and result.conflicts == []
    assert (near.root / "memory/far.md").is_file() and (near.root / "memory/near.md").is_file()
    assert gitcli(near.root, "status", "--porcelain") == ""


def test_push_refused_because_another_device_pushed_is_retried(tmp_path):
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    write(a.root, "memory/from-a.md", recall("from-a", "A.\n"))
    calls = []

    def other_device_pushes() -> None:
        calls.append(1)
        if len(calls) == 1:  # B pushes between A's fetch and A's push, once
            write(b.root, "memory/from-b.md", recall("from-b", "B.\n"))
            gitcli(b.root, "add", "-A")
            gitcli(b.root, "commit", "-q", "-m", "b")
            gitcli(b.root, "push", "-q", "origin", "main")

    result = syncmod.sync(a, load(), _before_push=other_device_pushes)
    assert (result.retries, result.pushed, result.merged, result.fetched) == (1, True, "merge", 1)
    assert len(calls) == 2
    assert gitcli(remote, "rev-parse", "main").strip() == head(a.root)
    files = gitcli(remote, "ls-tree", "-r", "--name-only", "main").split()
    assert {"memory/from-a.md", "memory/from-b.md"} <= set(files)


def test_a_remote_that_keeps_moving_gives_up_cleanly(tmp_path):
    remote, _ = seeded_remote(tmp_path)
    a, b = clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")
    write(a.root, "memory/mine.md", recall("mine", "Mine.\n"))
    counter = iter(range(100))

    def always_first() -> None:
        n = next(counter)
        write(b.root, f"memory/b{n}.md", recall(f"b{n}", "B.\n"))
        syncmod.sync(b, load())

    with pytest.raises(StateError, match="kept moving"):
        syncmod.sync(a, load(), _before_push=always_first)
    assert gitcli(a.root, "log", "--format=%s", "-n", "50").count("created memory/mine") == 1
    assert not (a.sidecar / "sync.json").exists()
    result = syncmod.sync(a, load())
    assert result.pushed and "memory/mine.md" in gitcli(remote, "ls-tree", "-r", "main")


def test_an_edit_made_during_the_merge_is_never_overwritten(tmp_path):
    remote, seed = seeded_remote(tmp_path, {"memory/n.md": recall("n", "one\n")})
    a = clone_to(remote, tmp_path / "a")
    write(seed.root, "memory/n.md", recall("n", "one\ntwo from the remote\n"))
    syncmod.sync(seed, load())

    def person_edits(step: str) -> None:
        if step == "merge-made":
            write(a.root, "memory/n.md", recall("n", "one\nhalf-typed by a person\n"))

    # The checkout refuses (nothing written); the edit is committed and merged instead.
    result = syncmod.sync(a, load(), _checkpoint=person_edits)
    assert result.committed and result.pushed and result.merged == "merge"
    texts = [read(a.root, "memory/n.md")] + [read(a.root, c.copy) for c in result.conflicts]
    assert any("half-typed by a person" in t for t in texts)
    assert any("two from the remote" in t for t in texts)


# ------------------------------------------------------------------ clone


def test_clone_to_the_configured_path_and_refuse_an_existing_one(
    tmp_path, cli, isolated_env, run_memwiki
):
    remote, _ = seeded_remote(tmp_path, {"memory/tea.md": recall("tea", "Green tea at 80C.\n")})
    code, out, err = cli("clone", remote)
    target = isolated_env / "memwiki"
    assert code == 0, err
    assert out == (
        f"Cloned {remote} into {target}\n"
        f"It is now the configured wiki ({isolated_env / '.config/memwiki/config.toml'})\n"
        "The first `memwiki retrieve` builds its index\n"
    )
    done = run_memwiki("retrieve", "green tea", "--mode", "bm25", "--files")
    assert done.stdout == "memory/tea.md\n"
    code, _, err = cli("clone", remote)
    assert code == 4 and "already exists" in err
    code, out, _ = cli("clone", remote, tmp_path / "second", "--json")
    data = json.loads(out)
    assert data["path"] == str(tmp_path / "second") and data["branch"] == "main"
    assert load().wiki_path == tmp_path / "second"


def test_clone_of_an_empty_remote_lays_out_a_wiki_that_sync_pushes(tmp_path):
    remote = bare(tmp_path)
    w = clone_to(remote, tmp_path / "w")
    assert (w.root / "memory").is_dir() and "/.memwiki/" in read(w.root, ".gitignore")
    assert syncmod.sync(w, load()).pushed
    assert gitcli(remote, "rev-parse", "main").strip() == head(w.root)


def test_clone_picks_main_when_the_remote_head_names_no_branch(tmp_path):
    remote, _ = seeded_remote(tmp_path, {"memory/k.md": recall("k", "K.\n")})
    gitcli(remote, "symbolic-ref", "HEAD", "refs/heads/master")
    w = clone_to(remote, tmp_path / "w")
    assert w.repo.head.shorthand == "main" and (w.root / "memory/k.md").is_file()
    assert gitcli(w.root, "rev-parse", "--abbrev-ref", "@{u}").strip() == "origin/main"


def test_a_failed_clone_leaves_nothing_behind(tmp_path, cli):
    code, _, err = cli("clone", tmp_path / "missing.git", tmp_path / "w")
    assert code == 5 and err.count("\n") == 1 and "cannot clone" in err
    assert not (tmp_path / "w").exists()
    assert not load().config_file.exists()


# ------------------------------------------------------------------ killed syncs (acceptance 6)

KILLER = """
import os, signal, sys
from pathlib import Path
from memwiki.git import sync
from memwiki.config import load
from memwiki.wiki import Wiki

def checkpoint(name):
    if name == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

sync.sync(Wiki.open(Path(sys.argv[1])), load(), _checkpoint=checkpoint)
"""


def _two_devices(tmp_path: Path) -> tuple[Path, Wiki, Wiki]:
    remote, _ = seeded_remote(tmp_path, {"memory/shared.md": recall("shared", "zero\n")})
    return remote, clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")


@pytest.mark.parametrize(
    "step", ["fetched", "committed", "merge-made", "checked-out", "ref-moved", "pushed"]
)
def test_sync_killed_at_each_step_then_run_again(tmp_path, step):
    remote, a, b = _two_devices(tmp_path)
    write(b.root, "memory/from-b.md", recall("from-b", "Pushed by B.\n"))
    syncmod.sync(b, load())
    write(a.root, "memory/from-a.md", recall("from-a", "Hand edit on A.\n"))
    write(a.root, "memory/shared.md", recall("shared", "zero\nedited on A\n"))
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(a.root), step], capture_output=True, text=True
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert read(a.root, "memory/from-a.md") == recall("from-a", "Hand edit on A.\n")
    assert read(a.root, "memory/shared.md") == recall("shared", "zero\nedited on A\n")
    result = syncmod.sync(a, load())
    assert result.conflicts == []
    # Finished, not redone: the hand edits became one commit and there is one merge.
    assert (result.committed is not None) == (step == "fetched")
    assert gitcli(a.root, "rev-list", "--merges", "--count", "HEAD").strip() == "1"
    syncmod.sync(b, load())
    for w in (a, b):
        assert read(w.root, "memory/from-a.md") == recall("from-a", "Hand edit on A.\n")
        assert read(w.root, "memory/from-b.md") == recall("from-b", "Pushed by B.\n")
        assert read(w.root, "memory/shared.md") == recall("shared", "zero\nedited on A\n")
        assert gitcli(w.root, "status", "--porcelain") == ""
    assert head(a.root) == head(b.root) == gitcli(remote, "rev-parse", "main").strip()
    assert not (a.sidecar / "sync.json").exists()


def _start_sync(command: list[str], journal: Path) -> tuple[subprocess.Popen, float]:
    """Start `memwiki sync`; return once its critical part began (it wrote its journal)."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if json.loads(journal.read_text())["pid"] == proc.pid:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.0005)
    return proc, time.monotonic()


def test_memwiki_sync_killed_at_random_moments_loses_nothing(tmp_path, run_memwiki):
    remote, a, b = _two_devices(tmp_path)
    command = [str(Path(sys.executable).parent / "memwiki"), "--wiki", str(a.root), "sync"]
    journal = a.sidecar / "sync.json"
    # How long the part after start-up takes, so kills land inside it.
    write(b.root, "memory/warm-up.md", recall("warm-up", "Warm up.\n"))
    syncmod.sync(b, load())
    proc, begun = _start_sync(command, journal)
    assert proc.wait() == 0
    body = time.monotonic() - begun
    rng = random.Random(6)
    expected_a: dict[str, str] = {}
    states = set()
    for n in range(16):
        write(b.root, f"memory/b{n}.md", recall(f"b{n}", f"B round {n}.\n"))
        syncmod.sync(b, load())
        expected_a[f"memory/a{n}.md"] = recall(f"a{n}", f"A round {n}.\n")
        write(a.root, f"memory/a{n}.md", expected_a[f"memory/a{n}.md"])
        expected_a["memory/shared.md"] = recall("shared", f"zero\nA round {n}\n")
        write(a.root, "memory/shared.md", expected_a["memory/shared.md"])
        proc, _ = _start_sync(command, journal)
        time.sleep((n + rng.random()) / 16 * 1.2 * body)  # spread over the whole sync
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for rel, text in expected_a.items():  # nothing A wrote is gone, killed or not
            assert read(a.root, rel) == text, (n, rel)
        states.add(
            (
                gitcli(a.root, "status", "--porcelain") == "",
                f"b{n}.md" in gitcli(a.root, "ls-tree", "-r", "--name-only", "HEAD"),
                f"a{n}.md" in gitcli(remote, "ls-tree", "-r", "--name-only", "main"),
            )
        )
    # Some kills cut a sync short and some came after it finished (each step is also killed
    # deterministically in test_sync_killed_at_each_step_then_run_again).
    assert len(states) >= 2, states
    done = run_memwiki("--wiki", a.root, "sync", "--json")
    assert done.returncode == 0, done.stderr
    syncmod.sync(b, load())
    for w in (a, b):
        for rel, text in expected_a.items():
            assert read(w.root, rel) == text
        for n in range(16):
            assert read(w.root, f"memory/b{n}.md") == recall(f"b{n}", f"B round {n}.\n")
        assert gitcli(w.root, "status", "--porcelain") == ""
        gitcli(w.root, "fsck", "--no-progress")
    assert head(a.root) == head(b.root) == gitcli(remote, "rev-parse", "main").strip()


def test_a_stale_git_lock_left_by_a_killed_sync_is_cleared(tmp_path, monkeypatch):
    from memwiki.git import gitlocks

    monkeypatch.setattr(gitlocks, "GIT_LOCK_WAIT_S", 0.3)  # how long a live git may hold it
    _, a, _ = _two_devices(tmp_path)
    started = time.time()
    a.sidecar.mkdir(exist_ok=True)
    (a.sidecar / "sync.json").write_text(json.dumps({"started": started, "pid": 1}))
    stale = Path(a.repo.path) / "refs/heads/main.lock"  # would block every commit
    stale.write_text("")
    older = Path(a.repo.path) / "refs/heads/other.lock"  # not made by that sync: spared
    older.write_text("")
    os.utime(older, (started - 3600, started - 3600))
    write(a.root, "memory/after.md", recall("after", "After the crash.\n"))
    result = syncmod.sync(a, load())
    assert result.pushed and not stale.exists() and older.exists()


HOLDER = """
import os, sys, time
lock = sys.argv[1]
fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
print("held", flush=True)
time.sleep(1.5)
print("intact" if os.path.exists(lock) else "deleted under me", flush=True)
os.close(fd)
os.unlink(lock) if os.path.exists(lock) else None
"""


def test_the_sync_after_a_killed_one_leaves_a_live_gits_lock_alone(tmp_path):
    """Bug: the sync after a killed one deleted every git lock made since that sync began,
    also one a live git held right then (a person's `git commit` running its hooks holds
    index.lock; memorize prepare creating its run branch holds that ref's lock)."""
    _, a, _ = _two_devices(tmp_path)
    a.sidecar.mkdir(exist_ok=True)
    (a.sidecar / "sync.json").write_text(json.dumps({"started": time.time() - 60, "pid": 1}))
    write(a.root, "memory/after.md", recall("after", "After the crash.\n"))
    lock = Path(a.repo.path) / "index.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        result = syncmod.sync(a, load())
    finally:
        out, _ = holder.communicate(timeout=30)
    assert out == "intact\n"
    assert result.pushed and "memory/after.md" in gitcli(a.root, "ls-files").split()
    assert not lock.exists() and not (a.sidecar / "sync.json").exists()


def test_a_ref_lock_left_in_a_local_remote_by_a_dead_push_blocks_nobody(tmp_path):
    remote, a, b = _two_devices(tmp_path)
    (remote / "refs/heads/main.lock").write_text("")  # a push killed mid-update left this
    write(b.root, "memory/after.md", recall("after", "After the crash.\n"))
    assert syncmod.sync(b, load()).pushed
    assert not (remote / "refs/heads/main.lock").exists()
    assert gitcli(remote, "rev-parse", "main").strip() == head(b.root)


def test_sync_needs_a_branch(tmp_path):
    remote = bare(tmp_path)
    w, _ = Wiki.init(tmp_path / "w")
    syncmod.add_remote(w, str(remote))
    w.repo.set_head(w.repo.head.target)  # detached
    with pytest.raises(StateError, match="detached"):
        syncmod.sync(w, load())
    with pytest.raises(NotFound):
        syncmod.sync(w, load(), remote="nowhere")


def test_init_with_remote_then_sync(tmp_path, cli):
    remote = bare(tmp_path)
    root = tmp_path / "w"
    code, out, _ = cli("init", root, "--remote", remote)
    assert code == 0
    assert out == (
        f"Initialised a memwiki wiki in {root}\n"
        f"It is now the configured wiki ({Path(os.environ['XDG_CONFIG_HOME'])}/memwiki/config.toml)\n"
        f"remote origin  {remote}  (`memwiki sync` pushes the wiki)\n"
    )
    assert gitcli(root, "remote", "get-url", "origin").strip() == str(remote)
    assert cli("--wiki", root, "sync")[0] == 0
    assert gitcli(remote, "rev-parse", "main").strip() == head(root)
    code, out, _ = cli("init", tmp_path / "j", "--remote", remote, "--json")
    assert json.loads(out)["remote"] == {"name": "origin", "url": str(remote), "previous": None}
    code, _, err = cli("init", tmp_path / "bad", "--remote", "not a url")
    assert code == 2 and not (tmp_path / "bad").exists()


@pytest.mark.parametrize("person_edited", [False, True])
def test_a_half_done_update_is_finished_or_its_files_kept(tmp_path, person_edited):
    remote, a, b = _two_devices(tmp_path)
    write(a.root, "memory/gone.md", recall("gone", "To be deleted by B.\n"))
    syncmod.sync(a, load())
    syncmod.sync(b, load())
    write(b.root, "memory/shared.md", recall("shared", "zero\none from B\n"))
    write(b.root, "memory/new.md", recall("new", "New from B.\n"))
    (b.root / "memory/gone.md").unlink()
    syncmod.sync(b, load())
    # A sync of A died half-way through its checkout of B's commit: only shared.md written.
    old = head(a.root)
    syncmod.fetch(a.repo, "origin", load())
    new = gitcli(a.root, "rev-parse", "origin/main").strip()
    a.sidecar.mkdir(exist_ok=True)
    update = {"ref": "refs/heads/main", "old": old, "new": new}
    (a.sidecar / "sync.json").write_text(json.dumps({"started": time.time()}))
    (a.sidecar / "update.json").write_text(json.dumps(update))  # memwiki/git/update.py
    text = "zero\nhalf-typed by a person\n" if person_edited else "zero\none from B\n"
    write(a.root, "memory/shared.md", recall("shared", text))
    result = syncmod.sync(a, load())
    assert gitcli(a.root, "status", "--porcelain") == ""
    assert read(a.root, "memory/new.md") == recall("new", "New from B.\n")
    assert not (a.root / "memory/gone.md").exists()
    if person_edited:  # never overwritten: committed, then merged with B's version
        assert result.committed and result.merged == "merge"
        assert read(a.root, "memory/shared.md") == recall("shared", text)
        (c,) = result.conflicts
        assert "one from B" in read(a.root, c.copy)
    else:  # finished as if never interrupted
        assert (result.committed, result.merged, result.pushed) == (None, "none", False)
        assert head(a.root) == new


@pytest.mark.parametrize("step", ["merge-made", "checked-out"])
def test_a_git_commit_by_hand_during_the_merge_is_never_undone(tmp_path, step):
    """Bug: sync merged onto the HEAD it had read, checked the merge out and set the branch
    to it; a person's `git commit` landing in between (sync holds memwiki's lock, not
    git's) was dropped from the branch, and the checkout put their file back as it was."""
    remote, a, b = _two_devices(tmp_path)
    write(b.root, "memory/from-b.md", recall("from-b", "Pushed by B.\n"))
    syncmod.sync(b, load())
    write(a.root, "memory/from-a.md", recall("from-a", "Hand edit on A.\n"))
    mine = recall("shared", "zero\ncommitted by hand on A\n")

    def person_commits(reached: str) -> None:
        if reached == step:  # before sync checks the merge out, or before it moves the branch
            write(a.root, "memory/shared.md", mine)
            gitcli(a.root, "commit", "-q", "-am", "by hand")

    with pytest.raises(StateError, match="the branch moved"):
        syncmod.sync(a, load(), _checkpoint=person_commits)
    assert read(a.root, "memory/shared.md") == mine
    assert "committed by hand" in gitcli(a.root, "show", "HEAD:memory/shared.md")
    result = syncmod.sync(a, load())  # the next sync merges it all
    assert result.pushed and result.conflicts == []
    syncmod.sync(b, load())
    for w in (a, b):
        assert read(w.root, "memory/shared.md") == mine
        assert read(w.root, "memory/from-a.md") == recall("from-a", "Hand edit on A.\n")
        assert read(w.root, "memory/from-b.md") == recall("from-b", "Pushed by B.\n")
        assert gitcli(w.root, "status", "--porcelain") == ""
    assert head(a.root) == head(b.root) == gitcli(remote, "rev-parse", "main").strip()
