"""The docs' links, commands and Python examples, run as a reader meets them.

docs/reference.md is held to `--help` by test_docs.py and the README's quick start by
test_cli_newuser.py; this file holds the rest a new user follows literally: every relative
link and `#anchor` between the docs reaches a heading, every `memwiki ...` the docs show
names a real command and real options, and the Python examples of docs/guide.md and
docs/library.md print what the page says they print.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
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


def _invocations() -> list[tuple[str, str]]:
    """(document, command line) for every `memwiki ...` in a code span or a code block."""
    found = []
    for doc in DOCS:
        fenced = False
        for line in doc.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                fenced = not fenced
            elif fenced:
                typed = re.match(r"^\s*(?:\$ )?(memwiki(?: .*)?)$", line)
                found += [(doc.name, typed.group(1))] if typed else []
            else:
                found += [(doc.name, span) for span in re.findall(r"`(memwiki [^`]*)`", line)]
    return found


@functools.cache
def _cli():
    """The CLI's command tree (click's), as --help reads it."""
    import typer

    from memwiki.cli.app import app

    return typer.main.get_command(app)


def _unknown_in(line: str) -> str | None:
    """What a `memwiki ...` line names that the CLI does not have, or None."""
    root = _cli()
    globals_ = {opt: param for param in root.params for opt in param.opts}
    try:
        words = shlex.split(line, comments=True)[1:]
    except ValueError:  # an unclosed quote in prose
        words = line.split()[1:]
    i = 0
    while i < len(words) and words[i].startswith("-"):
        option = words[i].split("=")[0]
        if option not in globals_:
            return f"unknown global option {option}"
        i += 1 if "=" in words[i] or globals_[option].is_flag else 2
    command, path = root, []
    while getattr(command, "commands", None) is not None and i < len(words):
        if words[i] not in command.commands:  # a placeholder (`memwiki X --help`) is no name
            name = re.fullmatch(r"[a-z][a-z-]*", words[i])
            return f"no command {' '.join([*path, words[i]])}" if name else None
        command = command.commands[words[i]]
        path.append(words[i])
        i += 1
    known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | set(globals_)
    for word in words[i:]:
        if word in ("|", "&&", ";", ">", "<") or word.startswith(("2>", ">")):
            break
        option = word.strip("[]").split("=")[0]  # a synopsis: `sync [--remote N]`
        if re.fullmatch(r"--?[a-zA-Z][\w-]*", option) and option not in known | {"--help"}:
            return f"memwiki {' '.join(path)} has no option {option}"
    return None


def test_the_command_check_sees_a_wrong_name():
    assert _unknown_in("memwiki sync --remote backup --json") is None
    assert _unknown_in('memwiki memorize commit "$(jq -r .run_id p.json)" --json') is None
    assert _unknown_in("memwiki -w w sync --remot x") == "memwiki sync has no option --remot"
    assert _unknown_in("memwiki remote list") == "no command remote list"
    assert _unknown_in("memwiki clone URL [PATH] [--jsn]") == "memwiki clone has no option --jsn"
    assert _unknown_in("memwiki --wikk x list") == "unknown global option --wikk"
    assert len(_invocations()) > 200


def test_every_memwiki_command_the_docs_show_exists():
    """Commands and options renamed or removed stay in prose the reference checks miss."""
    wrong = [
        f"{doc}: {line!r}: {why}" for doc, line in _invocations() if (why := _unknown_in(line))
    ]
    assert not wrong, "\n".join(wrong)


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
    # Not in home itself: there ~/memwiki (the wiki) is a folder named like the package, and
    # `python -c` puts the current directory first on sys.path, where an editable install's
    # finder (make test's) comes after it: `from memwiki import Wiki` found the wiki.
    cwd = home / "work"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
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
