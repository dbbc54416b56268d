"""A full disk: every write either happens or says so (exit 5), on a real small tmpfs.

Skipped where this process cannot mount a tmpfs (not root, or no CAP_SYS_ADMIN).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki.wiki import Wiki


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount: Path, leave: int) -> None:
    """Fill the filesystem, then free `leave` bytes."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (65536, 4096, 1):  # big writes, then ever smaller, to the very end
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - leave))


def test_add_on_a_full_disk_commits_or_says_it_did_not(small_disk, tmp_path):
    """Bug: with 12-14 KB free, libgit2 failed to write the commit object yet returned its
    id: `add` printed a commit that did not exist (exit 0), and the agent believed its
    memory was saved; with a little less free, an internal error (exit 70)."""
    wiki, _ = Wiki.init(small_disk / "w")
    env = {**os.environ, "MEMWIKI_EMBED": "none"}
    for n, leave in enumerate(range(2048, 40960, 2048)):
        head = subprocess.run(["git", "-C", str(wiki.root), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()  # fmt: skip
        (small_disk / "filler").unlink(missing_ok=True)
        _fill(small_disk, leave)
        done = subprocess.run(
            [sys.executable, "-m", "memwiki", "--wiki", str(wiki.root),
             "add", "memory", f"note-{n}", "-d", "a note"],
            input=f"body {n}\n" * 20, capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert done.returncode in (0, 5), done.stderr
        assert "internal error" not in done.stderr
        after = subprocess.run(["git", "-C", str(wiki.root), "rev-parse", "HEAD"],
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
        if done.returncode == 0:  # then the commit it names exists and HEAD is it
            assert after != head
            shown = subprocess.run(["git", "-C", str(wiki.root), "cat-file", "-t", after],
                                   capture_output=True, text=True)  # fmt: skip
            assert shown.stdout.strip() == "commit"
        else:
            assert after == head and "error" in done.stderr
    (small_disk / "filler").unlink(missing_ok=True)
    assert (
        subprocess.run(["git", "-C", str(wiki.root), "fsck"], capture_output=True).returncode == 0
    )
    shutil.rmtree(wiki.root, ignore_errors=True)


def test_a_read_only_wiki_answers_from_its_index_or_says_why_not(tmp_path):
    """Bug: on a read-only mount every retrieve failed with "the index kept changing while
    it was read ...; run the command again" (a read-only filesystem taken for a race, five
    retries, advice that cannot help), even with a fresh index on disk."""
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory/people.md").write_text(
        "---\nname: people\ndescription: who is who\n---\nAda runs the zebracorn team.\n"
    )
    wiki.commit()
    env = {**os.environ, "MEMWIKI_EMBED": "hash"}
    cmd = [sys.executable, "-m", "memwiki", "--wiki"]
    run = subprocess.run
    assert run([*cmd, str(wiki.root), "reindex"], env=env, capture_output=True).returncode == 0
    bare = tmp_path / "bare"
    shutil.copytree(wiki.root, bare, ignore=shutil.ignore_patterns(".memwiki"))
    for source in (wiki.root, bare):
        mount = tmp_path / f"ro-{source.name}"
        mount.mkdir()
        if run(["mount", "--bind", str(source), str(mount)], capture_output=True).returncode:
            pytest.skip("cannot bind-mount here")
        try:
            run(["mount", "-o", "remount,bind,ro", str(mount)], check=True, capture_output=True)
            done = run([*cmd, str(mount), "retrieve", "zebracorn", "--files"],
                       env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        finally:
            run(["umount", "-l", str(mount)], capture_output=True)
        # Without an index on the mount the user's own one answers (layout.sidecar_for);
        # it was exit 5, "Read-only file system".
        assert done.returncode == 0 and done.stdout == "memory/people.md\n", done.stderr
        assert "kept changing" not in done.stderr and "internal error" not in done.stderr


def test_memorize_prepare_on_a_full_disk_leaves_no_half_run(small_disk, tmp_path):
    """Bug: with 12-140 KB free, prepare ended in "internal error: OSError: failed to write
    out file: No space left on device" (libgit2's OSError carries no errno, exit 70), or
    its undoing failed ("Cannot delete branch ... current HEAD of a linked repository"
    from a worktree made half-way), which hid the full disk and left the branch, git's
    worktree record and the run's folder behind."""
    import json

    wiki, _ = Wiki.init(small_disk / "w")
    session = tmp_path / "s.json"
    session.write_text(json.dumps({"schema_version": "1.0", "items": [
        {"type": "message", "role": "user", "content": "how do we deploy?"},
        {"type": "message", "role": "assistant", "content": "with make ship"}]}))  # fmt: skip
    env = {**os.environ, "MEMWIKI_EMBED": "none"}
    cmd = [sys.executable, "-m", "memwiki", "--wiki", str(wiki.root), "memorize"]
    failed = 0
    for leave in range(12288, 12288 + 8192 * 6, 8192):
        _fill(small_disk, leave)
        done = subprocess.run([*cmd, "prepare", str(session), "--again", "--json"],
                              capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        (small_disk / "filler").unlink()
        assert done.returncode in (0, 5), done.stderr
        assert "cannot remove" not in done.stderr and len(done.stderr.splitlines()) == 1
        if done.returncode == 0:
            run = json.loads(done.stdout)["run_id"]
            assert subprocess.run([*cmd, "discard", run], capture_output=True).returncode == 0
            continue
        failed += 1
        branches = subprocess.run(["git", "-C", str(wiki.root), "branch", "--list", "memwiki/*"],
                                  capture_output=True, text=True).stdout  # fmt: skip
        assert branches == ""
        assert list((wiki.root / ".git/worktrees").glob("*")) == []
        assert list((wiki.root / ".memwiki/runs").glob("*")) == []
    assert failed  # the disk was full enough to fail somewhere
