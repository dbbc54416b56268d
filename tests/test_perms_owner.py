"""Files a `sudo memwiki ...` left owned by root in the wiki of an ordinary user.

The suite runs as root, and root ignores permission bits, so these tests run memwiki as
another uid (setpriv --reuid). That uid keeps one capability, CAP_DAC_READ_SEARCH, only
so that it can start this interpreter (which may live under root's 0700 home): reading is
not what is tested; every write is refused as it would be for an ordinary user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memwiki.wiki import Wiki

REPO = Path(__file__).resolve().parents[1]
UID = 54_321  # no entry in the password database is needed
SAFE = ("-c", "safe.directory=*")  # root's git in the user's repository
PROMPT = '{"prompt": "zebracorn", "cwd": "/"}'
NOTE = "---\nname: {n}\ndescription: note {n}\n---\n{body}\n"


def _chown_tree(top: Path, uid: int) -> None:
    for path in [top, *top.rglob("*")]:
        os.lchown(path, uid, uid)


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder another user can reach (pytest's tmp_path sits in root's 0700 folder, and
    click's check of `--wiki` asks access(), which no capability helps)."""
    top = Path(tempfile.mkdtemp(prefix="memwiki-perms-"))
    top.chmod(0o755)
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def as_user(place) -> Callable[..., subprocess.CompletedProcess]:
    """Run `memwiki ARGV` as UID, with a home of its own (a git identity in it)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv (util-linux) to run memwiki as another user")
    home = place / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = User\n\temail = user@example.invalid\n")
    _chown_tree(home, UID)
    prefix = [setpriv, f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]
    prefix += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "MEMWIKI_EMBED": "hash",
        "PYTHONPATH": str(REPO),
    }

    def run(
        *argv: str, stdin: str = "", wiki: Path | None = None, extra: dict | None = None
    ) -> subprocess.CompletedProcess:
        more = {"MEMWIKI_DIR": str(wiki)} if wiki else {}  # the hook's wiki: the configured one
        more.update(extra or {})
        return subprocess.run(
            [*prefix, sys.executable, "-m", "memwiki", *map(str, argv)],
            input=stdin, capture_output=True, text=True, env={**env, **more}, timeout=60,
            cwd=home,
        )  # fmt: skip

    return run


@pytest.fixture
def users_wiki(place) -> Path:
    """A wiki of UID's with one committed note."""
    wiki, _ = Wiki.init(place / "wiki")
    (wiki.root / "memory/people.md").write_text(NOTE.format(n="people", body="Ada: zebracorn."))
    wiki.commit()
    _chown_tree(wiki.root, UID)
    return wiki.root


