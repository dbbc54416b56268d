"""Regenerate the example outputs in docs/reference.md from real runs (a small cog).

A fenced block right after a `<!-- gen-reference -->` line is an example session: each
`$ COMMAND` line in it is run, in document order, in one shell session on a fresh machine
(HOME=/home/ada, git identity "Ada Example", the default wiki ~/memwiki), and the lines
after it are replaced by what it printed (stdout and stderr, then `[exit N]` when it
failed). A `<!-- $ COMMAND -->` line anywhere is run too, unseen: the set-up the prose
describes ("after editing a file by hand"). Files that examples read (payload.json, ...)
come from docs/examples/; examples/ is copied to ~/examples.

    python scripts/gen_reference.py           # rewrite docs/reference.md
    python scripts/gen_reference.py --check   # exit 1 when the examples drift (make lint)

The check ignores what differs on every run: commit ids, timestamps, run ids, latencies.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "docs" / "reference.md"
FIXTURES = REPO / "docs" / "examples"
SHOWN_HOME = "/home/ada"
MARK = "<!-- gen-reference -->"
HIDDEN = re.compile(r"^<!-- \$ (.*) -->$")
TIMEOUT = 300

VOLATILE = [
    (re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b"), "<run-id>"),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), "<hex>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? ms\b"), "<n> ms"),
    # embedding progress lines: rate and time left depend on the machine
    (re.compile(r"(\d+%), \d+ items/s, about \d+ s left\)"), r"\1, <rate>)"),
    (re.compile(r"(embedded \d+ items in) \d+(\.\d+)? s"), r"\1 <n> s"),
    # eval's latency columns: the last two numbers of a mode's row.
    (re.compile(r"^((?:bm25|vector|hybrid)\s.*?)\s+\d+\.\d+\s+\d+\.\d+$", re.M), r"\1 <p50> <p95>"),
    (re.compile(r"[ \t]+$", re.M), ""),
]


def normalize(text: str) -> str:
    """text with what changes on every run replaced by placeholders."""
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


class Session:
    """One shell session on a fresh, isolated HOME."""

    def __init__(self, root: Path):
        self.home = root / "home" / "ada"
        self.home.mkdir(parents=True)
        shutil.copytree(REPO / "examples", self.home / "examples")
        if FIXTURES.is_dir():
            for item in FIXTURES.iterdir():
                shutil.copy2(item, self.home / item.name)
        (self.home / ".gitconfig").write_text(
            "[user]\n\tname = Ada Example\n\temail = ada@example.com\n[init]\n\tdefaultBranch = main\n"
        )
        bin_dir = Path(sys.executable).parent
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "GIT_AUTHOR_NAME": "Ada Example",
            "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada Example",
            "GIT_COMMITTER_EMAIL": "ada@example.com",
            "COLUMNS": "200",
        }
        if "PYTHONPATH" in os.environ:  # a worktree's code, not the editable install's
            self.env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def run(self, command: str) -> str:
        """The command's output as the reference shows it (stderr merged, [exit N] added)."""
        command = command.replace(SHOWN_HOME, str(self.home))
        done = subprocess.run(
            ["bash", "-c", f"exec 2>&1; {command}"],
            cwd=self.home,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            timeout=TIMEOUT,
        )
        out = done.stdout.decode("utf-8", "replace").replace(str(self.home), SHOWN_HOME)
        if out and not out.endswith("\n"):
            out += "\n"
        return out + (f"[exit {done.returncode}]\n" if done.returncode else "")


def _fence_end(lines: list[str], start: int) -> int:
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("```"):
            return i
    raise SystemExit(f"{REFERENCE}:{start + 1}: unclosed example block")


def _commands(block: list[str]) -> list[str]:
    return [line[2:] for line in block if line.startswith("$ ")]


def generate(text: str, session: Session) -> str:
    """The reference with every marked example block replaced by fresh output."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        hidden = HIDDEN.match(line)
        if hidden:
            session.run(hidden.group(1))
        if line == MARK and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            end = _fence_end(lines, i + 1)
            out.append(lines[i + 1])
            old = lines[i + 2 : end]
            parts = [f"$ {c}\n{session.run(c)}" for c in _commands(old)]
            new = "\n".join(parts).rstrip("\n").splitlines()
            # A block that differs only in ids and times stays as it was: no churn in git.
            same = normalize("\n".join(new)) == normalize("\n".join(old))
            out.extend(old if same else new)
            out.append(lines[end])
            i = end + 1
            continue
        i += 1
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the examples drift")
    args = parser.parse_args()
    current = REFERENCE.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="memwiki-reference-") as tmp:
        fresh = generate(current, Session(Path(tmp)))
    if not args.check:
        REFERENCE.write_text(fresh, encoding="utf-8")
        print(f"wrote {REFERENCE.relative_to(REPO)}")
        return 0
    if normalize(fresh) == normalize(current):
        print(f"{REFERENCE.relative_to(REPO)}: examples match the commands' output")
        return 0
    diff = difflib.unified_diff(
        normalize(current).splitlines(),
        normalize(fresh).splitlines(),
        "docs/reference.md",
        "what the commands print now",
        lineterm="",
    )
    print("\n".join(diff))
    print(
        "docs/reference.md: examples drifted; run `make docs` and review the diff", file=sys.stderr
    )
    return 1


if __name__ == "__main__":
    os.umask(0o022)
    raise SystemExit(main())
