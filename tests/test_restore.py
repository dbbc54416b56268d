"""memwiki restore: a deleted file and an overwritten version come back as new commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

V1 = "---\nname: a\ndescription: Notes about a\n---\nThe first version: kettles boil.\n"
V2 = "---\nname: a\ndescription: Notes about a\n---\nThe second version: kettles whistle.\n"
B = "---\nname: b\ndescription: Notes about b\n---\nBananas ripen in paper bags.\n"


def gitcli(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def history(tmp_path, cli) -> Path:
    """memory/a: V1 then V2; memory/b: created then deleted. One commit per step."""
    root = tmp_path / "w"
    assert cli("init", root)[0] == 0
    for rel, text in (("memory/a.md", V1), ("memory/b.md", B), ("memory/a.md", V2)):
        (root / rel).write_text(text)
        assert cli("--wiki", root, "commit")[0] == 0
    (root / "memory/b.md").unlink()
    assert cli("--wiki", root, "commit")[0] == 0
    return root


def test_acceptance_restore_a_deleted_file_and_an_overwritten_version(history, cli, run_memwiki):
    commits_before = int(gitcli(history, "rev-list", "--count", "HEAD"))
    code, out, err = cli("--wiki", history, "restore", "memory/b")
    assert code == 0, err
    assert (history / "memory/b.md").read_text() == B
    assert out.startswith("restored memory/b.md as of ")
    code, out, _ = cli("--wiki", history, "restore", "memory/a", "--json")
    data = json.loads(out)
    assert (history / "memory/a.md").read_text() == V1
    assert data["path"] == "memory/a.md" and data["saved"] is None
    assert data["commit"] == gitcli(history, "rev-parse", "HEAD").strip()
    # Each restore is a new commit on top; history keeps every version (git CLI cross-check).
    assert int(gitcli(history, "rev-list", "--count", "HEAD")) == commits_before + 2
    assert gitcli(history, "status", "--porcelain") == ""
    assert gitcli(history, "show", "HEAD:memory/a.md") == V1
    subjects = gitcli(history, "log", "--format=%s", "--", "memory/a.md").splitlines()
    assert subjects[0] == f"memwiki: restore memory/a as of {data['rev'][:12]}"
    assert len(subjects) == 3
    code, out, _ = cli("--wiki", history, "log", "memory/b", "--json")
    assert [e["changes"][0]["status"] for e in json.loads(out)] == [
        "created",
        "deleted",
        "created",
    ]
    done = run_memwiki("--wiki", history, "retrieve", "bananas paper", "--mode", "bm25", "--files")
    assert done.stdout == "memory/b.md\n"


def test_restore_a_revision_chosen_from_the_log(history, cli):
    log = json.loads(cli("--wiki", history, "log", "memory/a", "--json")[1])
    v2_commit = log[0]["commit"]
    cli("--wiki", history, "restore", "memory/a")  # back to V1
    code, out, _ = cli("--wiki", history, "restore", "memory/a", "--rev", v2_commit[:10])
    assert code == 0 and (history / "memory/a.md").read_text() == V2
    # Restoring what is already there commits nothing.
    code, out, _ = cli("--wiki", history, "restore", "memory/a", "--rev", v2_commit, "--json")
    assert json.loads(out)["commit"] is None
    assert "nothing to commit" in cli("--wiki", history, "restore", "memory/a", "--rev", "HEAD")[1]


def test_an_uncommitted_edit_is_committed_before_the_restore(history, cli):
    (history / "memory/a.md").write_text(V2 + "Typed but not committed.\n")
    code, out, _ = cli("--wiki", history, "restore", "memory/a", "--json")
    data = json.loads(out)
    assert data["saved"] and data["commit"]
    assert (history / "memory/a.md").read_text() == V1
    assert gitcli(history, "show", f"{data['saved']}:memory/a.md").endswith("not committed.\n")


def test_restore_errors_are_one_line(history, cli):
    deleting = json.loads(cli("--wiki", history, "log", "memory/b", "--json")[1])[0]["commit"]
    code, _, err = cli("--wiki", history, "restore", "memory/b", "--rev", deleting)
    assert code == 3 and f"use --rev {deleting[:12]}^" in err and err.count("\n") == 1
    code, _, err = cli("--wiki", history, "restore", "memory/a", "--rev", "no-such-rev")
    assert code == 3 and "no revision 'no-such-rev'" in err
    code, _, err = cli("--wiki", history, "restore", "memory/never")
    assert code == 3 and "has no history" in err
    (history / "memory/c.md").write_text(B.replace("name: b", "name: c"))
    cli("--wiki", history, "commit")
    code, _, err = cli("--wiki", history, "restore", "memory/c")
    assert code == 4 and "which created it" in err
    code, _, err = cli("--wiki", history, "restore", "../etc/passwd")
    assert code == 2