def _as_root(wiki: Path, *argv: str) -> None:
    """`sudo memwiki ARGV`: root runs memwiki on the user's wiki."""
    env = {**os.environ, "MEMWIKI_EMBED": "hash", "PYTHONPATH": str(REPO)}
    env.update(SUDO_UID=str(UID), SUDO_GID=str(UID), SUDO_USER="user")  # as sudo sets them
    done = subprocess.run([sys.executable, "-m", "memwiki", "--wiki", str(wiki), *argv],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_reindex_under_sudo_is_named_with_its_owner_and_the_command_to_run(
    users_wiki, as_user
) -> None:
    """Bug: after one `sudo memwiki reindex` the user's `reindex` said only "Permission
    denied: .memwiki/index/bm25-2/items_WRITELOCK" (found running as a real user): not who
    owns it, nor what to run. retrieve and the hook still answer from the index."""
    _as_root(users_wiki, "reindex", "--full")
    (users_wiki / "memory/tools.md").write_text(NOTE.format(n="tools", body="quuxtool daily"))
    done = as_user("--wiki", users_wiki, "reindex")
    assert done.returncode == 5 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "is owned by root" in done.stderr
    assert f"run `sudo chown -R {UID} {users_wiki / '.memwiki'}`" in done.stderr
    done = as_user("--wiki", users_wiki, "retrieve", "zebracorn", "--files")
    assert done.returncode == 0 and done.stdout == "memory/people.md\n", done.stderr
    hook = as_user("hook", "claude-code", stdin=PROMPT, wiki=users_wiki)
    assert hook.returncode == 0 and "memory/people.md" in hook.stdout, hook.stderr
    subprocess.run(["chown", "-R", str(UID), str(users_wiki / ".memwiki")], check=True)
    done = as_user("--wiki", users_wiki, "reindex")  # the command it named was enough
    assert done.returncode == 0, done.stderr


def test_a_commit_git_cannot_write_names_the_folder_not_a_full_disk(
    users_wiki, as_user, git
) -> None:
    """Bug: with `.git/objects/xx/` folders root owns (a `sudo memwiki add` made them),
    the user's commit failed as "the commit was not written: is the disk full?" (libgit2
    returns the id of a commit it could not write). Now: the folder, its owner, what to run."""
    note = users_wiki / "memory/people.md"
    note.write_text(NOTE.format(n="people", body="Ada: zebracorn, and more."))
    # The blob and the tree are in the store already; only the commit object is new.
    git(users_wiki, *SAFE, "add", "memory/people.md")
    git(users_wiki, *SAFE, "write-tree")
    objects = users_wiki / ".git/objects"
    for n in range(256):
        (objects / f"{n:02x}").mkdir(exist_ok=True)
        os.chown(objects / f"{n:02x}", 0, 0)
    _chown_tree(users_wiki / ".git/index", UID)
    head = git(users_wiki, *SAFE, "rev-parse", "HEAD")
    done = as_user("--wiki", users_wiki, "commit")
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and "disk full" not in done.stderr, done.stderr
    assert "is owned by root" in done.stderr and "files are saved, not committed" in done.stderr
    assert f"run `sudo chown -R {UID} {users_wiki / '.git'}`" in done.stderr
    assert git(users_wiki, *SAFE, "rev-parse", "HEAD") == head
    assert "Ada: zebracorn, and more." in note.read_text()


def test_a_root_job_with_umask_077_leaves_an_index_retrieve_works_around(
    users_wiki, as_user
) -> None:
    """Bug: a root cron job (umask 077) made `.memwiki/index/` root's and unreadable: the
    user's retrieve failed "Permission denied: .memwiki/index/state.pkl" (exit 5), and
    the hook answered nothing. Now the user's own index (in ~/.cache) answers, and doctor
    names root's files and the command that gives them back."""
    old = os.umask(0o077)
    try:
        _as_root(users_wiki, "reindex")
    finally:
        os.umask(old)
    assert (users_wiki / ".memwiki/index").stat().st_mode & 0o777 == 0o700
    done = as_user("--wiki", users_wiki, "retrieve", "zebracorn", "--files")
    assert done.returncode == 0 and done.stdout == "memory/people.md\n", done.stderr
    hook = as_user("hook", "claude-code", stdin=PROMPT, wiki=users_wiki)
    assert hook.returncode == 0 and "memory/people.md" in hook.stdout, hook.stderr
    doctor = as_user("--wiki", users_wiki, "doctor")
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    lines = {line.split()[1]: line for line in doctor.stdout.splitlines()}
    assert lines["owner"].startswith("FAIL") and ".memwiki/index" in lines["owner"]
    assert f"run `sudo chown -R {UID} {users_wiki}`" in lines["owner"]
    assert lines["sidecar"].startswith("ok") and "/.cache/memwiki/sidecars/" in lines["sidecar"]
    assert lines["retrieve"].startswith("ok")


def test_a_wiki_the_user_may_only_read_answers_and_refuses_writes_in_one_line(
    users_wiki, as_user, git
) -> None:
    """Bug: in a wiki the user may only read (another user's, `chmod -R a-w`, a read-only
    mount) list, show, log and lint worked but retrieve failed: "Permission denied:
    <wiki>/.memwiki" (exit 5). Writes still fail, in one line naming the folder's owner."""
    _chown_tree(users_wiki, 4242)  # another user's wiki, readable by all
    home_config = users_wiki.parent / "home/.gitconfig"
    home_config.write_text(home_config.read_text() + f"[safe]\n\tdirectory = {users_wiki}\n")
    for argv in (["retrieve", "zebracorn", "--files"], ["list"], ["show", "memory/people"],
                 ["log"], ["lint"]):  # fmt: skip
        done = as_user("--wiki", users_wiki, *argv)
        assert done.returncode == 0 and done.stderr == "", (argv, done.stderr)
        assert "people" in done.stdout or argv == ["lint"], (argv, done.stdout)
    hook = as_user("hook", "claude-code", stdin=PROMPT, wiki=users_wiki)
    assert hook.returncode == 0 and "memory/people.md" in hook.stdout, hook.stderr
    assert not (users_wiki / ".memwiki/index").exists()  # the index was the user's own
    hook = as_user("hook", "claude-code", stdin="not json", wiki=users_wiki)
    assert hook.returncode == 0 and hook.stdout == hook.stderr == ""
    private = users_wiki.parent / "home/.cache/memwiki/sidecars"
    (log,) = private.glob("wiki-*/logs/hook.log")  # the hook's one line: in the user's own
    assert log.read_text().count("\n") == 1 and "malformed input" in log.read_text()
    done = as_user("--wiki", users_wiki, "add", "memory", "n", "-d", "d", stdin="body\n")
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "Permission denied" in done.stderr and "is owned by 4242" in done.stderr
    assert not (users_wiki / "memory/n.md").exists()


def test_a_wiki_root_owns_is_never_handed_over_by_the_hint(place, as_user) -> None:
    """Guard on the hint: root's own wiki (a system folder) refuses the user's writes in
    one line, with no `sudo chown` that would give a system folder away."""
    wiki, _ = Wiki.init(place / "system-wiki")
    home_config = place / "home/.gitconfig"
    home_config.write_text(home_config.read_text() + f"[safe]\n\tdirectory = {wiki.root}\n")
    done = as_user("--wiki", wiki.root, "add", "memory", "n", "-d", "d", stdin="body\n")
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "is owned by root" in done.stderr and "chown" not in done.stderr


def test_a_read_only_wiki_of_ones_own_is_not_called_busy(users_wiki, as_user) -> None:
    """Bug: in a wiki made read-only (`chmod -R a-w`, an archive; here a copy whose files'
    times changed), `commit` took libgit2's "failed to create locked file
    '.git/index.lock': Permission denied" for another git holding the lock: retried, then
    said just that. Now one line naming the read-only folder. (A new note's blob is
    refused first, by .git/objects, and named the same way.)"""
    note = users_wiki / "memory/people.md"
    os.utime(note, (1e9, 1e9))  # the same bytes, other stat facts: the index is written

    def commit_read_only() -> str:
        subprocess.run(["chmod", "-R", "a-w", str(users_wiki)], check=True)
        try:
            done = as_user("--wiki", users_wiki, "commit")
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(users_wiki)], check=True)
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        return done.stderr

    said = commit_read_only()
    assert "cannot write the git index" in said, said
    assert f"{users_wiki / '.git'} is read-only (`chmod u+w" in said, said
    (users_wiki / "memory/new.md").write_text(NOTE.format(n="new", body="a new note"))
    assert f"{users_wiki / '.git/objects'} is read-only (`chmod u+w" in commit_read_only()


