"""The index commands through the CLI: retrieve (markdown, --json, --files), reindex, doctor, eval."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo-wiki"
QUERIES = Path(__file__).resolve().parents[1] / "examples" / "eval" / "demo-queries.jsonl"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo wiki copied into a fresh wiki and committed (shared: embedding it takes seconds)."""
    from memwiki.wiki import Wiki

    wiki, _ = Wiki.init(tmp_path_factory.mktemp("demo") / "wiki")
    for track in ("memory", "skill"):
        shutil.copytree(DEMO / track, wiki.root / track, dirs_exist_ok=True)
    wiki.commit("demo")
    return wiki


def test_retrieve_markdown_block(demo, cli):
    code, out, err = cli(
        "--wiki", demo.root, "retrieve", "how do I cut a release of the billing service?", "-k", "2"
    )
    assert code == 0
    assert out.startswith(
        '<!-- memwiki: 2 files for "how do I cut a release of the billing service?" -->'
    )
    assert "\n## skill/release-billing-service.md\n" in out
    assert "(lines " in out


def test_retrieve_header_is_one_short_escaped_line(demo, cli):
    """The header echoed the whole query: a long prompt filled the hook's context budget,
    `-->` closed the HTML comment early, a multi-line query put `## memory/fake.md` lines
    into the block. --json keeps the query as it was."""
    query = "billing release --> <!-- x\n## memory/fake.md\n" + "a long log line. " * 100
    code, out, err = cli("--wiki", demo.root, "retrieve", query, "--mode", "bm25")
    assert code == 0, err
    header = out.splitlines()[0]
    assert header.startswith("<!-- memwiki: ") and header.endswith(" -->")
    assert header.count("-->") == 1 and header.count("<!--") == 1
    assert len(header) < 200 and "\\u003e" in header and header.endswith(' …" -->')
    assert not any(line.startswith("## memory/fake.md") for line in out.splitlines())
    code, out, _ = cli("--wiki", demo.root, "retrieve", query, "--mode", "bm25", "--json")
    assert code == 0 and json.loads(out)["query"] == query


def test_retrieve_a_query_with_bytes_that_are_not_utf8_is_answered_hybrid(demo, run_memwiki):
    """A shell argument with a byte that is not UTF-8 reaches Python as a lone surrogate,
    which the model's tokenizer refuses: the answer fell back to BM25 with the note
    "vectors failed (TypeError)". The query is searched with U+FFFD in its place."""
    query = os.fsdecode(b"\xff how do I cut a release of the billing service?")  # as argv
    got = run_memwiki("--wiki", demo.root, "retrieve", query, "--json")
    assert got.returncode == 0, got.stderr
    answer = json.loads(got.stdout)
    assert answer["mode"] == "hybrid", answer["index"]
    assert answer["index"].get("note") is None
    assert answer["query"].startswith("\ufffd how do I cut")
    assert answer["results"][0]["path"] == "skill/release-billing-service.md"


def test_retrieve_vector_mode_without_an_embedder_is_exit_4(demo, run_memwiki):
    """`--mode vector` with embed = none or an unusable model answered from BM25 with exit 0
    on the CLI's progressive path, although the docs promise exit 4."""
    for env in ({"MEMWIKI_EMBED": "none"}, {"MEMWIKI_EMBED_MODEL_DIR": "/nonexistent"}):
        for extra in ([], ["--deadline", "5000"]):
            done = run_memwiki(
                "--wiki",
                demo.root,
                "retrieve",
                "deploy",
                "--mode",
                "vector",
                "--json",
                *extra,
                env=env,
            )
            assert done.returncode == 4, (env, extra, done.stdout)
            error = json.loads(done.stdout)["error"]
            assert error["exit_code"] == 4
            assert error["message"].startswith("vector mode needs an embedder: ")


