"""pre-commit: the shipped hooks, the config `memwiki init` writes, `init --hooks`, `hooks install`,
and a real `git commit` through the real pre-commit tool. Also: memwiki never writes into
the vault's dot-folders (.obsidian/, .trash/)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memwiki.wiki import PRE_COMMIT_CONFIG, Wiki

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
HOOK_IDS = ["memwiki-lint", "memwiki-reindex"]

needs_pre_commit = pytest.mark.skipif(
    not (VENV_BIN / "pre-commit").exists() or not (VENV_BIN / "memwiki").exists(),
    reason="pre-commit and memwiki must be installed beside this Python (pip install -e .[test])",
)


@pytest.fixture
def tool_path(tmp_path, monkeypatch) -> Path:
    """Put this environment's memwiki and pre-commit first on PATH; pre-commit's cache in tmp."""
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    return VENV_BIN


def git_commit(root: Path, message: str) -> subprocess.CompletedProcess:
    """`git commit` as a person types it: the installed pre-commit hook runs."""
    return subprocess.run(
        ["git", "commit", "-m", message],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def rf_text(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


# ------------------------------------------------------------ the config files


def test_init_writes_and_commits_a_local_system_hook_config(wiki, git) -> None:
    assert PRE_COMMIT_CONFIG in git(wiki.root, "ls-files").split()
    config = yaml.safe_load((wiki.root / PRE_COMMIT_CONFIG).read_text())
    (repo,) = config["repos"]
    assert repo["repo"] == "local"
    hooks = {h["id"]: h for h in repo["hooks"]}
    assert list(hooks) == HOOK_IDS
    assert all(h["language"] == "system" for h in hooks.values())  # nothing to download
    assert all(h["entry"].startswith("memwiki --wiki . ") for h in hooks.values())
    assert re.search(hooks["memwiki-lint"]["files"], "memory/x.md")
    assert not re.search(hooks["memwiki-lint"]["files"], "notes.txt")
    assert hooks["memwiki-reindex"]["pass_filenames"] is False
    assert hooks["memwiki-reindex"]["always_run"] is True


def test_the_shipped_manifest_matches_the_wiki_config() -> None:
    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    template = yaml.safe_load((REPO / "templates" / "wiki" / "pre-commit-config.yaml").read_text())
    local = {h["id"]: h for h in template["repos"][0]["hooks"]}
    assert [h["id"] for h in manifest] == HOOK_IDS
    for hook in manifest:
        for key in ("entry", "language", "files", "pass_filenames", "always_run"):
            assert hook.get(key) == local[hook["id"]].get(key), (hook["id"], key)


@needs_pre_commit
def test_pre_commit_accepts_both_files(wiki) -> None:
    pre_commit = str(VENV_BIN / "pre-commit")
    for args in (
        ["validate-manifest", str(REPO / ".pre-commit-hooks.yaml")],
        ["validate-config", str(wiki.root / PRE_COMMIT_CONFIG)],
    ):
        done = subprocess.run([pre_commit, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_init_keeps_a_repositorys_own_pre_commit_config(tmp_path, git) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q")
    (proj / PRE_COMMIT_CONFIG).write_text("repos: []\n")
    Wiki.init(proj, force=True)
    assert (proj / PRE_COMMIT_CONFIG).read_text() == "repos: []\n"


# ----------------------------------------------------- init --hooks, hooks install


def test_init_hooks_without_pre_commit_warns_and_succeeds(tmp_path, cli, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no pre-commit anywhere
    monkeypatch.setenv("MEMWIKI_DIR", str(tmp_path / "configured"))  # root is another wiki
    root = tmp_path / "w"
    code, out, err = cli("init", "--hooks", root)
    assert code == 0
    assert out == (
        f"Initialised a memwiki wiki in {root}\n"
        f"Note: commands without --wiki still use {tmp_path / 'configured'}: pass --wiki "
        f"{root}, or set MEMWIKI_DIR={root}\n"
    )
    assert err.count("\n") == 1 and err.startswith("memwiki: pre-commit is not installed")
    # root is not the configured wiki (~/memwiki), so the hint names it.
    assert "pip install pre-commit" in err and f"`memwiki --wiki {root} hooks install`" in err
    assert (root / PRE_COMMIT_CONFIG).is_file()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    code, out, err = cli("--wiki", root, "hooks", "install", "--json")
    data = json.loads(out)
    assert code == 0 and data["installed"] is False and data["pre_commit"] is None
    assert data["config_written"] is False and data["hooks"] == HOOK_IDS
    assert "pip install pre-commit" in err


@needs_pre_commit
def test_hooks_install_on_an_existing_wiki(tmp_path, cli, git, tool_path) -> None:
    wiki, _ = Wiki.init(tmp_path / "w")
    # A wiki made before memwiki wrote the config: `hooks install` adds and commits it.
    git(wiki.root, "rm", "-q", PRE_COMMIT_CONFIG)
    git(wiki.root, "commit", "-qm", "an older wiki")
    (wiki.root / "README.md").write_text("a hand edit in progress\n")
    code, out, err = cli("--wiki", wiki.root, "hooks", "install")
    assert code == 0, err
    assert out == (
        f"wrote and committed {PRE_COMMIT_CONFIG}\n"
        f"pre-commit hooks installed in {wiki.root}: memwiki-lint, memwiki-reindex\n"
    )
    assert git(wiki.root, "show", "--name-only", "--format=", "HEAD").split() == [PRE_COMMIT_CONFIG]
    assert git(wiki.root, "status", "--porcelain") == " M README.md\n"
    assert "pre-commit" in (wiki.root / ".git" / "hooks" / "pre-commit").read_text()
    code, out, _ = cli("--wiki", wiki.root, "hooks", "install", "--json")
    data = json.loads(out)
    assert code == 0 and data["installed"] is True and data["config_written"] is False
    assert data["pre_commit"] == str(tool_path / "pre-commit")


@needs_pre_commit
def test_a_failing_pre_commit_install_is_one_clear_error(wiki, cli, git, tool_path) -> None:
    git(wiki.root, "config", "core.hooksPath", "elsewhere")  # pre-commit refuses this
    code, out, err = cli("--wiki", wiki.root, "hooks", "install")
    assert code == 5 and out == ""
    assert err.startswith("memwiki: error: `pre-commit install` failed in ")
    assert err.count("\n") == 1 and "hooksPath" in err


# ------------------------------------------------------- acceptance item 3


@needs_pre_commit
def test_acceptance_git_commit_runs_lint_and_reindex(tmp_path, run_memwiki, git, tool_path) -> None:
    from memwiki.config import load
    from memwiki.index.indexer import Index

    root = tmp_path / "wiki"
    done = run_memwiki("init", "--hooks", root)
    assert done.returncode == 0, done.stderr
    assert "pre-commit hooks installed" in done.stdout
    head = git(root, "rev-parse", "HEAD")

    # Broken frontmatter: the commit is refused, naming the file and the line.
    (root / "memory" / "bad.md").write_text(rf_text("bad", "[an unclosed list", "# Bad\n"))
    git(root, "add", "memory/bad.md")
    refused = git_commit(root, "add a broken file")
    assert refused.returncode != 0
    output = refused.stdout + refused.stderr
    assert re.search(r"^memory/bad\.md:3: invalid YAML in frontmatter", output, re.M), output
    assert git(root, "rev-parse", "HEAD") == head

    # A broken wikilink is refused too, with its line.
    git(root, "rm", "-q", "-f", "memory/bad.md")
    good = root / "memory" / "zebra-facts.md"
    good.write_text(
        rf_text("zebra-facts", "What we know about zebras", "# Zebras\nSee [[nope]].\n")
    )
    git(root, "add", "memory/zebra-facts.md")
    refused = git_commit(root, "add zebras")
    assert "memory/zebra-facts.md:6: broken link [[nope]]" in refused.stdout + refused.stderr

    # A valid file is committed, and the commit itself brought the index up to date.
    good.write_text(good.read_text().replace("[[nope]]", "[[README]]"))
    git(root, "add", "memory/zebra-facts.md")
    accepted = git_commit(root, "add zebras")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert re.search(r"memwiki reindex.*Passed", accepted.stdout + accepted.stderr)
    assert git(root, "status", "--porcelain") == ""
    index = Index(Wiki(root), load({"wiki": str(root)}), notify=lambda m: None)
    snap = index.snapshot(need_vectors=False)
    assert snap.updated_files == 0  # nothing left to index: the hook did it
    assert "memory/zebra-facts.md" in snap.state.files
    done = run_memwiki("--wiki", root, "retrieve", "--mode", "bm25", "--files", "zebras")
    assert done.stdout == "memory/zebra-facts.md\n"
    answer = json.loads(run_memwiki("--wiki", root, "retrieve", "zebras", "--json").stdout)
    assert answer["index"]["updated_files"] == 0


# ---------------------------------------------- the vault's dot-folders stay untouched


def _tree(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_full_cycle_leaves_obsidian_and_trash_byte_identical(tmp_path, cli) -> None:
    root = tmp_path / "vault"
    assert cli("init", root)[0] == 0
    settings = {
        ".obsidian/app.json": '{"newLinkFormat": "shortest"}\n',
        ".obsidian/workspace.json": '{"main": {}}\n',
        ".obsidian/plugins/x/data.json": "{}\n",
        ".obsidian/snippets/zebra.md": rf_text("zebra", "not a note", "zebra [[nowhere]]\n"),
        ".trash/old-zebra.md": rf_text("old-zebra", "deleted", "zebra [[nowhere]]\n"),
        "memory/.drafts/zebra.md": "no frontmatter zebra [[nowhere]]\n",
    }
    for rel, text in settings.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    before = {d: _tree(root / d) for d in (".obsidian", ".trash", "memory/.drafts")}

    w = ["--wiki", root]
    assert cli(*w, "add", "memory", "zebra-notes", "-d", "Zebra notes", stdin="zebras\n")[0] == 0
    (root / "skill" / "stripes.md").write_text(rf_text("stripes", "Stripes", "[[zebra-notes]]\n"))
    assert cli(*w, "commit", "-m", "hand edit")[0] == 0
    assert cli(*w, "reindex", "--full")[0] == 0
    code, out, _ = cli(*w, "retrieve", "--mode", "bm25", "--files", "zebra")
    assert code == 0 and out.split() == ["memory/zebra-notes.md", "skill/stripes.md"]
    assert cli(*w, "lint") == (0, "", "")
    assert cli(*w, "links", "memory/zebra-notes")[0] == 0
    assert cli(*w, "list")[0] == 0
    assert cli(*w, "rm", "skill/stripes")[0] == 0
    assert cli(*w, "add", ".obsidian", "x", "-d", "no")[0] == 2  # not a track
    assert cli(*w, "add", ".trash", "x", "-d", "no")[0] == 2

    assert {d: _tree(root / d) for d in before} == before
    assert not (root / ".obsidian" / "x.md").exists() and not (root / ".trash" / "x.md").exists()
