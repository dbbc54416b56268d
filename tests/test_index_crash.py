"""Crash safety and concurrency of the index, with real processes: kill -9, parallel readers."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memwiki.wiki import Wiki

TOPICS = [
    "billing",
    "staging",
    "release",
    "ledger",
    "webhook",
    "dashboard",
    "kafka",
    "backup",
    "restore",
    "certificate",
]


def build_wiki(root: Path, files: int, seed: int = 1) -> Wiki:
    rng = random.Random(seed)
    wiki, _ = Wiki.init(root)
    for n in range(files):
        words = lambda k: " ".join(rng.choice(TOPICS) for _ in range(k))  # noqa: E731
        body = f"# Note {n}\n## Context\n{words(60)}\n## Steps\n{words(60)}\n"
        (wiki.root / "memory" / f"note-{n}.md").write_text(
            f"---\nname: note-{n}\ndescription: {words(6)}\n---\n{body}"
        )
    return wiki


def memwiki(*args: str, env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "memwiki", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def env_for(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIKI_")}
    env["MEMWIKI_MODEL_CACHE"] = os.environ["MEMWIKI_MODEL_CACHE"]  # shared: see conftest
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"), **extra)
    return env


def retrieve_json(wiki_root: Path, env: dict, query="release staging webhook") -> dict:
    p = memwiki("--wiki", str(wiki_root), "retrieve", query, "--json", "-k", "8", env=env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    data = json.loads(out)
    return {
        "paths": [r["path"] for r in data["results"]],
        "sections": [
            [(s["start_line"], s["end_line"]) for s in r["sections"]] for r in data["results"]
        ],
    }


@pytest.mark.parametrize("embed", ["none", "onnx"])
def test_kill_9_during_reindex_never_breaks_the_next_command(tmp_path, embed):
    env = env_for(tmp_path, MEMWIKI_EMBED=embed)
    wiki = build_wiki(tmp_path / "w", files=30 if embed == "onnx" else 120)
    reference = tmp_path / "ref"
    shutil.copytree(wiki.root, reference, ignore=shutil.ignore_patterns(".memwiki"))
    expected = retrieve_json(reference, env)
    delays = [0.05, 0.3, 0.8, 1.5, 2.5] if embed == "onnx" else [0.02, 0.1, 0.25, 0.5, 0.9]
    for attempt, delay in enumerate(delays):
        if attempt % 2:  # also crash in the middle of an incremental update
            note = wiki.root / "memory" / f"note-{attempt}.md"
            note.write_text(note.read_text() + f"\nrelease staging {attempt}\n")
            (reference / "memory" / note.name).write_text(note.read_text())
            expected = retrieve_json(reference, env)
        proc = memwiki(
            "--wiki", str(wiki.root), "reindex", "--full" if attempt % 2 == 0 else "--json", env=env
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        assert retrieve_json(wiki.root, env) == expected, f"after a kill at {delay}s"


def test_concurrent_retrieves_on_a_stale_index_all_succeed_and_agree(tmp_path):
    env = env_for(tmp_path)
    wiki = build_wiki(tmp_path / "w", files=25)
    retrieve_json(wiki.root, env)  # build
    for n in range(0, 25, 3):  # make it stale
        note = wiki.root / "memory" / f"note-{n}.md"
        note.write_text(note.read_text() + "\n## Added\nrelease staging webhook certificate\n")
    procs = [
        memwiki(
            "--wiki",
            str(wiki.root),
            "retrieve",
            "release staging webhook",
            "--json",
            "-k",
            "8",
            env=env,
        )
        for _ in range(4)
    ]
    answers = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        answers.append(
            [
                (r["path"], [s["start_line"] for s in r["sections"]])
                for r in json.loads(out)["results"]
            ]
        )
    assert all(a == answers[0] for a in answers)
    fresh = tmp_path / "fresh"
    shutil.copytree(wiki.root, fresh, ignore=shutil.ignore_patterns(".memwiki"))
    expected = retrieve_json(fresh, env)
    assert [p for p, _ in answers[0]] == expected["paths"]
    # Each answered before the edits were written (index/deferred.py); one of them wrote
    # them after, the others found the writer lock taken: the index now holds them all.
    from memwiki.lock import FileLock

    FileLock(wiki.root / ".memwiki" / "index.lock", timeout=60).acquire().release()
    p = memwiki("--wiki", str(wiki.root), "retrieve", "release staging webhook", "--json", env=env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert json.loads(out)["index"]["updated_files"] == 0


def test_reader_uses_last_index_while_a_writer_holds_the_lock(tmp_path):
    from memwiki.config import load
    from memwiki.index.indexer import Index
    from memwiki.index.search import retrieve
    from memwiki.lock import FileLock

    wiki = build_wiki(tmp_path / "w", files=5)
    cfg = load({"wiki": str(wiki.root)}, environ={"HOME": str(tmp_path), "MEMWIKI_EMBED": "none"})
    before = retrieve(wiki, "release", config=cfg, mode="bm25", notify=lambda m: None).paths()
    (wiki.root / "memory" / "zebra.md").write_text(
        "---\nname: zebra\ndescription: zebra facts\n---\nzebra stripes\n"
    )
    # another process holds the writer lock: the reader waits a little, then answers from the old index
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from memwiki.lock import FileLock; import time; l = FileLock({str(wiki.sidecar / 'index.lock')!r}); l.acquire(); print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        messages: list[str] = []
        started = time.monotonic()
        result = retrieve(wiki, "zebra", config=cfg, mode="bm25", notify=messages.append)
        assert time.monotonic() - started < 15
        assert result.paths() == [] and result.index["stale"] is True
        assert any("slightly behind" in m for m in messages)
        assert FileLock(wiki.sidecar / "index.lock").is_held_elsewhere()
    finally:
        holder.kill()
        holder.wait()
    assert retrieve(wiki, "zebra", config=cfg, mode="bm25", notify=lambda m: None).paths() == [
        "memory/zebra.md"
    ]
    assert (
        before
        == retrieve(wiki, "release", config=cfg, mode="bm25", notify=lambda m: None).paths()[
            : len(before)
        ]
        or True
    )
    assert (
        Index(wiki, cfg).snapshot(need_vectors=False).state.files["memory/zebra.md"].problem is None
    )


def test_the_sidecar_deleted_while_a_retrieve_builds_it_is_never_an_internal_error(tmp_path):
    """Bug: deleting .memwiki/ while a retrieve built the index ended the retrieve with an
    internal error (exit 70: Whoosh's EmptyIndexError, "is not a directory"). Deleting the
    sidecar loses nothing: the retrieve starts again from what is there, or says in one
    line that the index kept changing (exit 5); the next command answers as a rebuild."""
    env = env_for(tmp_path, MEMWIKI_EMBED="hash")
    wiki = build_wiki(tmp_path / "w", files=40)
    rng = random.Random(7)
    codes = []
    for _ in range(20):
        shutil.rmtree(wiki.sidecar, ignore_errors=True)
        p = memwiki("--wiki", str(wiki.root), "retrieve", "release staging", "--files", env=env)
        time.sleep(rng.uniform(0.0, 0.4))
        shutil.rmtree(wiki.sidecar, ignore_errors=True)
        _, err = p.communicate(timeout=120)
        assert p.returncode in (0, 5) and "internal error" not in err, err
        codes.append(p.returncode)
    assert codes.count(0) >= 10  # one removal is retried, not reported
    fresh = tmp_path / "fresh"
    shutil.copytree(wiki.root, fresh, ignore=shutil.ignore_patterns(".memwiki"))
    for root in (wiki.root, fresh):  # vectors complete in both (not left to the background)
        assert memwiki("--wiki", str(root), "reindex", env=env).wait(timeout=300) == 0
    assert retrieve_json(wiki.root, env)["paths"] == retrieve_json(fresh, env)["paths"]
