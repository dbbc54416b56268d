"""Sync of wikis as people keep them: Obsidian vaults, forge-made remotes, junk files, invalid
hand edits, renames, and `memwiki clone` killed half-way. Real repositories on disk."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki


def gitcli(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def recall(name: str, body: str, description: str | None = None) -> str:
    desc = description or f"Notes about {name}"
    return f"---\nname: {name}\ndescription: {desc}\n---\n{body}"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def bare(tmp_path: Path, name: str = "remote.git") -> Path:
    path = tmp_path / name
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def tracked(root: Path) -> list[str]:
    return gitcli(root, "ls-files").splitlines()


def two_devices(tmp_path: Path) -> tuple[Path, Wiki, Wiki]:
    remote = bare(tmp_path)
    seed, _ = Wiki.init(tmp_path / "seed")
    write(seed.root, "memory/shared.md", recall("shared", "zero\n"))
    syncmod.add_remote(seed, str(remote))
    syncmod.sync(seed, load())
    a = tmp_path / "a"
    b = tmp_path / "b"
    syncmod.clone(str(remote), a, load())
    syncmod.clone(str(remote), b, load())
    return remote, Wiki.open(a), Wiki.open(b)


WORKSPACE_A = '{"main": {"active": "memory/shared.md"}, "device": "A"}\n'
WORKSPACE_B = '{"main": {"active": "memory/other.md"}, "device": "B"}\n'


# ------------------------------------------------------------------ Obsidian


def test_init_and_clone_write_the_obsidian_safe_gitignore(tmp_path, cli):
    vault = tmp_path / "vault"
    write(vault, ".obsidian/app.json", "{}\n")
    write(vault, ".obsidian/workspace.json", WORKSPACE_A)
    write(vault, "notes.md", "# A note\n")
    gitcli(tmp_path, "init", "-q", "-b", "main", str(vault))  # an existing vault in git
    gitcli(vault, "add", "notes.md")
    gitcli(vault, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "vault")
    assert cli("init", vault, "--force")[0] == 0
    lines = (vault / ".gitignore").read_text().splitlines()
    for entry in (
        "/.memwiki/",
        ".obsidian/workspace*.json",
        ".obsidian/cache",
        ".trash/",
        ".DS_Store",
        "*.swp",
        "*~",
    ):
        assert entry in lines
    for junk in (".DS_Store", "memory/x.md.swp", "memory/x.md~", ".trash/old.md"):
        write(vault, junk, "junk\n")
    write(vault, ".obsidian/workspace-mobile.json", WORKSPACE_B)
    assert cli("--wiki", vault, "commit")[0] == 0
    files = tracked(vault)
    assert ".obsidian/app.json" in files  # settings are shared, the per-device state is not
    assert not [f for f in files if "workspace" in f or f.endswith(("~", ".swp", ".DS_Store"))]
    assert not [f for f in files if f.startswith((".trash/", ".memwiki/"))]
    # A second init changes nothing; clone writes the same lines.
    assert cli("init", vault, "--force")[0] == 0
    assert (vault / ".gitignore").read_text().splitlines() == lines


def test_two_devices_with_obsidian_open_never_conflict_in_dot_folders(tmp_path):
    _, a, b = two_devices(tmp_path)
    for w, state in ((a, WORKSPACE_A), (b, WORKSPACE_B)):
        write(w.root, ".obsidian/workspace.json", state)
        write(w.root, ".obsidian/app.json", '{"theme": "dark"}\n')
    syncmod.sync(a, load())
    result = syncmod.sync(b, load())
    syncmod.sync(a, load())
    assert result.conflict_copies == [] and result.conflicts == []
    for w, state in ((a, WORKSPACE_A), (b, WORKSPACE_B)):
        assert (w.root / ".obsidian/workspace.json").read_text() == state
        assert ".obsidian/workspace.json" not in tracked(w.root)
        assert ".obsidian/app.json" in tracked(w.root)
        assert not list((w.root / ".obsidian").glob("*.conflict-*"))


def test_a_tracked_workspace_file_local_wins_then_doctor_and_untrack(tmp_path, cli, run_memwiki):
    _, a, b = two_devices(tmp_path)
    # A wiki from before these .gitignore lines: workspace.json was committed.
    write(a.root, ".obsidian/workspace.json", WORKSPACE_A)
    gitcli(a.root, "add", "-f", ".obsidian/workspace.json")
    gitcli(a.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old")
    syncmod.sync(a, load())
    syncmod.sync(b, load())
    write(a.root, ".obsidian/workspace.json", WORKSPACE_A.replace("A", "A2"))
    write(b.root, ".obsidian/workspace.json", WORKSPACE_B)
    syncmod.sync(a, load())
    result = syncmod.sync(b, load())
    (c,) = result.conflicts
    assert (c.path, c.kept, c.copy) == (".obsidian/workspace.json", "ours", None)
    assert (b.root / ".obsidian/workspace.json").read_text() == WORKSPACE_B  # local wins
    assert not list((b.root / ".obsidian").glob("*.conflict-*"))
    # A's version is in history: the merge's second parent.
    theirs = gitcli(b.root, "show", "HEAD^2:.obsidian/workspace.json")
    assert theirs == WORKSPACE_A.replace("A", "A2")
    assert cli("--wiki", b.root, "lint")[0] == 0
    # doctor names the tracked ignored file and the command; the command keeps it on disk.
    done = run_memwiki("--wiki", b.root, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert not checks["tracked"]["ok"]
    assert ".obsidian/workspace.json" in checks["tracked"]["detail"]
    assert "memwiki untrack-ignored" in checks["tracked"]["detail"]
    assert checks["remote"]["ok"] and "branch main present" in checks["remote"]["detail"]
    code, out, _ = cli("--wiki", b.root, "untrack-ignored")
    assert code == 0 and "untracked .obsidian/workspace.json  (kept on disk)" in out
    assert (b.root / ".obsidian/workspace.json").read_text() == WORKSPACE_B
    assert ".obsidian/workspace.json" not in tracked(b.root)
    syncmod.sync(b, load())
    syncmod.sync(a, load())  # A receives the deletion: its own file stays on disk
    assert (a.root / ".obsidian/workspace.json").read_text() == WORKSPACE_A.replace("A", "A2")
    assert ".obsidian/workspace.json" not in tracked(a.root)
    assert gitcli(a.root, "status", "--porcelain") == ""


# ------------------------------------------------------------------ conflict copies anywhere


def test_a_forge_remote_with_a_readme_gives_a_copy_that_lint_and_sync_list(tmp_path, cli):
    remote = bare(tmp_path)
    forge = tmp_path / "forge"
    gitcli(tmp_path, "clone", "-q", str(remote), str(forge))
    write(forge, "README.md", "# my-wiki\n\nCreated on the forge.\n")
    gitcli(forge, "add", "README.md")
    gitcli(forge, "-c", "user.name=f", "-c", "user.email=f@f", "commit", "-qm", "Initial commit")
    gitcli(forge, "push", "-q", "origin", "HEAD:main")
    root = tmp_path / "w"
    assert cli("init", root, "--remote", remote)[0] == 0
    code, out, err = cli("--wiki", root, "sync")
    assert code == 0, err
    (copy,) = [p.name for p in root.glob("README.conflict-remote-*.md")]
    assert f"conflict  README.md -> {copy}" in out
    assert "memwiki lint" in err
    code, out, _ = cli("--wiki", root, "lint")
    assert code == 1 and f"{copy}:1: unresolved conflict copy of README.md" in out
    code, out, _ = cli("--wiki", root, "sync", "--json")
    assert json.loads(out)["conflict_copies"] == [copy]


# ------------------------------------------------------------------ what sync commits


def test_sync_never_commits_the_sidecar_even_when_git_was_told_to(tmp_path):
    _, a, _ = two_devices(tmp_path)
    (a.root / ".gitignore").write_text("")  # the advice of an old, killed clone: no ignore lines
    a.sidecar.mkdir(exist_ok=True)
    (a.sidecar / "wiki.lock").write_text("")
    gitcli(a.root, "add", "-f", ".memwiki")  # and someone ran `git add -f .memwiki`
    write(a.root, "memory/new.md", recall("new", "New.\n"))
    syncmod.sync(a, load())
    assert not [f for f in tracked(a.root) if f.startswith(".memwiki")]
    for commit in gitcli(a.root, "rev-list", "HEAD").split():
        tree = gitcli(a.root, "ls-tree", "-r", "--name-only", commit)
        assert ".memwiki/" not in tree


def test_invalid_hand_edits_stay_uncommitted_and_valid_ones_sync(tmp_path, cli):
    remote, a, b = two_devices(tmp_path)
    write(a.root, "memory/good.md", recall("good", "Fine.\n"))
    write(a.root, "memory/bad.md", "---\nname: bad\n---\nNo description.\n")
    write(a.root, "memory/broken.md", "---\nname: [unclosed\ndescription: x\n---\n")
    code, out, err = cli("--wiki", a.root, "sync")
    assert code == 0, err
    assert "not committed  memory/bad.md: line" in out and "description" in out
    assert "not committed  memory/broken.md" in out
    assert "invalid RecallFiles were not committed" in err
    on_remote = gitcli(remote, "ls-tree", "-r", "--name-only", "main")
    assert "memory/good.md" in on_remote and "memory/bad.md" not in on_remote
    assert "memory/broken.md" not in on_remote
    assert (a.root / "memory/bad.md").is_file()  # still there, for the person to fix
    code, out, _ = cli("--wiki", a.root, "sync", "--json")
    assert [p["path"] for p in json.loads(out)["not_committed"]] == [
        "memory/bad.md",
        "memory/broken.md",
    ]
    write(a.root, "memory/bad.md", recall("bad", "Fixed.\n"))
    (a.root / "memory/broken.md").unlink()
    code, out, _ = cli("--wiki", a.root, "sync", "--json")
    assert json.loads(out)["not_committed"] == []
    assert "memory/bad.md" in gitcli(remote, "ls-tree", "-r", "--name-only", "main")


def test_a_hand_rename_is_reported_as_a_rename(tmp_path, cli):
    remote, a, _ = two_devices(tmp_path)
    os.rename(a.root / "memory/shared.md", a.root / "memory/common.md")
    write(a.root, "memory/common.md", recall("common", "zero\n"))
    code, out, _ = cli("--wiki", a.root, "sync")
    assert code == 0 and "renamed   memory/shared.md -> memory/common.md" in out
    subject = gitcli(a.root, "log", "-1", "--format=%s", "HEAD").strip()
    assert subject == "memwiki: renamed memory/shared -> memory/common"
    code, out, _ = cli("--wiki", a.root, "log", "--json")
    first = json.loads(out)[0]["changes"]
    assert first == [{"status": "renamed", "path": "memory/common.md", "from": "memory/shared.md"}]


def test_restore_finds_the_version_before_an_edit_across_a_rename(tmp_path, cli):
    remote, a, b = two_devices(tmp_path)
    original = recall("shared", "zero\nline two\nline three\nline four\n")
    write(a.root, "memory/shared.md", original)
    syncmod.sync(a, load())
    syncmod.sync(b, load())
    os.rename(a.root / "memory/shared.md", a.root / "memory/moved.md")  # A renames it
    held = syncmod.sync(a, load())  # its name no longer matches: both halves stay uncommitted
    assert [p["path"] for p in held.not_committed] == ["memory/moved.md"]
    assert "memory/shared.md" in gitcli(a.root, "ls-tree", "-r", "--name-only", "HEAD")
    renamed = original.replace("name: shared", "name: moved")
    write(a.root, "memory/moved.md", renamed)
    assert syncmod.sync(a, load()).changes[0].status == "renamed"
    edited = original.replace("line four", "line four, edited on B")
    write(b.root, "memory/shared.md", edited)  # B edits it under its old name
    result = syncmod.sync(b, load())
    assert result.conflicts == []
    both = renamed.replace("line four", "line four, edited on B")
    assert (b.root / "memory/moved.md").read_text() == both
    assert not (b.root / "memory/shared.md").exists()
    code, out, err = cli("--wiki", b.root, "restore", "memory/moved", "--json")
    assert code == 0, err
    # The last change on B was the merge, which renamed it: B's version before it, found
    # under the old name (without the rename's history it "did not exist before").
    assert (b.root / "memory/moved.md").read_text() == edited
    # On A, whose history has the rename but not the edit, restore goes back past the rename.
    code, _, err = cli("--wiki", a.root, "restore", "memory/moved")
    assert code == 0, err
    assert (a.root / "memory/moved.md").read_text() == original


# ------------------------------------------------------------------ clone


CLONER = """
import sys
from pathlib import Path
from memwiki.config import load
from memwiki.git import remotes
remotes.clone(sys.argv[1], Path(sys.argv[2]), load())
"""


def test_clone_killed_at_random_moments_leaves_nothing_half_made(tmp_path, run_memwiki):
    remote = bare(tmp_path)
    seed, _ = Wiki.init(tmp_path / "seed")
    for n in range(300):
        write(seed.root, f"memory/n{n}.md", recall(f"n{n}", f"Note {n}.\n" * 20))
    syncmod.add_remote(seed, str(remote))
    syncmod.sync(seed, load())
    target = tmp_path / "clone"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", CLONER, str(remote), str(target)], check=True)
    whole = time.monotonic() - started
    expected = tracked(target)
    outcomes = set()
    for n in range(6):
        subprocess.run(["rm", "-rf", str(target)], check=True)
        proc = subprocess.Popen([sys.executable, "-c", CLONER, str(remote), str(target)])
        time.sleep(whole * (0.15 + n * 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if target.exists():  # renamed into place only when complete
            assert tracked(target) == expected
            assert gitcli(target, "status", "--porcelain") == ""
            outcomes.add("complete")
        else:
            outcomes.add("absent")
    assert "absent" in outcomes, outcomes
    # The next clone cleans up what a killed one left, and succeeds.
    subprocess.run(["rm", "-rf", str(target)], check=True)
    leftovers = list(tmp_path.glob(".clone.clone-*"))
    done = run_memwiki("clone", remote, target)
    assert done.returncode == 0, done.stderr
    assert tracked(target) == expected
    assert not [p for p in leftovers if p.exists()]
    assert not list(tmp_path.glob(".clone.clone-*"))


def test_clone_installs_the_wikis_pre_commit_hooks_or_says_how(tmp_path, run_memwiki):
    remote = bare(tmp_path)
    seed, _ = Wiki.init(tmp_path / "seed")
    syncmod.add_remote(seed, str(remote))
    syncmod.sync(seed, load())
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "pre-commit").exists():
        pytest.skip("pre-commit is not installed beside this Python")
    path = f"{venv_bin}:{os.environ.get('PATH', '')}"
    done = run_memwiki("clone", remote, tmp_path / "with", "--json", env={"PATH": path})
    assert done.returncode == 0, done.stderr
    assert "pre-commit installed" in json.loads(done.stdout)["hooks"]
    assert (tmp_path / "with/.git/hooks/pre-commit").is_file()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(subprocess.check_output(["which", "git"], text=True).strip())
    done = run_memwiki("clone", remote, tmp_path / "without", env={"PATH": str(bin_dir)})
    assert done.returncode == 0, done.stderr
    assert "pre-commit is not installed" in done.stderr and "memwiki hooks install" in done.stderr


def test_a_sidecar_another_device_committed_never_reaches_this_one(tmp_path):
    remote, a, b = two_devices(tmp_path)
    # B ran an old tool that committed its sidecar, and pushed with plain git.
    write(b.root, ".memwiki/sync.json", '{"from": "B"}\n')
    gitcli(b.root, "add", "-f", ".memwiki/sync.json")
    gitcli(b.root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "old tool")
    gitcli(b.root, "push", "-q", "origin", "main")
    a.sidecar.mkdir(exist_ok=True)
    (a.sidecar / "mine.txt").write_text("A's own\n")
    write(a.root, "memory/from-a.md", recall("from-a", "A.\n"))
    result = syncmod.sync(a, load())
    assert result.pushed and result.merged == "merge"
    assert (a.sidecar / "mine.txt").read_text() == "A's own\n"
    assert (
        not (a.sidecar / "sync.json").exists()
        or "from" not in (a.sidecar / "sync.json").read_text()
    )
    for root in (a.root, remote):
        names = gitcli(root, "ls-tree", "-r", "--name-only", "HEAD" if root == a.root else "main")
        assert ".memwiki/" not in names
    assert "Left out: .memwiki/" in gitcli(a.root, "log", "-1", "--format=%B")


def forbid_a_word_and_install_the_hooks(wiki: Wiki, venv_bin: Path) -> None:
    """The wiki's own hook config plus a team rule (no "FORBIDDEN" in any note), committed
    and installed with the pre-commit beside this Python."""
    config = (wiki.root / ".pre-commit-config.yaml").read_text()
    config += (
        "      - id: no-forbidden\n"
        "        name: no FORBIDDEN words\n"
        "        entry: FORBIDDEN\n"
        "        language: pygrep\n"
        "        files: \\.md$\n"
    )
    (wiki.root / ".pre-commit-config.yaml").write_text(config)
    wiki.commit()
    subprocess.run([str(venv_bin / "pre-commit"), "install"], cwd=wiki.root, check=True,
                   capture_output=True)  # fmt: skip


def test_installed_pre_commit_hooks_check_what_sync_commits(tmp_path, monkeypatch):
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "pre-commit").exists():
        pytest.skip("pre-commit is not installed beside this Python")
    monkeypatch.setenv("PATH", f"{venv_bin}:{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    remote, a, _ = two_devices(tmp_path)
    forbid_a_word_and_install_the_hooks(a, venv_bin)
    write(a.root, "memory/fine.md", recall("fine", "All good.\n"))
    write(a.root, "memory/secret.md", recall("secret", "This is FORBIDDEN here.\n"))
    result = syncmod.sync(a, load())
    (refused,) = result.not_committed
    assert refused["path"] == "memory/secret.md"
    assert "pre-commit hooks refused it" in refused["problem"]
    names = gitcli(remote, "ls-tree", "-r", "--name-only", "main")
    assert "memory/fine.md" in names and "memory/secret.md" not in names
    assert (a.root / "memory/secret.md").is_file()


def test_server_messages_reach_the_summary_and_doctor_names_a_broken_remote(
    tmp_path, cli, run_memwiki
):
    remote, a, _ = two_devices(tmp_path)
    hook = remote / "hooks" / "post-receive"
    hook.write_text("#!/bin/sh\necho 'Thanks: CI will index this push.' >&2\n")
    hook.chmod(0o755)
    write(a.root, "memory/note.md", recall("note", "Note.\n"))
    code, out, _ = cli("--wiki", a.root, "sync")
    assert code == 0 and "remote:   Thanks: CI will index this push." in out
    assert cli("--wiki", a.root, "remote", "add", tmp_path / "gone.git")[0] == 0
    done = run_memwiki("--wiki", a.root, "doctor")
    assert done.returncode == 1
    (line,) = [ln for ln in done.stdout.splitlines() if " remote " in ln]
    assert line.startswith("FAIL  remote     origin ") and f"cannot reach {tmp_path}" in line


def test_a_killed_clones_folder_is_removed_though_its_pid_went_to_another_process(
    tmp_path, run_memwiki
):
    """Bug: a killed clone's temporary folder was judged by its pid alone, and kept for as
    long as another process (after a reboot, on a busy machine) had that pid. The clone's
    lock, released when it dies, tells."""
    remote = bare(tmp_path)
    seed, _ = Wiki.init(tmp_path / "seed")
    syncmod.add_remote(seed, str(remote))
    syncmod.sync(seed, load())
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        left = tmp_path / f".w.clone-{other.pid}"  # a killed clone's, the pid now other's
        (left / "memory").mkdir(parents=True)
        (tmp_path / f".w.clone-{other.pid}.lock").write_text("")
        running = tmp_path / f".w.clone-{os.getpid()}"  # a clone that runs: its lock held
        running.mkdir()
        held = os.open(tmp_path / f".w.clone-{os.getpid()}.lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(held, fcntl.LOCK_EX)
        done = run_memwiki("clone", remote, tmp_path / "w")
        assert done.returncode == 0, done.stderr
        assert not left.exists() and not (tmp_path / f".w.clone-{other.pid}.lock").exists()
        assert running.is_dir()
        os.close(held)
        assert sorted(p.name for p in tmp_path.glob(".w.clone-*")) == [
            running.name,
            f"{running.name}.lock",
        ]
    finally:
        other.kill()
        other.wait()
