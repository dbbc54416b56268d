"""Names of a wiki's on-disk layout that several layers need (and must spell the same way)."""

from __future__ import annotations

SIDECAR = ".memwiki"  # the git-ignored folder of derived state: index, runs, logs, locks
GITIGNORE_LINE = f"/{SIDECAR}/"
# A file modified this close to the moment a cache (index manifest, link cache) was written
# may change again within the same mtime tick without changing size: read it again next time.
RACY_NS = 2_000_000_000
# Frontmatter sits at the top of a note: this much of it is enough to see a `conflict_of:` key.
CONFLICT_HEAD_BYTES = 16384
