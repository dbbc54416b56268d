"""Readers never fail while the index is written (issue 13 item 1), with real processes.

Four hybrid `retrieve` loops, one process editing the wiki and one `reindex` loop run
side by side for about 20 seconds; every retrieve must succeed, and afterwards the
answer must equal that of a rebuild from scratch.
"""

from __future__ import annotations

import json
import random
import shutil
import threading
import time
from pathlib import Path

from test_index_crash import build_wiki, env_for
from test_progressive import cli as _cli

RUN_S = 20.0
QUERY = "release staging webhook"


def test_readers_never_fail_during_writes_and_reindex(tmp_path):
    env = env_for(tmp_path)
    wiki = build_wiki(tmp_path / "w", files=40)
    assert _cli(wiki.root, env, "reindex").returncode == 0
    stop = time.monotonic() + RUN_S
    failures: list[str] = []
    counts = {"retrieve": 0, "reindex": 0, "edits": 0}
    guard = threading.Lock()

    def reader() -> None:
        while time.monotonic() < stop:
            done = _cli(wiki.root, env, "retrieve", QUERY, "--json", "-k", "8")
            with guard:
                counts["retrieve"] += 1
                if done.returncode != 0:
                    failures.append(f"retrieve exit {done.returncode}: {done.stderr.strip()}")
                else:
                    json.loads(done.stdout)

    def reindexer() -> None:
        full = False
        while time.monotonic() < stop:
            full = not full  # a full rebuild replaces the Whoosh directory as well
            done = _cli(wiki.root, env, "reindex", *(["--full"] if full else []))
            with guard:
                counts["reindex"] += 1
                if done.returncode != 0:
                    failures.append(f"reindex exit {done.returncode}: {done.stderr.strip()}")

    def writer() -> None:
        rng = random.Random(5)
        n = 1000
        while time.monotonic() < stop:
            note = wiki.root / "memory" / f"note-{rng.randrange(40)}.md"
            if rng.random() < 0.2:
                n += 1
                note = wiki.root / "memory" / f"note-{n}.md"
                note.write_text(
                    f"---\nname: note-{n}\ndescription: added {n}\n---\n# Added\nrelease {n}\n"
                )
            elif note.exists():
                note.write_text(note.read_text() + f"\n## Edit {n}\nstaging webhook {n}\n")
                n += 1
            with guard:
                counts["edits"] += 1
            time.sleep(rng.choice([0.1, 0.1, 1.5]))  # bursts, then quiet

    threads = [threading.Thread(target=reader) for _ in range(4)]
    threads += [threading.Thread(target=reindexer), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=RUN_S + 300)
    assert not failures, failures[:3]
    assert counts["retrieve"] >= 8 and counts["reindex"] >= 1 and counts["edits"] >= 10, counts
    from memwiki.index import background

    deadline = time.monotonic() + 120  # a background build the readers started may still run
    while background.running(wiki.sidecar) and time.monotonic() < deadline:
        time.sleep(0.2)
    fresh = tmp_path / "fresh"
    shutil.copytree(wiki.root, fresh, ignore=shutil.ignore_patterns(".memwiki"))
    assert _cli(fresh, env, "reindex").returncode == 0
    ours, rebuilt = _scored(wiki.root, env), _scored(fresh, env)
    assert set(ours) == set(rebuilt)
    # Vectors embedded in other batches differ by float noise (padding), nothing more.
    assert all(abs(ours[p] - rebuilt[p]) < 2e-3 for p in ours), (ours, rebuilt)


def _scored(root: Path, env: dict) -> dict:
    """Result files with their scores."""
    done = _cli(root, env, "retrieve", QUERY, "--json", "-k", "8")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["mode"] == "hybrid" and data["index"]["pending_items"] == 0
    return {r["path"]: r["score"] for r in data["results"]}


def test_a_reader_keeps_the_files_it_opened(tmp_path):
    """A snapshot opened before a writer removes its generation still answers from it."""
    from memwiki.config import load
    from memwiki.index import bm25
    from memwiki.index.indexer import Index

    wiki = build_wiki(tmp_path / "w", files=8)
    cfg = load({"wiki": str(wiki.root)}, environ={"HOME": str(tmp_path), "MEMWIKI_EMBED": "hash"})
    index = Index(wiki, cfg, notify=lambda m: None)
    index.update()
    snap = index.snapshot()
    expected = bm25.search(snap.bm25_dir, QUERY, 10)
    old_files = {snap.state.vectors_file, snap.state.bm25_dir}
    # An edit appends a vector segment and keeps the base; two full builds later every
    # file the snapshot named is gone.
    for i in range(3):
        note = wiki.root / "memory" / f"note-{i}.md"
        note.write_text(note.read_text() + f"\nrelease {i}\n")
        Index(wiki, cfg, notify=lambda m: None).update(full=i >= 1)
    assert not any((index.directory / name).exists() for name in old_files)
    assert snap.matrix().shape == (len(snap.state.rows), 384)
    assert float(abs(snap.matrix()).sum()) > 0
    assert bm25.search(snap.bm25_dir, QUERY, 10, searcher=snap.searcher()) == expected
    snap.close()