def test_retrieve_json_schema_and_line_ranges(demo, cli):
    code, out, _ = cli(
        "--wiki",
        demo.root,
        "retrieve",
        "rotate the stripe webhook signing secret",
        "--json",
        "-k",
        "3",
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"query", "mode", "results", "index"}
    assert data["mode"] == "hybrid" and len(data["results"]) == 3
    assert set(data["index"]) >= {"files", "items", "embedder", "stale", "updated_files"}
    assert data["index"]["embedder"] == {
        "provider": "onnx",
        "model": "all-MiniLM-L6-v2-int8",
        "dim": 384,
    }
    top = data["results"][0]
    assert set(top) == {
        "path",
        "track",
        "name",
        "description",
        "score",
        "project",
        "projects",
        "conflict",
        "conflict_of",
        "sections",
    }
    assert top["path"] == "skill/rotate-stripe-webhook-secret.md"
    lines = (demo.root / top["path"]).read_text().splitlines()
    for section in top["sections"]:
        assert set(section) == {"heading", "start_line", "end_line", "text", "score"}
        expected = "\n".join(lines[section["start_line"] - 1 : section["end_line"]]).strip()
        assert section["text"] == expected or section["text"].endswith(" …")
    scores = [r["score"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True)


def test_retrieve_files_track_and_budget(demo, cli):
    code, out, _ = cli(
        "--wiki", demo.root, "retrieve", "billing staging", "--files", "--track", "skill", "-k", "4"
    )
    assert code == 0
    paths = out.split()
    assert 1 <= len(paths) <= 4 and all(p.startswith("skill/") for p in paths)
    code, out, _ = cli(
        "--wiki", demo.root, "retrieve", "billing service deployment", "--json", "--budget", "100"
    )
    total = sum(len(s["text"]) for r in json.loads(out)["results"] for s in r["sections"])
    assert total <= 100 * 4 + 10


def test_retrieve_nothing_matches_is_an_empty_success(demo, cli):
    code, out, err = cli(
        "--wiki", demo.root, "retrieve", "xylophone zeppelin quasar", "--mode", "bm25", "--json"
    )
    assert code == 0 and json.loads(out)["results"] == []
    code, out, err = cli(
        "--wiki", demo.root, "retrieve", "xylophone zeppelin quasar", "--mode", "bm25"
    )
    assert code == 0 and out.startswith("<!-- memwiki: no memory matches")
    assert err == ""


def test_retrieve_bad_options_are_one_line_errors(demo, run_memwiki):
    for args, code in ((["--mode", "fuzzy"], 2), (["-k", "0"], 2), (["--track", "../etc"], 2)):
        done = run_memwiki("--wiki", demo.root, "retrieve", "billing", *args)
        assert done.returncode == code, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("memwiki: error:")
        assert done.stdout == ""
    done = run_memwiki("--wiki", demo.root / "missing", "retrieve", "billing")
    assert done.returncode == 3 and "no wiki" in done.stderr


def test_fast_parser_agrees_with_typer(demo, run_memwiki, cli):
    """retrieve is parsed without Typer on the hot path; both must give the same answer."""
    fast = run_memwiki(
        "--wiki", demo.root, "retrieve", "dashboard database", "--json", "-k", "3", "--mode", "bm25"
    )
    from typer.testing import CliRunner

    from memwiki.cli.app import app

    slow = CliRunner().invoke(
        app,
        [
            "--wiki",
            str(demo.root),
            "retrieve",
            "dashboard database",
            "--json",
            "-k",
            "3",
            "--mode",
            "bm25",
        ],
    )
    assert slow.exit_code == 0, slow.output
    assert json.loads(fast.stdout)["results"] == json.loads(slow.stdout)["results"]
    help_text = run_memwiki("retrieve", "--help").stdout
    for option in ("-k", "--track", "--budget", "--mode", "--json", "--files"):
        assert option in help_text


def test_reindex_and_full_rebuild(demo, cli):
    shutil.rmtree(demo.sidecar / "index")
    code, out, _ = cli("--wiki", demo.root, "reindex", "--json")
    first = json.loads(out)
    assert code == 0 and first["indexed"] == 23 and first["problems"] == []
    code, out, _ = cli("--wiki", demo.root, "reindex", "--json")
    assert json.loads(out) == {
        "full": False,
        "indexed": 0,
        "removed": 0,
        "embedded": 0,
        "problems": [],
    }
    code, out, _ = cli("--wiki", demo.root, "reindex", "--full", "--json")
    full = json.loads(out)
    assert (
        full["full"] is True and full["indexed"] == 23 and full["embedded"] == 0
    )  # all from the cache


def test_doctor_reports_and_fails_on_a_broken_setup(demo, cli, tmp_path):
    code, out, _ = cli("--wiki", demo.root, "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True
    names = [c["name"] for c in report["checks"]]
    assert names == ["wiki", "git", "index", "embedder", "retrieve"]
    assert "8199be6f699a" in report["checks"][3]["detail"]
    code, out, _ = cli("--wiki", tmp_path / "nowhere", "doctor")
    assert code == 1 and "FAIL" in out


def test_doctor_says_bm25_only_with_the_reason(demo, cli, monkeypatch):
    monkeypatch.setenv("MEMWIKI_EMBED", "none")
    code, out, _ = cli("--wiki", demo.root, "doctor")
    assert code == 0
    assert "BM25-only: embedding disabled" in out


def test_eval_reports_every_mode_side_by_side(demo, cli, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(line + "\n" for line in QUERIES.read_text().splitlines()[:8]))
    code, out, _ = cli("--wiki", demo.root, "eval", queries, "--json")
    assert code == 0
    data = json.loads(out)
    assert [m["mode"] for m in data["modes"]] == ["bm25", "vector", "hybrid"]
    for m in data["modes"]:
        assert m["queries"] == 8 and 0.5 <= m["recall_any"] <= 1.0 and m["latency_median_ms"] > 0
    code, out, _ = cli("--wiki", demo.root, "eval", queries)
    assert "R@5-any" in out and "nDCG@10" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    code, _, err = cli("--wiki", demo.root, "eval", bad)
    assert code == 2 and "bad.jsonl:1" in err


def test_eval_refuses_what_would_score_quietly_wrong(demo, cli, tmp_path):
    """Bugs: `eval -k -1` scored 1.0 (the ranking cut from its end) and -k 0 printed R@0;
    a relevant path with a typo, without .md, or not a string scored 0 without a word."""
    queries = tmp_path / "q.jsonl"
    queries.write_text(QUERIES.read_text().splitlines()[0] + "\n")
    for k in ("0", "-1"):
        code, _, err = cli("--wiki", demo.root, "eval", queries, "-k", k)
        assert code == 2 and "-k must be at least 1" in err
    code, _, err = cli("--wiki", demo.root, "eval", queries, "--mode", " , ")
    assert code == 2 and "names no mode" in err
    for relevant, message in (
        ('["memory/nosuch.md"]', "is not a file of the wiki"),
        ('["memory/people"]', "is not a file of the wiki"),
        ("[1, null]", "a non-empty list of paths"),
    ):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(f'{{"query": "who", "relevant": {relevant}}}\n')
        code, _, err = cli("--wiki", demo.root, "eval", bad)
        assert code == 2 and message in err, err
