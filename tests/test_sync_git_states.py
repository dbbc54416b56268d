"""memwiki sync (and the commands that commit) against what people do with plain git.

Each test is a situation found by running two devices against a real bare remote: a
file on one device where the other has a folder, a merge or rebase the user left half
done, a rename into an invalid file with an edit. Real repositories, the real git CLI.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from test_sync import clone_to, gitcli, read, recall, seeded_remote, write
from test_sync_vault import forbid_a_word_and_install_the_hooks

from memwiki.config import load
from memwiki.errors import StateError
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki


def _devices(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[Path, Wiki, Wiki]:
    remote, _ = seeded_remote(tmp_path, files or {"memory/cats.md": recall("cats", "Purr.\n")})
    return remote, clone_to(remote, tmp_path / "a"), clone_to(remote, tmp_path / "b")


@pytest.mark.parametrize("file_side", ["syncs-second", "syncs-first"])
def test_a_file_where_the_other_device_has_a_folder_is_kept_as_a_copy(tmp_path, file_side):
    """Bug: the file was dropped from the merge (and from disk) as "deleted-by-theirs"."""
    _, a, b = _devices(tmp_path)
    with_file, with_folder = (b, a) if file_side == "syncs-second" else (a, b)
    write(with_file.root, "notes", "the file's own text\n")
    write(with_folder.root, "notes/inner.txt", "inside the folder\n")
    first, second = (a, b)
    syncmod.sync(first, load())
    result = syncmod.sync(second, load())
    (conflict,) = result.conflicts
    assert conflict.kind == "file-and-folder" and conflict.path == "notes"
    assert conflict.copy is not None and conflict.copy.startswith("notes.conflict-remote-")
    syncmod.sync(first, load())
    for w in (a, b):
        assert read(w.root, "notes/inner.txt") == "inside the folder\n"
        assert read(w.root, conflict.copy) == "the file's own text\n"
        assert gitcli(w.root, "status", "--porcelain") == ""
    assert conflict.copy in syncmod.sync(b, load()).conflict_copies


def _conflicting_pull(tmp_path: Path, rebase: bool) -> tuple[Wiki, Wiki]:
    """b has a commit that conflicts with a's synced edit and pulled it with plain git."""
    _, a, b = _devices(tmp_path)
    write(a.root, "memory/cats.md", recall("cats", "Purr on A.\n"))
    syncmod.sync(a, load())
    write(b.root, "memory/cats.md", recall("cats", "Purr on B.\n"))
    gitcli(b.root, "commit", "-qam", "B's edit")
    how = "--rebase" if rebase else "--no-rebase"
    pulled = subprocess.run(
        ["git", "pull", how, "origin", "main"], cwd=b.root, capture_output=True, text=True
    )
    assert pulled.returncode != 0  # git stopped on the conflict
    return a, b


@pytest.mark.parametrize("rebase", [False, True], ids=["merge", "rebase"])
def test_nothing_commits_while_the_user_is_mid_merge_or_rebase(tmp_path, rebase, cli):
    """Bug: sync, commit and add failed with an internal error (exit 70), or during a
    rebase said the HEAD was detached; add left its new file staged."""
    _, b = _conflicting_pull(tmp_path, rebase)
    before = gitcli(b.root, "rev-parse", "HEAD")
    what = "a rebase" if rebase else "a merge"
    with pytest.raises(StateError, match=f"git has {what} in progress"):
        syncmod.sync(b, load())
    with pytest.raises(StateError, match=f"git has {what} in progress"):
        b.commit()
    code, _, err = cli("--wiki", b.root, "add", "memory", "otters", "-d", "Otters")
    assert code == 4 and f"git has {what} in progress" in err and "Traceback" not in err
    assert not (b.root / "memory/otters.md").exists()
    assert gitcli(b.root, "rev-parse", "HEAD") == before
    from memwiki import doctor

    (git_check,) = [c for c in doctor.run_checks(load({"wiki": str(b.root)})) if c.name == "git"]
    assert not git_check.ok and what in git_check.detail
    # The user finishes it with plain git; then memwiki carries on.
    write(b.root, "memory/cats.md", recall("cats", "Purr on A and on B.\n"))
    gitcli(b.root, "add", "memory/cats.md")
    if rebase:
        subprocess.run(
            ["git", "-c", "core.editor=true", "rebase", "--continue"], cwd=b.root, check=True
        )
    else:
        gitcli(b.root, "commit", "-qm", "merged by hand")
    assert syncmod.sync(b, load()).pushed
    assert read(b.root, "memory/cats.md") == recall("cats", "Purr on A and on B.\n")


