"""Global options may follow the command: agents write them in either order."""

from __future__ import annotations

from memwiki.cli import hoist_global_options


def test_wiki_and_debug_after_the_command_move_to_the_front():
    assert hoist_global_options(["retrieve", "q", "--wiki", "/w", "-k", "2", "--debug"]) == [
        "--wiki",
        "/w",
        "--debug",
        "retrieve",
        "q",
        "-k",
        "2",
    ]
    assert hoist_global_options(["list", "--wiki=/w"]) == ["--wiki=/w", "list"]
    assert hoist_global_options(["--wiki", "/w", "list"]) == ["--wiki", "/w", "list"]


def test_nothing_after_a_double_dash_is_touched():
    assert hoist_global_options(["retrieve", "--", "--wiki"]) == ["retrieve", "--", "--wiki"]


def test_retrieve_accepts_wiki_after_the_query(wiki, run_memwiki):
    (wiki.root / "memory/zebra.md").write_text(
        "---\nname: zebra\ndescription: zebra facts\n---\nstripes\n"
    )
    done = run_memwiki(
        "retrieve", "zebra stripes", "--files", "--mode", "bm25", "--wiki", wiki.root
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "memory/zebra.md\n"
