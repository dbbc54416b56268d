"""Project identity on checkouts as developers' machines have them: real git repositories
with odd remotes, deleted and deep directories, the wiki itself (docs/guide.md, Projects)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki import project as pj
from memwiki.project_git import origin_url, remote_url, url_key

TOKEN = "ghp_S3CRETt0ken"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def repo(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    if origin:
        git(path, "remote", "add", "origin", origin)
    return path


def in_gone_directory(tmp_path: Path, *argv: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`memwiki ARGV` run from a working directory deleted before it starts (as by `rm -r`
    in another shell)."""
    gone = tmp_path / "repo" / "gone"
    gone.mkdir(parents=True, exist_ok=True)
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "memwiki", *argv])
    script = f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && exec {command}"
    env = dict(os.environ)
    if env.get("PYTHONPATH"):  # `PYTHONPATH=.` would name the deleted folder
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    return subprocess.run(
        ["sh", "-c", script], input=stdin, capture_output=True, text=True, timeout=60, env=env
    )


def test_an_inline_comment_after_the_origin_url_is_not_part_of_the_name(tmp_path):
    # Found by hand-writing a config the way people annotate one: git reads the URL as
    # `git@github.com:acme/ledger.git`; memwiki named the project `ledger-git-my-fork`.
    root = repo(tmp_path / "checkout")
    with (root / ".git" / "config").open("a") as fh:
        fh.write('[remote "origin"] # the fork\n\turl = git@github.com:acme/ledger.git ; my fork\n')
    assert git(root, "config", "remote.origin.url").strip() == "git@github.com:acme/ledger.git"
    assert pj.identify(root).slug == "ledger"


@pytest.mark.parametrize(
    "raw, value",
    [
        ('"https://host/a b/ledger.git"', "https://host/a b/ledger.git"),
        ('"git@host:acme/x;y.git" ; note', "git@host:acme/x;y.git"),
        (r"git@host:acme/\"q\".git", 'git@host:acme/"q".git'),
        ("  git@host:acme/ledger.git   # trailing", "git@host:acme/ledger.git"),
    ],
)
def test_config_values_read_as_git_reads_them(tmp_path, raw, value):
    root = repo(tmp_path / "r")
    (root / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {raw}\n')
    assert git(root, "config", "remote.origin.url").rstrip("\n") == value
    assert origin_url(root / ".git") == value


def test_a_repository_far_above_a_deep_directory_is_found(tmp_path):
    # The upward walk stopped after 256 folders: 300 below the repository, no project.
    root = repo(tmp_path / "deep", "git@github.com:acme/deep.git")
    here = root.joinpath(*["d"] * 300)
    here.mkdir(parents=True)
    assert pj.identify(here) == pj.Project("deep", str(root.resolve()), "remote")


def test_a_deleted_working_directory_has_no_project_and_crashes_nothing(tmp_path):
    # Found by running `memwiki project` and `memwiki retrieve` in a folder another shell
    # removed: both died with "internal error: FileNotFoundError", exit 70.
    from memwiki.wiki import Wiki

    Wiki.init(tmp_path / "wiki")
    repo(tmp_path / "repo", "git@github.com:acme/ledger.git")
    wiki = ["--wiki", str(tmp_path / "wiki")]
    done = in_gone_directory(tmp_path, *wiki, "project")
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "no longer exists" in done.stderr
    done = in_gone_directory(tmp_path, *wiki, "retrieve", "--json", "x")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["index"]["project"] is None
    # The prompt hook with no cwd in its payload used the process's: it failed open, and
    # the prompt went out without memory.
    note = "---\nname: deploy\ndescription: how we deploy\n---\n# Deploy\nRun make ship.\n"
    (tmp_path / "wiki" / "memory" / "deploy.md").write_text(note)
    prompt = json.dumps({"prompt": "how do we deploy", "hook_event_name": "UserPromptSubmit"})
    done = in_gone_directory(tmp_path, *wiki, "hook", "claude-code", stdin=prompt)
    assert done.returncode == 0, done.stderr
    assert "make ship" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    payload = tmp_path / "s1.json"
    payload.write_text("{}")
    argv = [*wiki, "memorize", "prepare", str(payload), "--project", "auto"]
    done = in_gone_directory(tmp_path, *argv)
    assert done.returncode == 2 and "no longer exists" in done.stderr, done.stderr
    assert pj.scope("auto", None) is None and pj.identify(None) is None


def test_the_wiki_itself_is_no_project_for_project_and_memorize(tmp_path, run_memwiki):
    # `memwiki project` in the wiki printed the wiki folder's name (retrieve already saw no
    # project there), and `memorize prepare --project auto` tagged the run with it.
    from memwiki.wiki import Wiki

    w, _ = Wiki.init(tmp_path / "notes")
    wiki = ["--wiki", str(w.root)]
    done = run_memwiki(*wiki, "project", "--json", cwd=w.root / "memory")
    assert json.loads(done.stdout) == {"project": None, "root": None, "source": None}
    done = run_memwiki(*wiki, "project", cwd=w.root)
    assert done.returncode == 0 and done.stdout.startswith("no project (this is the wiki")
    payload = tmp_path / "s1.json"
    payload.write_text("{}")
    done = run_memwiki(*wiki, "memorize", "prepare", str(payload), "--project", "auto", cwd=w.root)
    assert done.returncode == 2 and "is the wiki" in done.stderr, done.stderr
    # Mapped on purpose, the wiki's folder is that project.
    assert pj.code_project(w.root, {str(w.root): "notes"}, None, w.root).slug == "notes"


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Ledger.git",
        "https://github.com/acme/ledger",
        "https://GitHub.com/acme/ledger.git/",
        f"https://ada:{TOKEN}@github.com/acme/ledger.git",
        "ssh://git@github.com:22/acme/ledger",
        "ssh://git@github.com/acme/ledger.git?x=1",
    ],
)
def test_one_repository_has_one_url_key(url):
    assert url_key(url) == "github.com/acme/ledger"


