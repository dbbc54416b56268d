"""Options that many commands share, declared once (like sqlite-utils' output_options)."""

from __future__ import annotations

import typer

from .argv import JSON_FLAG, WIKI_FLAGS


def json_option(schema: str = "docs/reference.md"):
    """--json: one JSON document on stdout (and a JSON error document on failure)."""
    return typer.Option(False, JSON_FLAG, help=f"Print JSON (schema in {schema}).")


JSON = json_option()
JSON_SYNC = json_option("docs/sync.md")
JSON_OBSIDIAN = json_option("docs/obsidian.md")

HOST = typer.Option(..., "--host", help="claude-code, codex, cursor, openclaw, hermes or generic.")

WIKI = typer.Option(
    None, *WIKI_FLAGS, help="The wiki to use (default: $MEMWIKI_DIR, config, ~/memwiki)."
)
DEBUG = typer.Option(False, "--debug", help="Show tracebacks on errors (exit codes stay).")