def test_a_log_folder_root_owns_does_not_stop_the_vectors_being_built(users_wiki, as_user) -> None:
    """Bug: with `.memwiki/logs/` root's (a `sudo memwiki retrieve` started a background
    build), the user's background build could not open its log and never started; every
    answer said "BM25 only: vectors are being built" and none were. Now it starts, its
    output to /dev/null."""
    import json
    import time

    for n in range(400):  # a first build this large gets its vectors in the background
        note = NOTE.format(n=f"bulk-{n}", body=f"bulk note {n} " + "words " * 40)
        (users_wiki / f"memory/bulk-{n}.md").write_text(note)
    _chown_tree(users_wiki, UID)
    (users_wiki / ".memwiki/logs").mkdir(parents=True)
    (users_wiki / ".memwiki/logs/reindex.log").touch()  # root's
    done = as_user("--wiki", users_wiki, "retrieve", "zebracorn", "--json")
    assert done.returncode == 0, done.stderr
    index = json.loads(done.stdout)["index"]
    assert index["pending_items"] > 0 and index["background_reindex"] is True, index
    for _ in range(100):  # the build's own time: a few seconds at most
        time.sleep(0.1)
        done = as_user("--wiki", users_wiki, "retrieve", "zebracorn", "--json")
        if json.loads(done.stdout)["index"]["pending_items"] == 0:
            break
    assert json.loads(done.stdout)["index"]["pending_items"] == 0, done.stdout


def test_an_install_under_sudo_is_named_with_the_chown_that_undoes_it(
    users_wiki, as_user, place
) -> None:
    """Bug: after `sudo memwiki install` (HOME kept) the user's uninstall said "not
    writable by you (mode 644) ... make it writable and run again": the file is root's,
    which no chmod of the user's can change. Now it names root and the chown to run."""
    home = place / "home"
    (home / ".claude").mkdir()
    _chown_tree(home / ".claude", UID)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO), "MEMWIKI_EMBED": "hash"}
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    done = subprocess.run([sys.executable, "-m", "memwiki", "--wiki", str(users_wiki), "install",
                           "--host", "claude-code"], env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    claude_md = home / ".claude/CLAUDE.md"
    assert claude_md.stat().st_uid == 0
    done = as_user("--wiki", users_wiki, "uninstall", "--host", "claude-code")
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert f"run `sudo chown -R {UID} {claude_md}`" in done.stderr
