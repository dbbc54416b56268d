"""Shared helpers for the memorize tests (real wikis, real git; no tests in this module)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memwiki.wiki import Wiki

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "memorize"


def git(root: Path, *args: str) -> str:
    """Run the git CLI in root and return its stdout."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def make_wiki(tmp_path: Path, files: dict[str, str] | None = None) -> Wiki:
    """A fresh wiki, with files committed on top of the initial commit."""
    wiki, _ = Wiki.init(tmp_path / "wiki")
    for rel, text in (files or {}).items():
        path = wiki.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if files:
        wiki.commit("seed\n")
    return wiki


def recall(name: str, body: str, description: str | None = None, extra: str = "") -> str:
    """The text of a valid RecallFile."""
    desc = description or f"Notes about {name.replace('-', ' ')}"
    return f"---\nname: {name}\ndescription: {desc}\n{extra}---\n{body}"


def payload(tmp_path: Path, name: str, messages: list[str], extra_items: list | None = None):
    """Write a schema 1.0 payload with user/assistant messages (and optional extra items)."""
    items: list[dict] = []
    for i, text in enumerate(messages):
        items.append({"type": "message", "role": "user" if i % 2 == 0 else "assistant",
                      "content": text})  # fmt: skip
    items.extend(extra_items or [])
    path = tmp_path / name
    path.write_text(json.dumps({"schema_version": "1.0", "items": items}), encoding="utf-8")
    return path


def write(root: Path, rel: str, text: str) -> Path:
    """Write a file under root, creating folders."""
    path = Path(root) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def merges(root: Path) -> list[str]:
    """Merge commits reachable from HEAD, newest first."""
    return git(root, "rev-list", "--merges", "HEAD").split()


def run_branches(root: Path) -> list[str]:
    """memwiki/run/* branches, as git lists them."""
    out = git(root, "branch", "--list", "memwiki/run/*", "--format=%(refname:short)")
    return out.split()


def worktree_count(root: Path) -> int:
    """How many worktrees `git worktree list` shows (the wiki itself counts as one)."""
    lines = git(root, "worktree", "list", "--porcelain").splitlines()
    return sum(1 for line in lines if line.startswith("worktree "))


def clean_status(root: Path) -> str:
    """`git status --porcelain` of the wiki (empty when clean)."""
    return git(root, "status", "--porcelain")


def all_git_objects(root: Path) -> bytes:
    """The content of every object in the repository, as `git cat-file` prints it."""
    done = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return done.stdout


def all_file_bytes(root: Path) -> list[tuple[Path, bytes]]:
    """Every regular file under root (the .git and .memwiki folders included)."""
    out = []
    for path in sorted(Path(root).rglob("*")):
        if path.is_file() and not path.is_symlink():
            out.append((path, path.read_bytes()))
    return out


def run_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet in a fresh interpreter (the same virtualenv)."""
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120
    )
