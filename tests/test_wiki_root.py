"""Only a memwiki wiki is opened as one: a code repository named by mistake is left alone.

`--wiki`, `$MEMWIKI_DIR` or the config file can name any directory. Every command used
to accept any git repository, so `memwiki commit` committed a project's work in progress
as "memwiki: updated src/app.py", `add` committed memory/ files into it and `retrieve`
left a `.memwiki/` folder behind. These tests run the real CLI in subprocesses against
real git repositories and compare the repository before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

RECALL = "---\nname: tea\ndescription: How the team brews tea\n---\n# Tea\nGreen tea at 80C.\n"
SESSION = {
    "schema": "1.0",
    "host": "generic",
    "session_id": "s1",
    "items": [{"type": "message", "role": "user", "content": "hello"}],
}


@pytest.fixture
def project(tmp_path, git) -> Path:
    """An ordinary code repository: commits, a hand edit, a staged edit, an untracked file."""
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    (root / "src" / "app.py").write_text("print('shop')\n")
    (root / "README.md").write_text("# shop\n")
    (root / ".gitignore").write_text("build/\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "shop: first")
    (root / "src" / "app.py").write_text("print('shop')\n# work in progress\n")
    (root / "README.md").write_text("# shop\nstaged\n")
    git(root, "add", "README.md")
    (root / "notes.txt").write_text("untracked\n")
    (root / "session.json").write_text(json.dumps(SESSION))
    return root


def snapshot(git, root: Path) -> dict:
    """Everything a memwiki command could change: files (outside .git), index, refs, hooks, config."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not (dirpath == str(root) and d == ".git"))
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            files[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return {
        "files": files,
        "status": git(root, "status", "--porcelain", "--ignored"),
        "staged": git(root, "diff", "--cached"),
        "refs": git(root, "for-each-ref"),
        "head": git(root, "rev-parse", "HEAD"),
        "hooks": sorted(os.listdir(root / ".git" / "hooks")),
        "config": git(root, "config", "--local", "--list"),
    }


# Each command that reads or writes the wiki, with what it needs to get that far.
COMMANDS = {
    "put": (["put", "-"], json.dumps({"recall_files": [{"track": "memory", "name": "tea",
                                                         "description": "Tea"}]})),
    "add": (["add", "memory", "tea", "-d", "How the team brews tea"], "Green tea at 80C.\n"),
    "rm": (["rm", "memory/tea"], None),
    "commit": (["commit", "-m", "x"], None),
    "sync": (["sync"], None),
    "reindex": (["reindex"], None),
    "retrieve": (["retrieve", "tea", "--mode", "bm25"], None),
    "retrieve-json": (["retrieve", "tea", "--json"], None),
    "list": (["list"], None),
    "lint": (["lint"], None),
    "links": (["links", "memory/tea"], None),
    "log": (["log"], None),
    "restore": (["restore", "memory/tea"], None),
    "untrack-ignored": (["untrack-ignored"], None),
    "hooks-install": (["hooks", "install"], None),
    "remote-add": (["remote", "add", "file:///nowhere"], None),
    "memorize-prepare": (["memorize", "prepare", "session.json"], None),
    "eval": (["eval", "queries.jsonl"], None),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_code_repository_is_refused_and_left_untouched(name, project, run_memwiki, git):
    argv, stdin = COMMANDS[name]
    before = snapshot(git, project)
    done = run_memwiki("--wiki", project, *argv, input=stdin, cwd=project)
    assert done.returncode == 3, done.stderr
    assert done.stderr == (
        f"memwiki: error: {project} is a git repository but not a memwiki wiki "
        "(no memory/ and skill/ folders, no /.memwiki/ line in .gitignore): "
        f"pass your wiki with --wiki PATH, or make this one a wiki with "
        f"`memwiki init --force {project}`\n"
    )
    if "--json" in argv:
        assert json.loads(done.stdout)["error"]["exit_code"] == 3
    else:
        assert done.stdout == ""
    assert snapshot(git, project) == before


def test_a_code_repository_in_memwiki_dir_is_refused_too(project, run_memwiki, git):
    before = snapshot(git, project)
    done = run_memwiki("add", "memory", "tea", "-d", "Tea", env={"MEMWIKI_DIR": str(project)})
    assert done.returncode == 3 and "is a git repository but not a memwiki wiki" in done.stderr
    done = run_memwiki("retrieve", "tea", cwd=project, env={"MEMWIKI_DIR": str(project)})
    assert done.returncode == 3 and "is a git repository but not a memwiki wiki" in done.stderr
    assert snapshot(git, project) == before


def test_the_prompt_hook_writes_nothing_into_a_code_repository(project, run_memwiki, git):
    before = snapshot(git, project)
    payload = {"prompt": "how do we brew tea?", "cwd": str(project)}
    done = run_memwiki(
        "hook", "claude-code", input=json.dumps(payload), env={"MEMWIKI_DIR": str(project)}
    )
    assert done.returncode == 0 and done.stdout == ""
    assert snapshot(git, project) == before  # no .memwiki/logs/hook.log either


def test_doctor_names_the_problem(project, run_memwiki, git):
    before = snapshot(git, project)
    done = run_memwiki("--wiki", project, "doctor", "--json")
    assert done.returncode == 1
    (check,) = json.loads(done.stdout)["checks"]
    assert not check["ok"] and "not a memwiki wiki" in check["detail"]
    assert snapshot(git, project) == before


def test_a_repository_polluted_by_an_older_memwiki_stays_refused(project, run_memwiki, git):
    # What `memwiki --wiki shop add ...` and `retrieve` left behind before this check.
    (project / "memory").mkdir()
    (project / "memory" / "tea.md").write_text(RECALL)
    (project / ".memwiki" / "index").mkdir(parents=True)
    done = run_memwiki("--wiki", project, "commit")
    assert done.returncode == 3 and "not a memwiki wiki" in done.stderr
    assert git(project, "log", "--format=%s") == "shop: first\n"


def test_init_refuses_a_code_repository_without_force_and_commits_only_its_layout(
    project, run_memwiki, git
):
    before = snapshot(git, project)
    done = run_memwiki("init", project)
    assert done.returncode == 4 and "not a memwiki wiki" in done.stderr
    assert snapshot(git, project) == before
    done = run_memwiki("init", project, "--force")
    assert done.returncode == 0, done.stderr
    committed = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == [
        ".gitignore",
        ".pre-commit-config.yaml",
        "memory/.gitkeep",
        "skill/.gitkeep",
    ]
    assert (project / "README.md").read_text() == "# shop\nstaged\n"  # the project's own
    assert (project / ".gitignore").read_text().startswith("build/\n")
    # The person's work in progress stays as it was: modified, staged, untracked.
    status = git(project, "status", "--porcelain")
    assert status == "M  README.md\n M src/app.py\n?? notes.txt\n?? session.json\n"
    assert run_memwiki("--wiki", project, "list").returncode == 0


def test_clone_refuses_a_code_repository_and_leaves_nothing(
    project, tmp_path, run_memwiki, git, isolated_env
):
    remote = tmp_path / "shop.git"
    git(tmp_path, "clone", "-q", "--bare", str(project), str(remote))
    refs = git(remote, "for-each-ref")
    target = tmp_path / "laptop" / "wiki"
    done = run_memwiki("clone", remote, target)
    assert done.returncode == 4
    assert done.stderr == (
        f"memwiki: error: {remote} is not a memwiki wiki (no memory/ and skill/ folders, no "
        "/.memwiki/ line in .gitignore); nothing was cloned: to make it one on purpose, "
        "`git clone` it and run `memwiki init --force PATH`\n"
    )
    assert list(target.parent.iterdir()) == []  # no clone, no hidden half-clone
    assert not (isolated_env / ".config" / "memwiki" / "config.toml").exists()
    assert git(remote, "for-each-ref") == refs  # so no later `sync` can push into it
    # A wiki's remote and an empty remote still clone.
    wiki = tmp_path / "wiki"
    assert run_memwiki("init", wiki).returncode == 0
    assert run_memwiki("clone", wiki, tmp_path / "w2").returncode == 0
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "empty.git"))
    assert run_memwiki("clone", tmp_path / "empty.git", tmp_path / "w3").returncode == 0


