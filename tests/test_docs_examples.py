"""The docs' links and Python examples, run as a reader meets them.

docs/reference.md is held to `--help` by test_docs.py and the README's quick start by
test_cli_newuser.py; this file holds the rest a new user follows literally: every relative
link and `#anchor` between the docs reaches a heading, and the Python examples of
docs/guide.md and docs/library.md print what the page says they print.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*(```|~~~)")


def _prose_lines(path: Path) -> list[str]:
    """The lines outside fenced code blocks (a link inside a fence is an example)."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings: lowercased, punctuation dropped, spaces to
    hyphens, a repeated heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    for line in _prose_lines(path):
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def _links() -> list[tuple[str, str]]:
    """(document, target) for every relative markdown link in README.md and docs/*.md."""
    found = []
    for doc in DOCS:
        for line in _prose_lines(doc):
            line = re.sub(r"`[^`]*`", "", line)  # code spans hold examples, not links
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if not re.match(r"[a-z]+:", target):
                    found.append((str(doc.relative_to(REPO)), target))
    return found


def test_the_link_scan_sees_the_docs_links():
    links = _links()
    assert ("README.md", "docs/guide.md") in links
    assert ("docs/guide.md", "#projects") in links
    assert len(links) > 50


@pytest.mark.parametrize(("doc", "target"), _links())
def test_every_relative_link_and_anchor_reaches_a_heading(doc, target):
    """Bug it holds: reference.md's contents linked #retrieval-index-memorize-and-agent-hosts,
    a heading that no longer existed; nothing checked anchors between the docs."""
    path, _, anchor = target.partition("#")
    file = (REPO / doc).parent / path if path else REPO / doc
    assert file.exists(), f"{doc}: {target}: no such file"
    if anchor and file.suffix == ".md":
        assert anchor in _anchors(file), f"{doc}: {target}: no such heading in {path or doc}"


def _example(doc: str, after: str) -> tuple[str, str]:
    """The first ```python block after the text `after` in doc, and the block its
    'prints' shows."""
    text = (REPO / "docs" / doc).read_text(encoding="utf-8").split(after, 1)[1]
    code, shown = re.findall(r"```python\n(.*?)```\n\nprints\n\n```\n(.*?)```", text, re.S)[0]
    return code, shown


def _run_python(code: str, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if env.get("PYTHONPATH"):  # this checkout, from another directory too
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep)
        )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_library_md_example_prints_what_it_shows(isolated_env):
    code, shown = _example("library.md", "## Example")
    done = _run_python(code, isolated_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown


def test_guide_python_example_prints_what_it_shows(isolated_env, monkeypatch):
    """The guide's example runs on the wiki its earlier steps made: ~/memwiki with
    memory/billing-service and memory/billing-staging (the test embedder: nothing here
    retrieves)."""
    from memwiki.wiki import Wiki

    monkeypatch.setenv("MEMWIKI_EMBED", "hash")
    wiki, _ = Wiki.init(isolated_env / "memwiki")
    for name in ("billing-service", "billing-staging"):
        wiki.commit_results(
            [{"track": "memory", "name": name, "description": f"The {name}", "content": "x\n"}]
        )
    code, shown = _example("guide.md", "## From Python")
    done = _run_python(code, isolated_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown


def test_memorize_md_library_api_names_the_real_result_classes():
    """Bug: docs/memorize.md said memorize.commit returns CommitResult (the wiki's class);
    it returns memwiki.memorize.RunCommitResult."""
    import memwiki.memorize as memorize

    text = (REPO / "docs" / "memorize.md").read_text(encoding="utf-8")
    block = re.findall(r"## Library API\n\n```python\n(.*?)```", text, re.S)[0]
    named = set(re.findall(r"-> (?:list\[)?([A-Z]\w+)", block))
    assert {"PrepareResult", "RunCommitResult", "DiscardResult", "RunStatus"} <= named
    for name in sorted(named):
        assert hasattr(memorize, name), f"docs/memorize.md names memorize.{name}"
    for function in re.findall(r"memorize\.(\w+)\(", block):
        assert callable(getattr(memorize, function)), function
