"""Global options may follow the command: agents write them in either order.

One scanner (memwiki.cli.argv.scan_globals) serves both the fast retrieve parser and Typer.
"""

from __future__ import annotations

import inspect
import json

import pytest

from memwiki.cli.argv import RETRIEVE, scan_globals


def test_wiki_and_debug_after_the_command_move_to_the_front():
    g = scan_globals(["retrieve", "q", "--wiki", "/w", "-k", "2", "--debug"])
    assert (g.wiki, g.debug, g.rest) == ("/w", True, ["retrieve", "q", "-k", "2"])
    assert g.typer_argv() == ["--wiki", "/w", "--debug", "retrieve", "q", "-k", "2"]
    assert scan_globals(["list", "--wiki=/w"]).typer_argv() == ["--wiki", "/w", "list"]
    assert scan_globals(["--wiki", "/w", "list"]).typer_argv() == ["--wiki", "/w", "list"]


def test_short_wiki_option_is_the_same_option_anywhere():
    for argv in (["-w", "/w", "list"], ["list", "-w", "/w"], ["retrieve", "q", "-w", "/w"]):
        g = scan_globals(argv)
        assert g.wiki == "/w" and "-w" not in g.rest and "/w" not in g.rest


def test_the_last_wiki_wins():
    assert scan_globals(["-w", "/a", "list", "--wiki", "/b"]).wiki == "/b"


def test_nothing_after_a_double_dash_is_touched():
    g = scan_globals(["retrieve", "--", "--wiki", "-w", "--json"])
    assert g.rest == ["retrieve", "--", "--wiki", "-w", "--json"]
    assert g.wiki is None and not g.wants_json


def test_a_trailing_wiki_without_value_is_left_for_the_parser_to_refuse():
    assert scan_globals(["list", "--wiki"]).rest == ["list", "--wiki"]


@pytest.mark.parametrize("flag", ["--wiki", "-w"])
def test_retrieve_accepts_wiki_after_the_query(wiki, run_memwiki, flag):
    """Regression (issue 9): `retrieve QUERY -w WIKI` was "unrecognized arguments"."""
    (wiki.root / "memory/zebra.md").write_text(
        "---\nname: zebra\ndescription: zebra facts\n---\nstripes\n"
    )
    done = run_memwiki("retrieve", "zebra stripes", "--files", "--mode", "bm25", flag, wiki.root)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "memory/zebra.md\n"


def test_short_wiki_after_a_typer_command(wiki, cli):
    code, out, err = cli("list", "--json", "-w", wiki.root)
    assert code == 0, err
    assert json.loads(out)["items"] == []


def test_retrieve_defaults_are_defined_once():
    """Typer's retrieve, the fast parser and Wiki.retrieve all start from argv.RETRIEVE."""
    from memwiki.cli.fast import parse_retrieve
    from memwiki.cli.index_cmds import retrieve
    from memwiki.wiki import Wiki

    fast = parse_retrieve(["q"])
    typer_params = inspect.signature(retrieve).parameters
    library = inspect.signature(Wiki.retrieve).parameters
    for name in ("k", "budget", "mode"):  # project: the library takes the scoped slug
        expected = getattr(RETRIEVE, name)
        assert getattr(fast, name) == expected
        assert typer_params[name].default.default == expected
        assert library[name].default == expected