# --------------------------------------------------------------- what is a wiki


def test_an_initialised_wiki_and_a_plain_git_clone_of_it_are_wikis(tmp_path, run_memwiki, git):
    wiki = tmp_path / "wiki"
    assert run_memwiki("init", wiki).returncode == 0
    done = run_memwiki("--wiki", wiki, "add", "memory", "tea", "-d", "Tea", input="Green tea.\n")
    assert done.returncode == 0, done.stderr
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(wiki), str(clone))
    assert not (clone / ".memwiki").exists()  # the sidecar is git-ignored: not in a clone
    done = run_memwiki("--wiki", clone, "retrieve", "green tea", "--mode", "bm25", "--files")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "memory/tea.md\n"
    done = run_memwiki("--wiki", clone, "add", "memory", "kettle", "-d", "K", input="Boil.\n")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "layout",
    [
        # What the first `memwiki init` wrote: tracks kept by .gitkeep, a one-line .gitignore.
        {"memory/.gitkeep": "", "skill/.gitkeep": "", ".gitignore": "/.memwiki/\n",
         "README.md": "# Memory\n"},
        # A wiki whose empty skill/ track was removed: its .gitignore still says so.
        {"memory/tea.md": RECALL, ".gitignore": "*.swp\n/.memwiki/\n"},
        # A wiki whose .gitignore lost memwiki's line: both tracks still say so.
        {"memory/tea.md": RECALL, "skill/.gitkeep": ""},
    ],
    ids=["first-version", "no-skill-track", "no-gitignore-line"],
)  # fmt: skip
def test_wikis_of_every_shape_memwiki_made_are_opened(layout, tmp_path, run_memwiki, git):
    root = tmp_path / "old"
    root.mkdir()
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    for rel, text in layout.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", ".")
    git(root, "commit", "-qm", "memwiki: initialise the wiki")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    for where in (root, clone):
        done = run_memwiki("--wiki", where, "retrieve", "tea", "--mode", "bm25", "--files")
        assert done.returncode == 0, done.stderr
        done = run_memwiki("--wiki", where, "add", "memory", "kettle", "-d", "K", input="Boil.\n")
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("folder", ["examples/demo-wiki", "tests/bench/opswiki/wiki"])
def test_the_demo_and_bench_wikis_are_wikis(folder, tmp_path, run_memwiki, git):
    # Their users copy them and `git init` the copy (the Makefile's demo, the benches).
    root = tmp_path / "copy"
    shutil.copytree(Path(__file__).resolve().parent.parent / folder, root)
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    done = run_memwiki("--wiki", root, "list", "--json")
    assert done.returncode == 0, done.stderr


def test_an_obsidian_vault_made_a_wiki_as_documented_is_a_wiki(tmp_path, run_memwiki, git):
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text("{}\n")
    (vault / "Daily.md").write_text("# A note\n")
    assert run_memwiki("init", vault).returncode == 0  # not yet in git: init makes it one
    done = run_memwiki("--wiki", vault, "retrieve", "note", "--mode", "bm25", "--files")
    assert done.returncode == 0, done.stderr
    shutil.rmtree(vault / ".memwiki")
    assert run_memwiki("--wiki", vault, "commit").returncode == 0
