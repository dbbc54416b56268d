"""What sync never commits, lint and commit name: other sync tools' conflict copies outside
the tracks, the copies a commit held back (read from its own git status), and a file a
person staged by hand that lint would reject."""

from __future__ import annotations

import json

import pygit2
from test_sync_copies import git, write

from memwiki.lint import lint_wiki
from memwiki.wiki import Wiki

ROOT_COPY = "README (conflicted copy 2026-12-01).md"
PICTURE = "attachments/diagram (Ann's conflicted copy 2026-12-01).png"
BARE_SYNCTHING = "attachments/Makefile.sync-conflict-20261201-101010-ABCDEFG"
OURS = "README.conflict-remote-abcdef1.md"
IN_TRACK = "memory/deploys (conflicted copy).md"
TRASHED = ".trash/notes (conflicted copy).md"


def note(name: str, body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: Notes about {name}\n---\n{body}"


def test_lint_names_every_copy_sync_holds_back_once(tmp_path):
    wiki, _ = Wiki.init(tmp_path / "w")
    write(wiki.root, ".gitignore", (wiki.root / ".gitignore").read_text() + ".trash/\n")
    write(wiki.root, "memory/deploys.md", note("deploys"))
    for rel, text in {
        ROOT_COPY: "# README, as the other device had it\n",
        PICTURE: b"\x89PNG two",
        BARE_SYNCTHING: "all: other\n",
        OURS: "# README, the remote's\n",
        IN_TRACK: note("deploys", "Dropbox's version.\n"),
        TRASHED: "resolved: git ignores it\n",
        "Meeting 2.md": "A note of its own, not a copy.\n",
    }.items():
        write(wiki.root, rel, text)
    wiki.commit("seed")  # memwiki's own copy is committed; the others are held back
    problems = lint_wiki(wiki)
    by_path: dict[str, list[str]] = {}
    for p in problems:
        by_path.setdefault(p.path, []).append(p.message)
    assert set(by_path) == {ROOT_COPY, PICTURE, BARE_SYNCTHING, OURS, IN_TRACK}, by_path
    assert all(len(messages) == 1 for messages in by_path.values()), by_path
    assert by_path[ROOT_COPY][0].startswith("a conflict copy of README.md (Dropbox's naming)")
    assert "sync never commits it" in by_path[ROOT_COPY][0]
    assert "attachments/diagram.png" in by_path[PICTURE][0]
    assert "attachments/Makefile made by Syncthing" in by_path[BARE_SYNCTHING][0]
    assert by_path[OURS][0].startswith("unresolved conflict copy of README.md")
    # Each path lint names as a copy outside the tracks is one sync leaves out.
    held = {h["path"] for h in wiki.commit().not_committed}
    assert held == {ROOT_COPY, PICTURE, BARE_SYNCTHING, IN_TRACK}


def test_commit_names_the_copies_it_held_back_from_one_status_read(tmp_path, cli, monkeypatch):
    wiki, _ = Wiki.init(tmp_path / "w")
    write(wiki.root, "memory/more.md", note("more"))
    write(wiki.root, ROOT_COPY, "# README, as the other device had it\n")
    calls = []
    status = pygit2.Repository.status

    def counted(self, *args, **kwargs):
        calls.append(1)
        return status(self, *args, **kwargs)

    monkeypatch.setattr(pygit2.Repository, "status", counted)
    code, out, err = cli("--wiki", wiki.root, "commit", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["created"] == ["memory/more.md"]
    assert [h["path"] for h in data["not_committed"]] == [ROOT_COPY]
    assert "a conflict copy of README.md" in data["not_committed"][0]["problem"]
    assert f"not committed {ROOT_COPY}: a conflict copy of README.md" in err
    assert len(calls) == 1  # was 2: the CLI read the status again to name the copy
    assert ROOT_COPY not in git(wiki.root, "ls-files")


def test_a_broken_note_a_person_staged_is_committed_and_said(tmp_path, cli):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    wiki, _ = Wiki.init(tmp_path / "w")
    code, _, err = cli("--wiki", wiki.root, "remote", "add", str(remote))
    assert code == 0, err
    # Staged by hand: broken YAML. Not staged: no description (sync holds it back).
    write(wiki.root, "memory/staged.md", '---\nname: staged\ndescription: "never closed\n---\n')
    git(wiki.root, "add", "memory/staged.md")
    write(wiki.root, "memory/loose.md", "---\nname: loose\n---\nNo description.\n")
    code, out, err = cli("--wiki", wiki.root, "sync", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [p["path"] for p in data["not_committed"]] == ["memory/loose.md"]
    assert [p["path"] for p in data["committed_invalid"]] == ["memory/staged.md"]
    lines = [ln for ln in err.splitlines() if "memory/staged.md" in ln]
    assert len(lines) == 1 and "as you staged it (`git add`), though lint rejects it" in lines[0]
    assert "run `memwiki sync` again" in lines[0], lines
    # The person's staging is kept: the file is on the remote as staged, nothing refused.
    remote_files = git(remote, "ls-tree", "-r", "--name-only", "main").split()
    assert "memory/staged.md" in remote_files and "memory/loose.md" not in remote_files

    # `memwiki commit` validates nothing, but names what lint would reject (staged or not).
    write(wiki.root, "memory/again.md", "---\nname: other\ndescription: d\n---\n")
    git(wiki.root, "add", "memory/again.md")
    write(wiki.root, "memory/fine.md", note("fine"))
    code, out, err = cli("--wiki", wiki.root, "commit")
    assert code == 0, err
    assert {"memory/again.md", "memory/loose.md", "memory/fine.md"} <= set(out.split())
    named = sorted(ln.split()[2].rstrip(",") for ln in err.splitlines() if "lint rejects" in ln)
    assert named == ["memory/again.md", "memory/loose.md"], err


def test_commit_names_no_symlink_or_valid_note_as_rejected(tmp_path, cli):
    wiki, _ = Wiki.init(tmp_path / "w")
    write(wiki.root, "memory/real.md", note("real"))
    (wiki.root / "memory" / "alias.md").symlink_to("real.md")
    code, out, err = cli("--wiki", wiki.root, "commit")
    assert code == 0 and "memory/alias.md" in out, err
    assert "lint rejects" not in err, err