def test_a_merge_left_uncommitted_is_not_committed_as_a_plain_edit(tmp_path):
    """Bug: sync committed a `git merge --no-commit` as a one-parent "hand edits" commit
    and left MERGE_HEAD behind."""
    _, a, b = _devices(tmp_path)
    write(a.root, "memory/cats.md", recall("cats", "Purr.\n\nMore from A.\n"))
    syncmod.sync(a, load())
    write(b.root, "memory/dogs.md", recall("dogs", "Woof.\n"))
    gitcli(b.root, "add", "memory/dogs.md")
    gitcli(b.root, "commit", "-qm", "dogs")
    gitcli(b.root, "fetch", "-q")
    gitcli(b.root, "merge", "--no-commit", "--no-ff", "origin/main")
    before = gitcli(b.root, "rev-parse", "HEAD")
    with pytest.raises(StateError, match="git has a merge in progress"):
        syncmod.sync(b, load())
    assert gitcli(b.root, "rev-parse", "HEAD") == before
    gitcli(b.root, "commit", "-qm", "merge")
    assert syncmod.sync(b, load()).pushed
    assert len(gitcli(b.root, "log", "-1", "--format=%P").split()) == 2


@pytest.mark.parametrize("pre_commit_on_path", [True, False])
def test_sync_runs_the_installed_hooks_with_this_memwiki_when_it_is_not_on_path(
    tmp_path, monkeypatch, pre_commit_on_path
):
    """Bugs: with memwiki run by its full path (not on PATH), the lint hook could not start
    and sync reported every valid edit as refused by it; with pre-commit off PATH (the hook
    still works for `git commit`, through the Python it was installed with) sync skipped
    the hooks' checks."""
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "pre-commit").exists():
        pytest.skip("pre-commit is not installed beside this Python")
    only = tmp_path / "only-pre-commit"
    only.mkdir()
    (only / "pre-commit").symlink_to(venv_bin / "pre-commit")
    path = f"{only}:/usr/bin:/bin" if pre_commit_on_path else "/usr/bin:/bin"
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    remote, a, _ = _devices(tmp_path)
    forbid_a_word_and_install_the_hooks(a, venv_bin)
    monkeypatch.setenv("PATH", path)
    write(a.root, "memory/fine.md", recall("fine", "All good.\n"))
    write(a.root, "memory/secret.md", recall("secret", "This is FORBIDDEN here.\n"))
    result = syncmod.sync(a, load())
    assert [p["path"] for p in result.not_committed] == ["memory/secret.md"]
    assert "no FORBIDDEN words" in result.not_committed[0]["problem"]
    names = gitcli(remote, "ls-tree", "-r", "--name-only", "main")
    assert "memory/fine.md" in names and "memory/secret.md" not in names


def test_a_rename_into_an_invalid_name_with_an_edit_keeps_the_old_name_on_the_remote(tmp_path):
    """Bug: the old name's deletion was held back only when the renamed file was byte for
    byte the old one; renamed *and edited*, the deletion was pushed and the other device
    lost the note while the new file stayed uncommitted here."""
    _, a, b = _devices(
        tmp_path, {"memory/cats.md": recall("cats", "Purr.\n\nThey sleep a lot.\n\nNaps.\n")}
    )
    old = b.root / "memory/cats.md"
    new = b.root / "memory/felines.md"  # its name: is still "cats", so it is invalid
    new.write_text(old.read_text() + "\nMore about cats.\n")
    old.unlink()
    result = syncmod.sync(b, load())
    assert [p["path"] for p in result.not_committed] == ["memory/felines.md"]
    syncmod.sync(a, load())
    assert (a.root / "memory/cats.md").is_file()
    # Unrelated deletions still sync.
    write(b.root, "memory/dogs.md", recall("dogs", "Woof.\n"))
    syncmod.sync(b, load())
    (b.root / "memory/dogs.md").unlink()
    syncmod.sync(b, load())
    syncmod.sync(a, load())
    assert not (a.root / "memory/dogs.md").exists() and (a.root / "memory/cats.md").is_file()


