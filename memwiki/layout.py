"""Names of a wiki's on-disk layout that several layers need (and must spell the same way)."""

from __future__ import annotations

SIDECAR = ".memwiki"  # the git-ignored folder of derived state: index, runs, logs, locks
GITIGNORE_LINE = f"/{SIDECAR}/"
