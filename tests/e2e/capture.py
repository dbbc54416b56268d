"""Keep a client's real session store as a small fixture, with sandbox paths rewritten.

`make e2e` calls this after each host's session steps; with MEMWIKI_E2E_CAPTURE=DIR the
copy lands in DIR/<host>-<version>/ (that is how tests/fixtures/hosts/real/ was made).
Text files get the sandbox HOME replaced by /home/user (also in Claude Code's slug form);
SQLite stores get the same rewrite in every text column and in zstd-compressed events.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
from pathlib import Path

FAKE_HOME = "/home/user"
TEXT_SUFFIXES = (".jsonl", ".json", ".md")


def slug(path: str) -> str:
    """Claude Code's project-directory form of a path."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def rewriter(home: Path):
    """A function rewriting the sandbox's paths in text."""
    pairs = [(str(home), FAKE_HOME), (slug(str(home)), slug(FAKE_HOME))]
    pairs += [(str(home.parent), "/tmp/e2e"), (slug(str(home.parent)), slug("/tmp/e2e"))]
    # The memwiki under test: a path of this machine, written into the logged tool calls.
    pairs.append((str(Path(sys.executable).parent), "/opt/memwiki/bin"))

    def rewrite(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return rewrite


def copy_tree(src: Path, dest: Path, home: Path, globs: tuple[str, ...]) -> list[Path]:
    """Copy the files matching globs under src to dest, rewriting paths in names and text."""
    rewrite = rewriter(home)
    out = []
    for pattern in globs:
        for path in sorted(src.glob(pattern)):
            if not path.is_file():
                continue
            target = dest / rewrite(str(path.relative_to(src)))
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix in TEXT_SUFFIXES:
                target.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
            elif path.suffix in (".sqlite", ".db"):
                copy_sqlite(path, target, rewrite)
            else:
                shutil.copyfile(path, target)
            out.append(target)
    return out


def _octet_length(value):
    if value is None:
        return None
    return len(value.encode("utf-8")) if isinstance(value, str) else len(bytes(value))


def copy_sqlite(src: Path, dest: Path, rewrite) -> None:
    """A checkpointed copy of a SQLite store with paths rewritten in its text and events."""
    dest.unlink(missing_ok=True)
    s, d = sqlite3.connect(f"file:{src}?mode=ro", uri=True), sqlite3.connect(dest)
    s.backup(d)
    s.close()
    d.close()
    conn = sqlite3.connect(dest)
    # Newer SQLite builds (OpenClaw's) use octet_length in CHECK constraints.
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            if table.startswith("sqlite_") or "_fts" in table:
                continue
            cols = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
            for _, name, *_ in cols:
                try:
                    rows = conn.execute(
                        f'SELECT rowid, "{name}" FROM "{table}" WHERE typeof("{name}") = \'text\''
                    ).fetchall()
                except sqlite3.Error:
                    continue
                for rowid, value in rows:
                    new = rewrite(value)
                    if new != value:
                        conn.execute(
                            f'UPDATE "{table}" SET "{name}" = ? WHERE rowid = ?', (new, rowid)
                        )
            if table == "transcript_events" and "event_zstd" in {c[1] for c in cols}:
                import zstandard

                rows = conn.execute(
                    "SELECT rowid, event_zstd FROM transcript_events WHERE event_zstd IS NOT NULL"
                ).fetchall()
                for rowid, blob in rows:
                    text = zstandard.ZstdDecompressor().decompress(blob).decode("utf-8")
                    packed = zstandard.ZstdCompressor().compress(rewrite(text).encode("utf-8"))
                    conn.execute(
                        "UPDATE transcript_events SET event_zstd = ? WHERE rowid = ?",
                        (packed, rowid),
                    )
        conn.commit()
        conn.execute("VACUUM")
    finally:
        conn.close()
