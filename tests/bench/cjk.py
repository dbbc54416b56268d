"""CJK benchmark: examples/eval/cjk (a Chinese and Japanese wiki, 28 queries)."""

from __future__ import annotations

from pathlib import Path

import agentwiki

SOURCE = Path(__file__).resolve().parents[2] / "examples/eval/cjk"


def run(modes: list[str], k: int = 5, **options):
    """(reports per mode, {mode: {kind: report}})."""
    return agentwiki.run(SOURCE, modes, k, **options)
