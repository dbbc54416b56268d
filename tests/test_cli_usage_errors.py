"""Argument errors: every command, `retrieve`'s fast argparse path included, prints its usage
line, a hint and one `Error:` line as Click prints them, and exits 2 (docs/reference.md,
"Exit codes"). Real processes: the fast path only runs in `memwiki` itself."""

from __future__ import annotations

import json

import pytest


def _usage_error(done, command: str) -> str:
    """Check the shape of a usage error of `memwiki COMMAND`; its `Error:` line."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 4, done.stderr
    assert lines[0].startswith(f"Usage: memwiki {command} [OPTIONS]")
    assert lines[1] == f"Try 'memwiki {command} -h' for help."
    assert lines[2] == ""
    assert lines[3].startswith("Error: ")
    assert "Traceback" not in done.stderr
    return lines[3]


# (retrieve's mistake, the same mistake made to another command, the error line of each)
MISTAKES = [
    ([], ["show"], "Error: Missing argument 'query'.", "Error: Missing argument 'ref'."),
    (["q", "--bogus"], ["list", "--bogus"], "Error: No such option: --bogus", None),
    (["q", "r"], ["show", "memory/a", "r"], "Error: Got unexpected extra argument(s) (r)", None),
    (["q", "-k", "x"], ["log", "-n", "x"], "Error: Invalid value for '-k'", "Error: Invalid value for '-n'"),
    (["q", "--budget", "x"], ["log", "-n", "x"], "Error: Invalid value for '--budget'", "Error: Invalid value for '-n'"),
    (["q", "-k"], ["log", "-n"], "Error: Option '-k' requires an argument.", "Error: Option '-n' requires an argument."),
    (["q", "--mode"], ["log", "-n"], "Error: Option '--mode' requires an argument.", "Error: Option '-n' requires an argument."),
    (["q", "--files=yes"], ["list", "--json=yes"], "Error: Option '--files' does not take a value.", "Error: Option '--json' does not take a value."),
    (["q", "--fil"], ["list", "--jso"], "Error: No such option: --fil", "Error: No such option: --jso"),
]  # fmt: skip


@pytest.mark.parametrize(("mistake", "other", "says", "other_says"), MISTAKES)
def test_retrieve_reports_a_mistake_as_every_command_does(
    wiki, run_memwiki, mistake, other, says, other_says
):
    """Bug: the fast parser printed `memwiki: error: retrieve: the following arguments are
    required: query` (argparse's words, no usage line) where every other command prints
    Click's usage, hint and error; and Click's "requires an argument" and "does not take a
    value" came without the usage line, for every command."""
    done = run_memwiki("--wiki", wiki.root, "retrieve", *mistake)
    assert _usage_error(done, "retrieve").startswith(says)
    assert done.stdout == ""
    done = run_memwiki("--wiki", wiki.root, *other)
    assert _usage_error(done, other[0]).startswith(other_says or says)


def test_a_usage_error_of_retrieve_under_json_also_prints_the_document(wiki, run_memwiki):
    """The error document of a usage error, as `show --json` without its argument prints it."""
    done = run_memwiki("--wiki", wiki.root, "retrieve", "--json")
    assert _usage_error(done, "retrieve") == "Error: Missing argument 'query'."
    assert json.loads(done.stdout) == {
        "error": {"message": "Missing argument 'query'.", "exit_code": 2}
    }


def test_a_missing_option_value_of_the_root_prints_the_root_usage(run_memwiki):
    """Bug: `memwiki list --wiki` (the global option without its value) said "No such
    option: --wiki", and `memwiki --wiki` gave no usage line."""
    done = run_memwiki("list", "--wiki")
    assert done.returncode == 2
    assert done.stderr.startswith("Usage: memwiki [OPTIONS] COMMAND [ARGS]...\n")
    assert done.stderr.endswith("Error: Option '--wiki' requires an argument.\n")
