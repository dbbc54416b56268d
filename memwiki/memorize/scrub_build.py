"""The scrubber's data files, written again from the rules: `python -m memwiki.memorize.scrub_build`.

rules/gitleaks.json is gitleaks.toml translated to Python's regex syntax (gitleaks.py);
rules/anchors.json is, for every rule's regex, the literal a match holds near its start
(scan.py). Both only save time at the first scan of a process: a rule or a TOML changed
since is read or worked out again, and tests/test_memorize_scrub_lazy.py fails until the
files are written again. Run it after editing a rule or updating gitleaks.toml.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from . import gitleaks, scan, scrub


def anchors() -> dict[str, Any]:
    """The content of scan.ANCHORS_FILE: each pattern's anchor, worked out now."""
    table = {scan.anchor_key(p): scan.anchor_spec(scan.anchor(p)) for p in scrub.patterns()}
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return {"python": python, "anchors": dict(sorted(table.items()))}


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    """Write rules/gitleaks.json, then rules/anchors.json (from the rules it holds)."""
    _write(gitleaks.DATA_FILE, gitleaks.build_data(gitleaks.RULES_FILE.read_bytes()))
    gitleaks.rules.cache_clear()
    _write(scan.ANCHORS_FILE, anchors())


if __name__ == "__main__":
    main()