def test_an_unreachable_remote_says_why(tmp_path, cli):
    """Bug: only git's last "fatal:" line was kept, the generic "Could not read from remote
    repository.", and ssh's "Connection refused" or git's "does not appear to be a git
    repository" before it was lost."""
    import shutil
    import socket

    w, _ = Wiki.init(tmp_path / "w")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cases = [(str(tmp_path / "nowhere.git"), "does not appear to be a git repository")]
    if shutil.which("ssh"):
        cases.append((f"ssh://someone@127.0.0.1:{port}/w.git", "Connection refused"))
    for url, why in cases:
        assert cli("--wiki", w.root, "remote", "add", url)[0] == 0
        code, _, err = cli("--wiki", w.root, "sync")
        assert code == 5 and why in err and err.count("\n") == 1, err


def test_a_wiki_joining_a_remote_whose_only_branch_is_master_syncs_with_master(tmp_path):
    """Bug: sync pushed a separate `main` beside the remote's `master` ("merged nothing new
    from the remote"), while `memwiki clone` of the same remote checked out `master`: the
    two devices never exchanged an edit."""
    remote = tmp_path / "remote.git"
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "master", str(remote))
    seed, _ = Wiki.init(tmp_path / "seed")
    write(seed.root, "memory/old.md", recall("old", "From master.\n"))
    seed.commit()
    gitcli(seed.root, "push", "-q", str(remote), "HEAD:refs/heads/master")
    w, _ = Wiki.init(tmp_path / "w")
    write(w.root, "memory/new.md", recall("new", "From the new device.\n"))
    syncmod.add_remote(w, str(remote))
    result = syncmod.sync(w, load())
    assert result.merged == "merge" and result.pushed
    assert read(w.root, "memory/old.md") == recall("old", "From master.\n")
    assert gitcli(remote, "branch", "--format=%(refname:short)").split() == ["master"]
    other = clone_to(remote, tmp_path / "other")
    assert (other.root / "memory/new.md").is_file()


def test_restore_in_a_shallow_clone_says_the_history_is_missing(tmp_path, cli):
    """Bug: in a `git clone --depth 1` copy, restore said the file "did not exist before" the
    shallow cut-off commit, which only looks like its creation."""
    remote, seed = seeded_remote(tmp_path, {"memory/cats.md": recall("cats", "One.\n")})
    write(seed.root, "memory/cats.md", recall("cats", "Two.\n"))
    syncmod.sync(seed, load())
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{remote}", str(shallow)], check=True
    )
    code, _, err = cli("--wiki", shallow, "restore", "memory/cats")
    assert code == 4 and "git fetch --unshallow" in err, err
    gitcli(shallow, "fetch", "-q", "--unshallow")
    code, _, err = cli("--wiki", shallow, "restore", "memory/cats")
    assert code == 0, err
    assert read(shallow, "memory/cats.md") == recall("cats", "One.\n")


DOGS = "Dogs bark.\nLine two.\nLine three.\nLine four.\n"


@pytest.mark.parametrize("renamer_syncs", ["second", "first"])
def test_a_rename_against_an_edit_of_the_same_lines_keeps_the_rename_and_copies_the_edit(
    tmp_path, renamer_syncs
):
    """Bug: both files were kept, the old name brought back with the other side's edit and
    the renamed file reported as "deleted-by-theirs": two copies of one note, unflagged."""
    _, a, b = _devices(tmp_path, {"memory/dogs.md": recall("dogs", DOGS)})
    (b.root / "memory/dogs.md").unlink()
    write(b.root, "memory/hounds.md", recall("hounds", DOGS.replace("Dogs bark", "Hounds bay")))
    write(a.root, "memory/dogs.md", recall("dogs", DOGS.replace("Dogs bark", "Dogs bark loudly")))
    first, second = (a, b) if renamer_syncs == "second" else (b, a)
    syncmod.sync(first, load())
    result = syncmod.sync(second, load())
    (conflict,) = result.conflicts
    assert conflict.kind == "renamed-and-edited" and conflict.path == "memory/hounds.md"
    assert conflict.kept == ("ours" if renamer_syncs == "second" else "theirs")
    assert conflict.copy is not None and conflict.copy.startswith("memory/hounds.conflict-")
    syncmod.sync(first, load())
    for w in (a, b):
        assert not (w.root / "memory/dogs.md").exists()
        assert "Hounds bay" in read(w.root, "memory/hounds.md")
        copy = read(w.root, conflict.copy)
        assert "Dogs bark loudly" in copy and "conflict_of: memory/hounds" in copy


