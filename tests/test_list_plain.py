"""`memwiki list` prints rich's borderless table without rich when nothing would wrap.

Bug it prevents: the plain path took only ASCII, so any vault with an accented or CJK name
went through rich (1.8 s for 5,000 notes), and rich turned a description's `:rocket:` into
an emoji. Both paths must print the same table for any printable text.
"""

from __future__ import annotations

import io
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memwiki.cli import wiki_cmds

CELL = st.text(
    st.characters(
        blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"),
    ),
    max_size=12,
)
HEADER = ("track", "name", "description", "updated")


def _rich(rows) -> str:
    table = Table(*HEADER, box=None, pad_edge=False)
    for row in rows[1:]:
        table.add_row(*(Text(c) for c in row))
    console = Console(width=200, emoji=False)
    with console.capture() as captured:
        console.print(table)
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def _plain(rows) -> str | None:
    out, sys.stdout = sys.stdout, io.StringIO()
    try:
        printed = wiki_cmds._print_plain(rows, width=200)
        return sys.stdout.getvalue() if printed else None
    finally:
        sys.stdout = out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(CELL, CELL, CELL, CELL), min_size=1, max_size=5))
def test_the_plain_table_is_rich_s_table(body):
    rows = [HEADER, *body]
    plain = _plain(rows)
    if plain is not None:  # it declines what it cannot print as rich would
        assert plain == _rich(rows)


def test_accents_cjk_and_emoji_codes_take_the_plain_path():
    rows = [HEADER, ("memory", "café", "日本語のメモ :rocket:", "")]
    plain = _plain(rows)
    assert plain is not None and ":rocket:" in plain and plain == _rich(rows)


def test_markup_and_a_trailing_backslash_print_as_written_on_both_paths():
    """rich.markup.escape doubled a trailing backslash on the rich path."""
    rows = [HEADER, ("memory", "win", "[bold]C:\\Users\\[/] and C:\\", "")]
    plain = _plain(rows)
    assert plain is not None and plain == _rich(rows)
    assert "[bold]C:\\Users\\[/] and C:\\\n" in plain