def test_url_keys_keep_what_tells_repositories_apart():
    assert url_key("git@gitlab.com:acme/ledger.git") != url_key("git@github.com:acme/ledger")
    assert url_key("git@github.com:acme/ledger") != url_key("git@github.com:other/ledger")
    assert url_key("/srv/git/ledger.git") == url_key("/srv/git/ledger/") == "/srv/git/ledger"
    assert url_key("file:///srv/git/ledger.git") == "/srv/git/ledger"


def test_two_clones_one_over_ssh_one_over_https_are_one_mapped_project(tmp_path):
    # Found with two clones of one repository: a URL entry in `projects` matched the clone
    # spelled as written and not the other, so one repository was two projects (t2, twin).
    ssh = repo(tmp_path / "a", "git@github.com:acme/twin.git")
    https = repo(tmp_path / "b", f"https://ada:{TOKEN}@GitHub.com/acme/twin/")
    for key in ("git@github.com:acme/twin.git", "https://github.com/acme/twin"):
        mapping = pj.parse_map(f"{key}=ledger")
        assert pj.identify(ssh, mapping).slug == pj.identify(https, mapping).slug == "ledger"


def test_credentials_in_a_url_are_never_printed(tmp_path, run_memwiki):
    root = repo(tmp_path / "creds", f"https://ada:{TOKEN}@github.com/acme/vault.git")
    done = run_memwiki("project", "--json", cwd=root)
    assert json.loads(done.stdout)["project"] == "vault" and TOKEN not in done.stdout
    # A bad entry in the projects map is quoted in the error, without its token.
    bad = f"https://ada:{TOKEN}@github.com/acme/vault.git=Not_A_Slug"
    done = run_memwiki("project", cwd=root, env={"MEMWIKI_PROJECTS": bad})
    assert done.returncode == 2 and "Not_A_Slug" in done.stderr
    assert TOKEN not in done.stderr + done.stdout and "***@github.com" in done.stderr


def test_a_config_that_is_a_named_pipe_does_not_hang(tmp_path):
    # Found with `mkfifo .git/config`: `memwiki project` waited for a writer for ever
    # (killed by `timeout 10`, exit 124); every retrieve in that tree would have too.
    root = repo(tmp_path / "piped")
    (root / ".git" / "config").unlink()
    os.mkfifo(root / ".git" / "config")
    # In a child with a timeout, so that a regression fails this test instead of hanging.
    code = "import sys; from memwiki.project import identify; print(identify(sys.argv[1]).slug)"
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=30,
        env={**os.environ, "PYTHONPATH": str(Path(pj.__file__).parent.parent)},
    )  # fmt: skip
    assert done.stdout == "piped\n", done.stderr


@pytest.mark.parametrize(
    "local, user, origin",
    [
        ('[url "git@github.com:acme/"]\n\tinsteadOf = work:\n', "", "work:ledger"),
        ("", '[url "git@github.com:acme/"]\n\tinsteadOf = work:\n', "work:ledger"),
        (  # the longest prefix wins, across files
            '[url "git@github.com:"]\n\tinsteadOf = gh:\n',
            '[url "git@github.com:acme/"]\n\tinsteadOf = gh:acme-\n',
            "gh:acme-ledger",
        ),
        (
            '[url "https://ci:tok@github.com/"] insteadOf = https://github.com/\n',
            "",
            "https://github.com/acme/ledger",
        ),
    ],
)
def test_insteadof_rewrites_are_applied_as_git_applies_them(tmp_path, local, user, origin):
    # `work:ledger` was compared with projects-map URL entries as written, so the entry
    # `git@github.com:acme/ledger.git` missed the clone that git fetches from exactly there.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(user)
    root = repo(tmp_path / "clone", origin)
    with (root / ".git" / "config").open("a") as fh:
        fh.write(local)
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GIT_CONFIG_GLOBAL", None)
    by_git = subprocess.run(
        ["git", "ls-remote", "--get-url", "origin"],
        cwd=root, capture_output=True, text=True, check=True, timeout=30, env=env,
    ).stdout.strip()  # fmt: skip
    assert remote_url(root / ".git", home) == by_git
    assert url_key(by_git) == "github.com/acme/ledger"
    mapping = pj.parse_map("git@github.com:acme/ledger.git=books")
    assert pj.identify(root, mapping, home).slug == "books"
    assert pj.identify(root, {}, home).slug == "ledger"


