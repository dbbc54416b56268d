"""docs/reference.md documents every command and every option the CLI has.

Commands and options come from Typer's own command tree, so a new option without a line in
the reference fails here. That the reference's example outputs are what the commands print
is checked by `make docs-check` (scripts/gen_reference.py --check), part of `make lint`.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import typer

from memwiki.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")


def _commands() -> list[tuple[str, object]]:
    """(path, click command) for every leaf command, e.g. ("memorize prepare", cmd)."""
    root = typer.main.get_command(app)
    found = []

    def walk(group, prefix: list[str]) -> None:
        for name, command in sorted(group.commands.items()):
            if getattr(command, "commands", None) is not None:
                walk(command, [*prefix, name])
            else:
                found.append((" ".join([*prefix, name]), command))

    walk(root, [])
    return found


COMMANDS = _commands()


def _sections() -> list[str]:
    return re.split(r"^## ", REFERENCE, flags=re.M)[1:]


def section_of(path: str) -> str:
    """The reference section whose synopsis block has a `memwiki PATH` line."""
    usage = re.compile(rf"^memwiki {re.escape(path)}(\s|$)", re.M)
    for section in _sections():
        blocks = re.findall(r"^```\n(.*?)^```", section, flags=re.M | re.S)
        if blocks and usage.search(blocks[0]):
            return section
    raise AssertionError(f"docs/reference.md has no section with a `memwiki {path}` synopsis")


def test_the_command_tree_is_read():
    paths = {p for p, _ in COMMANDS}
    assert {"retrieve", "memorize prepare", "hook claude-code", "config show"} <= paths


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS])
def test_every_command_has_a_section(path):
    section_of(path)


@pytest.mark.parametrize(
    ("path", "option"),
    [
        (path, opt)
        for path, command in COMMANDS
        for param in command.params
        for opt in (param.opts if param.param_type_name == "option" else [])
        if opt not in ("-h", "--help")
    ],
)
def test_every_option_is_in_its_commands_section(path, option):
    section = section_of(path)
    assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", section), (
        f"`memwiki {path}`: option {option} is not in its docs/reference.md section"
    )


def test_every_global_option_is_in_the_conventions():
    conventions = next(s for s in _sections() if s.startswith("Conventions"))
    root = typer.main.get_command(app)
    for param in root.params:
        for opt in param.opts:
            assert opt in conventions, opt


def test_the_reference_generator_normalises_only_what_changes_between_runs():
    spec = importlib.util.spec_from_file_location("gen", REPO / "scripts" / "gen_reference.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    one = "commit 5e70fb08b512\nupdated: 2026-12-01T09:53:57Z\nin 280 ms (hybrid)\n"
    two = "commit 9462c01c35df\nupdated: 2026-11-30T02:28:31Z\nin 1061 ms (hybrid)\n"
    assert gen.normalize(one) == gen.normalize(two)
    assert gen.normalize("created  memory/a.md\n") != gen.normalize("updated  memory/a.md\n")
    row = "hybrid        54     1.000     0.981  0.866    0.899    95.1   148.6"
    assert gen.normalize(row) == gen.normalize(row.replace("95.1   148.6", "201.0   277.5"))
    assert gen.normalize(row) != gen.normalize(row.replace("0.981", "0.900"))


def test_marked_examples_are_closed_blocks():
    lines = REFERENCE.splitlines()
    marks = [i for i, line in enumerate(lines) if line == "<!-- gen-reference -->"]
    assert len(marks) >= 20
    for i in marks:
        assert lines[i + 1] == "```" and lines[i + 2].startswith("$ "), f"line {i + 1}"
