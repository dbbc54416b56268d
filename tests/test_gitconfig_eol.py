"""Line endings a developer's git configuration asks for (core.autocrlf, .gitattributes)."""

from __future__ import annotations

from gitconfig_home import write_gitconfig


def test_restore_writes_the_line_endings_git_checks_out(tmp_path, run_memwiki, git) -> None:
    """Bug: with core.autocrlf = true, restore wrote the stored LF bytes into a clone
    whose files git had checked out with CRLF."""
    write_gitconfig("[core]\n\tautocrlf = true\n")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    root = tmp_path / "wiki"
    assert run_memwiki("init", root, "--remote", remote).returncode == 0
    for body in ("first version", "second version"):
        done = run_memwiki("-w", root, "add", "memory", "note", "-d", "d", input=body)
        assert done.returncode == 0, done.stderr
    assert run_memwiki("-w", root, "sync").returncode == 0
    other = tmp_path / "other"
    assert run_memwiki("clone", remote, other).returncode == 0
    note = other / "memory" / "note.md"
    assert b"\r\n" in note.read_bytes()  # git checked it out with CRLF
    done = run_memwiki("-w", other, "restore", "memory/note")
    assert done.returncode == 0, done.stderr
    data = note.read_bytes()
    assert b"first version" in data and b"---\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    assert git(other, "status", "--porcelain") == ""
    assert git(other, "show", "HEAD:memory/note.md").count("\r") == 0  # stored as LF