def test_config_headers_in_the_forms_git_accepts(tmp_path):
    root = repo(tmp_path / "r")
    config = root / ".git" / "config"
    for text, url in [
        ("[remote.origin]\n\turl = git@h:a/old-form.git\n", "git@h:a/old-form.git"),
        ('[remote "origin"] url = git@h:a/one-line.git\n', "git@h:a/one-line.git"),
        ('[Remote "origin"]\n\tURL = git@h:a/cased.git\n', "git@h:a/cased.git"),
        ('[remote "Origin"]\n\turl = git@h:a/not-origin.git\n', None),
        ('\ufeff[remote "origin"]\n\turl = git@h:a/bom.git\n', "git@h:a/bom.git"),
        ('[core]\r\n[remote "origin"]\r\n\turl = git@h:a/crlf.git\r\n', "git@h:a/crlf.git"),
    ]:
        config.write_bytes(text.encode("utf-8"))  # byte for byte
        done = subprocess.run(
            ["git", "config", "--get", "remote.origin.url"],
            cwd=root, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert (done.stdout.strip() or None) == url
        assert origin_url(root / ".git") == url


def test_worktrees_beside_a_hidden_bare_repository_are_one_project(tmp_path):
    # The "bare clone + worktrees" layout: ledger/.bare, ledger/.git -> .bare, ledger/main.
    # Without an origin the worktree was project `bare` and the folder `ledger`.
    seed = repo(tmp_path / "seed")
    git(
        seed,
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "i",
    )
    holder = tmp_path / "ledger"
    holder.mkdir()
    git(holder, "clone", "-q", "--bare", str(seed), ".bare")
    git(holder / ".bare", "config", "--unset", "remote.origin.url")
    (holder / ".git").write_text("gitdir: ./.bare\n")
    git(holder, "worktree", "add", "-q", "main", "main")
    assert pj.identify(holder).slug == pj.identify(holder / "main").slug == "ledger"
    bare = tmp_path / "harbor.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(bare, "config", "--unset", "remote.origin.url")
    git(bare, "worktree", "add", "-q", str(tmp_path / "harbor-main"), "main")
    assert pj.identify(tmp_path / "harbor-main").slug == "harbor"


def test_a_tilde_user_directory_entry_is_that_users_home(tmp_path):
    # `~root/src/x=slug` was read as HOME + "root/src/x" whenever HOME was known.
    user_home = Path(os.path.expanduser("~root"))
    if not user_home.is_absolute():
        pytest.skip("no user named root here")
    here = user_home / "src" / "x"
    mapping = pj.parse_map("~root/src=mine")
    assert pj._mapped_by_path(here, mapping, tmp_path) == "mine"
    assert pj._mapped_by_path(tmp_path / "src", {"~/src": "ours"}, tmp_path) == "ours"


def test_a_dotfiles_repository_in_home_is_no_project(tmp_path, run_memwiki):
    # Found with `git init ~` (dotfiles): ~/Downloads and ~ itself were project `home`,
    # and a session started in ~ had its personal preferences filed under that project.
    home = tmp_path / "home"
    repo(home, "git@github.com:ada/dotfiles.git")
    (home / "Downloads").mkdir()
    code = repo(home / "src" / "ledger", "git@github.com:acme/ledger.git")
    assert pj.identify(home / "Downloads", {}, home) is None
    assert pj.identify(home, {}, home) is None
    assert pj.identify(code, {}, home).slug == "ledger"
    assert pj.identify(home / "Downloads").slug == "dotfiles"  # no HOME known: as before
    mapping = pj.parse_map("https://github.com/ada/dotfiles=dots")
    assert pj.identify(home / "Downloads", mapping, home).slug == "dots"  # mapped: kept
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    done = run_memwiki("project", cwd=home / "Downloads", env=env)
    assert done.returncode == 0 and done.stdout.startswith("no project (a repository of your home")
    done = run_memwiki("project", "--json", cwd=code, env=env)
    assert json.loads(done.stdout)["project"] == "ledger"


def test_an_absurdly_long_directory_in_a_log_costs_little(tmp_path):
    # Found feeding identify the `cwd` of a broken host log: the upward walk built every
    # parent first, quadratic in the depth (20,000 parts: 3.2 s; a megabyte: hours).
    code = (
        "import sys, time; from memwiki.project import identify\n"
        "t = time.perf_counter()\n"
        "for n in (25_000, 500_000):\n"
        "    assert identify('/a' * n, {'/a/a/b': 'x'}) is None\n"
        "print(round(time.perf_counter() - t, 3))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(pj.__file__).parent.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 3.0  # 0.15 s here; the quadratic walk took minutes
