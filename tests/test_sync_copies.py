"""Other sync tools' conflict copies (Dropbox, Syncthing, iCloud) in a wiki that git syncs.

Two devices on a real bare remote: a copy is never committed as a new file, anywhere in
the wiki; sync names each one with the file it copies; once merged and deleted it is gone
on every device.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from memwiki.config import load
from memwiki.git import sync as syncmod
from memwiki.wiki import Wiki

DROPBOX = "memory/deploys (Ann's conflicted copy 2026-12-01).md"
SYNCTHING = "memory/deploys.sync-conflict-20261201-101010-ABCDEFG.md"
ICLOUD = "memory/deploys 2.md"
ROOT_COPY = "README (conflicted copy).md"
PICTURE = "attachments/diagram (conflicted copy).png"
BARE_SYNCTHING = "attachments/Makefile.sync-conflict-20261201-101010-ABCDEFG"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def note(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Notes about {name}\n---\n{body}"


def write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def devices(tmp_path: Path) -> tuple[Path, Wiki, Wiki]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed, _ = Wiki.init(tmp_path / "seed")
    write(seed.root, "memory/deploys.md", note("deploys", "Deploy from main.\n"))
    write(seed.root, "attachments/diagram.png", b"\x89PNG one")
    write(seed.root, "attachments/Makefile", "all:\n")
    syncmod.add_remote(seed, str(remote))
    syncmod.sync(seed, load())
    for name in ("a", "b"):
        syncmod.clone(str(remote), tmp_path / name, load())
    return remote, Wiki.open(tmp_path / "a"), Wiki.open(tmp_path / "b")


def tracked(root: Path, ref: str = "HEAD") -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", "-z", ref).split("\0")) - {""}


def test_other_tools_copies_are_held_back_named_and_gone_once_resolved(tmp_path, cli):
    remote, a, b = devices(tmp_path)
    # A: a hand edit, the copies three sync tools made of it, copies outside the tracks,
    # and two files whose names only look numbered (each one a file of its own).
    write(a.root, "memory/deploys.md", note("deploys", "Deploy from main. Edited on A.\n"))
    copies = {
        DROPBOX: note("deploys", "Dropbox's version.\n"),
        SYNCTHING: note("deploys", "Syncthing's version.\n"),
        ICLOUD: note("deploys", "iCloud's version.\n"),
        ROOT_COPY: "# The README as the other device had it\n",
        PICTURE: b"\x89PNG two",
        BARE_SYNCTHING: "all: other\n",
    }
    for rel, text in copies.items():
        write(a.root, rel, text)
    write(a.root, "Meeting 2.md", "A note of its own.\n")
    write(a.root, "Meeting.md", "Another.\n")
    write(a.root, "memory/release-2.md", note("release-2", "The second release.\n"))

    code, out, err = cli("--wiki", a.root, "sync", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["pushed"]
    # Never committed, here or on the remote; the files on disk untouched.
    on_remote = tracked(remote, "main")
    assert not set(copies) & (tracked(a.root) | on_remote)
    assert {"Meeting 2.md", "Meeting.md", "memory/release-2.md"} <= on_remote
    assert "Edited on A" in git(remote, "show", "main:memory/deploys.md")
    for rel, text in copies.items():
        data = (a.root / rel).read_bytes()
        assert data == (text if isinstance(text, bytes) else text.encode())
    # Named as copies of which file, with what to do.
    held = {p["path"]: p["problem"] for p in result["not_committed"]}
    assert set(held) == set(copies)
    assert held[DROPBOX].startswith("a conflict copy of memory/deploys.md (Dropbox's naming)")
    assert held[SYNCTHING].startswith("a conflict copy of memory/deploys.md made by Syncthing")
    assert held[ICLOUD].startswith("a numbered copy of memory/deploys.md")
    assert all("merge what you want to keep into that file" in p for p in held.values())
    assert result["conflict_copies"] == sorted(copies)
    assert result["copy_of"] == {
        DROPBOX: "memory/deploys.md",
        SYNCTHING: "memory/deploys.md",
        ICLOUD: "memory/deploys.md",
        ROOT_COPY: "README.md",
        PICTURE: "attachments/diagram.png",
        BARE_SYNCTHING: "attachments/Makefile",
    }
    assert "sync never commits a new one" in err
    assert "invalid RecallFiles" not in err  # the copies are not mistaken for broken notes

    # The other device gets the edit and none of the copies.
    syncmod.sync(b, load())
    assert not set(copies) & {p.relative_to(b.root).as_posix() for p in b.root.rglob("*")}
    assert "Edited on A" in (b.root / "memory/deploys.md").read_text()

    # Merged by hand and deleted: the next sync reports none and the wiki is clean.
    for rel in copies:
        (a.root / rel).unlink()
    code, out, err = cli("--wiki", a.root, "sync", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["conflict_copies"] == [] and result["not_committed"] == []
    assert git(a.root, "status", "--porcelain") == ""
    assert err == ""


def test_a_copy_another_device_committed_is_named_and_its_deletion_syncs(tmp_path, cli):
    remote, a, b = devices(tmp_path)
    # B committed one by hand with git (or with a memwiki that let it through) and pushed.
    write(b.root, ROOT_COPY, "# README from B\n")
    git(b.root, "add", "-A")
    git(b.root, "commit", "-q", "-m", "by hand")
    git(b.root, "push", "-q", "origin", "main")
    # A's own memwiki copy moved to Obsidian's trash is resolved, not pending.
    write(a.root, ".trash/deploys.conflict-remote-1234567.md", note("x", "old\n"))

    code, out, err = cli("--wiki", a.root, "sync")
    assert code == 0, err
    assert f"unresolved {ROOT_COPY} (a conflict copy of README.md)" in out
    assert ".trash" not in out
    assert "sync never commits a new one" in err

    # Deleting it is a change like any other: committed and pushed, never held back.
    (a.root / ROOT_COPY).unlink()
    code, out, err = cli("--wiki", a.root, "sync", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["changes"] == [{"status": "deleted", "path": ROOT_COPY}]
    assert result["conflict_copies"] == [] and result["pushed"]
    assert ROOT_COPY not in tracked(remote, "main")
    syncmod.sync(b, load())
    assert not (b.root / ROOT_COPY).exists()


def test_no_sweep_of_hand_edits_commits_another_tools_copy(tmp_path, cli, run_memwiki):
    """Bug: sync held such copies back, but a scheduled `memorize commit` (which commits the
    hand edits made while its run was open) and `memwiki commit` committed them, and the
    next sync spread them to every device."""
    remote, a, b = devices(tmp_path)
    session = tmp_path / "session.json"
    session.write_text(
        json.dumps({"items": [{"type": "message", "role": "user", "content": "hi"}]})
    )
    prep = run_memwiki("--wiki", a.root, "memorize", "prepare", session, "--json")
    assert prep.returncode == 0, prep.stderr
    run = json.loads(prep.stdout)
    write(Path(run["workspace"]), "memory/learned.md", note("learned", "From the session.\n"))
    # Meanwhile on A: a hand edit, and Dropbox's copy of it (a person's git add is theirs).
    write(a.root, "memory/deploys.md", note("deploys", "Deploy from main. Edited on A.\n"))
    write(a.root, DROPBOX, note("deploys", "Dropbox's version.\n"))
    write(a.root, ROOT_COPY, "# README elsewhere\n")
    write(a.root, "staged (conflicted copy).md", "Staged by the person on purpose.\n")
    git(a.root, "add", "staged (conflicted copy).md")
    done = run_memwiki("--wiki", a.root, "memorize", "commit", run["run_id"], "--json")
    assert done.returncode == 0, done.stderr
    assert "Edited on A" in git(a.root, "show", "HEAD:memory/deploys.md")
    assert "memory/learned.md" in tracked(a.root)
    # what the person staged stays staged, theirs to commit (memorize's commit never takes it)
    assert "staged (conflicted copy).md" not in tracked(a.root)
    assert git(a.root, "diff", "--cached", "--name-only", "-z") == "staged (conflicted copy).md\0"
    assert not {DROPBOX, ROOT_COPY} & tracked(a.root)

    write(a.root, "memory/more.md", note("more", "Another hand edit.\n"))
    code, out, err = cli("--wiki", a.root, "commit")
    assert code == 0 and "memory/more.md" in out, err
    assert not {DROPBOX, ROOT_COPY} & tracked(a.root)
    assert f"not committed {DROPBOX}: a conflict copy of memory/deploys.md" in err
    assert f"not committed {ROOT_COPY}: a conflict copy of README.md" in err

    code, out, err = cli("--wiki", a.root, "sync", "--json")
    assert code == 0, err
    assert json.loads(out)["pushed"]
    assert not {DROPBOX, ROOT_COPY} & tracked(remote, "main")
    assert (a.root / DROPBOX).is_file() and (a.root / ROOT_COPY).is_file()
