"""Vector segments damaged behind a sound header (the size and shape are right, the data is
not): never ranked by, reported by `memwiki doctor`, repaired by `memwiki reindex --full`."""

from __future__ import annotations

import json

import numpy as np

from memwiki.index import manifest as st
from memwiki.index.vectors import open_matrix
from memwiki.wiki import Wiki

HASH = {"MEMWIKI_EMBED": "hash"}


def overwrite_segment_data(index_dir, row: np.ndarray) -> None:
    """Every row of every vector segment replaced by row, the header kept."""
    for segment in index_dir.glob("vectors-*.npy"):
        with open(segment, "r+b") as fh:
            np.lib.format.read_magic(fh)
            np.lib.format.read_array_header_1_0(fh)
            start = fh.tell()
            rows = (fh.seek(0, 2) - start) // row.nbytes
            fh.seek(start)
            fh.write(np.tile(row.astype(np.float32), rows).tobytes())


def norms(index_dir):
    state = st.load(index_dir / "state.pkl")
    matrix = np.asarray(open_matrix(index_dir, state)[:])
    return np.linalg.norm(matrix, axis=1)


def test_a_segment_overwritten_behind_its_header_is_found_and_repaired(tmp_path, run_memwiki):
    """Bug: such a segment loaded without an error; its long rows outscored every real
    match in vector search, `doctor` said the index was fine, and `reindex --full` copied
    the damaged rows into the new index (it takes vectors from the old segments)."""
    wiki, _ = Wiki.init(tmp_path / "w")
    for name in ("release", "webhook", "staging"):
        (wiki.root / "memory" / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: about {name}\n---\n# {name}\nSteps for {name}.\n"
        )
    w = ["--wiki", wiki.root]
    assert run_memwiki(*w, "reindex", env=HASH).returncode == 0
    index_dir = wiki.sidecar / "index"
    from memwiki.embed.hashing import HashEmbedder

    # rows pointing the query's way, 50 times too long: the best match of any damage
    overwrite_segment_data(index_dir, 50 * HashEmbedder().embed(["steps"])[0])
    found = run_memwiki(*w, "retrieve", "--mode", "vector", "--json", "steps", env=HASH)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"] == []  # no damaged row is a best match
    doctor = run_memwiki(*w, "doctor", env=HASH)
    assert doctor.returncode == 1
    assert "3 damaged vectors: run `memwiki reindex --full`" in doctor.stdout
    repaired = run_memwiki(*w, "reindex", "--full", env=HASH)
    assert repaired.returncode == 0 and "3 items embedded" in repaired.stdout
    assert np.allclose(norms(index_dir), 1.0, atol=1e-5)
    assert run_memwiki(*w, "doctor", env=HASH).returncode == 0
    again = run_memwiki(*w, "retrieve", "--mode", "vector", "--json", "steps for webhook", env=HASH)
    assert json.loads(again.stdout)["results"][0]["path"] == "memory/webhook.md"


def test_a_segment_header_damaged_at_the_right_size_is_rebuilt(tmp_path, run_memwiki):
    """Bug: the index checked vector segments by size only: a header zeroed at the right
    size made every vector search fail (each answer BM25 only, for good), `reindex` called
    the index complete and `doctor` called it fresh."""
    wiki, _ = Wiki.init(tmp_path / "w")
    (wiki.root / "memory" / "webhook.md").write_text(
        "---\nname: webhook\ndescription: about webhook\n---\n# webhook\nRotate its secret.\n"
    )
    w = ["--wiki", wiki.root]
    assert run_memwiki(*w, "reindex", env=HASH).returncode == 0
    (segment,) = (wiki.sidecar / "index").glob("vectors-*.npy")
    with open(segment, "r+b") as fh:
        fh.write(b"\0" * 64)
    first = run_memwiki(*w, "retrieve", "--json", "rotate secret", env=HASH)
    assert first.returncode == 0
    assert first.stderr == (
        "memwiki: index damaged (vector matrix header is damaged); rebuilding it\n"
    )
    assert json.loads(first.stdout)["mode"] == "hybrid"
    again = run_memwiki(*w, "retrieve", "--json", "rotate secret", env=HASH)
    assert again.stderr == "" and json.loads(again.stdout)["mode"] == "hybrid"
    assert run_memwiki(*w, "doctor", env=HASH).returncode == 0