def test_naming_what_does_not_exist_is_exit_3(tmp_path, cli):
    """Bug: `remote show --name nope` printed `remote: null` and `project /nonexistent`
    "no project", both with exit 0, where `sync --remote nope` is exit 3."""
    w, _ = Wiki.init(tmp_path / "w")
    assert cli("--wiki", w.root, "remote", "add", tmp_path / "r.git")[0] == 0
    code, _, err = cli("--wiki", w.root, "remote", "show", "--name", "nope")
    assert code == 3 and "no remote named 'nope' (remotes: origin)" in err
    assert cli("--wiki", w.root, "remote", "show")[0] == 0
    code, _, err = cli("project", tmp_path / "nowhere")
    assert code == 3 and "no such directory" in err


def _renamed_differently(tmp_path):
    """Devices a and b: each renamed cats.md, a to felines.md (synced), b to kitties.md."""
    _, a, b = _devices(tmp_path, {"memory/cats.md": recall("cats", DOGS)})
    (a.root / "memory/cats.md").unlink()
    write(a.root, "memory/felines.md", recall("felines", DOGS))
    (b.root / "memory/cats.md").unlink()
    write(b.root, "memory/kitties.md", recall("kitties", DOGS + "More from B.\n"))
    syncmod.sync(a, load())
    return a, b


def test_a_note_renamed_differently_on_two_devices_keeps_one_name_and_a_copy(tmp_path):
    """Bug: both new names were kept as two notes, each reported as "deleted-by-...",
    and nothing (no conflict copy, no lint problem) pointed at the duplicate."""
    a, b = _renamed_differently(tmp_path)
    result = syncmod.sync(b, load())
    (conflict,) = result.conflicts
    assert (conflict.kind, conflict.path, conflict.kept) == (
        "renamed-differently",
        "memory/kitties.md",
        "ours",
    )
    assert conflict.copy is not None and conflict.copy.startswith("memory/kitties.conflict-")
    syncmod.sync(a, load())
    for w in (a, b):
        names = {p.name for p in (w.root / "memory").glob("*.md")}
        assert names == {"kitties.md", PurePosixPath(conflict.copy).name}
        assert "More from B." in read(w.root, "memory/kitties.md")
        assert "conflict_of: memory/kitties" in read(w.root, conflict.copy)


def test_obsidian_templates_sync_like_any_file(tmp_path):
    """An Obsidian template (`name: {{title}}`) in the Templates plugin's folder is not a
    RecallFile: sync commits and pushes it instead of holding it back as invalid."""
    remote, a, b = _devices(tmp_path)
    write(a.root, ".obsidian/templates.json", '{"folder": "Templates"}')
    write(a.root, "Templates/note.md", "---\nname: {{title}}\ndescription:\n---\n# {{title}}\n")
    result = syncmod.sync(a, load())
    assert result.not_committed == [] and result.pushed
    syncmod.sync(b, load())
    assert read(b.root, "Templates/note.md").startswith("---\nname: {{title}}")


def test_a_folder_moved_and_edited_against_an_edit_inside_it_merges_as_git_does(tmp_path):
    """Bug: libgit2 stopped looking for renames past a few hundred added and deleted files,
    so 520 notes moved into a folder and edited on one device, against an edit of one of
    them on the other, merged as a deletion against an edit: the note twice (old path, new
    path), one with each device's change. git merges it as a rename (merge.renameLimit)."""
    lines = "".join(f"line {j} of this note, with a few words\n" for j in range(20))
    files = {f"memory/n{i:04d}.md": recall(f"n{i:04d}", lines) for i in range(520)}
    _, a, b = _devices(tmp_path, files)
    for i in range(520):
        old = b.root / f"memory/n{i:04d}.md"
        write(b.root, f"memory/old/n{i:04d}.md", old.read_text() + "moved and edited on b\n")
        old.unlink()
    syncmod.sync(b, load())
    write(a.root, "memory/n0001.md", read(a.root, "memory/n0001.md").replace("line 10", "LINE TEN"))
    result = syncmod.sync(a, load())
    assert result.conflicts == []
    assert not (a.root / "memory/n0001.md").exists()  # not left behind at the old path
    merged = read(a.root, "memory/old/n0001.md")
    assert "LINE TEN" in merged and merged.endswith("moved and edited on b\n")


def test_sync_names_the_other_devices_new_name_of_a_note_renamed_differently(tmp_path, cli):
    """Bug: the report named the kept note and the copy, never the name the other device
    chose, so nobody could tell that `felines` was ever wanted (`other_name`)."""
    a, b = _renamed_differently(tmp_path)
    code, out, err = cli("--wiki", b.root, "sync")
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("conflict")]
    assert "memory/kitties.md -> memory/kitties.conflict-" in line
    assert line.endswith("(renamed differently: theirs named it memory/felines.md)")
