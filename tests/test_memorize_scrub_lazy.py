"""The scrubber compiles a rule only when a text may hold its match, and finds the same spans."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwiki.memorize import gitleaks, scan, scrub, scrub_build, scrub_keywords

ROOT = Path(__file__).resolve().parents[1]
KEYWORDS = sorted(scrub._keywords().words)

# Every span of the corpora and a generated session, in a fresh process: cold (the first
# use of every rule compiles it, as `bridge prepare` does) or with every regex compiled
# up front, the keyword groups too, as the scrubber did before it was lazy.
_CHILD = """
import json, sys
sys.path[:0] = [{tests!r}, {bench!r}]
import scrub_corpus, scrub_corpus_gen
from memwiki.memorize import gitleaks, scan, scrub, scrub_rules
if {eager!r}:
    keywords = scrub._keywords()
    for group in keywords._groups:
        group.compile()
    for rule in scrub._TOKEN_RULES + scrub_rules._CLASS_RULES + scrub_rules._BLOCK_RULES:
        rule.pattern
    rules, glob = gitleaks.rules()
    glob.regexes
    for rule in rules:
        rule.pattern
        for allow in rule.allows:
            allow.regexes
texts = [t for _, t, _ in scrub_corpus.secret_samples()] + scrub_corpus.benign_lines()
texts += scrub_corpus_gen.session_strings(0.1, seed=5)
print(json.dumps([scrub.find_spans(t) for t in texts]))
"""


def _spans(eager: bool) -> list:
    code = _CHILD.format(
        tests=str(ROOT / "tests"), bench=str(ROOT / "tests" / "bench"), eager=eager
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_the_lazy_scrubber_finds_the_spans_of_compiling_everything_up_front():
    lazy, eager = _spans(eager=False), _spans(eager=True)
    assert lazy == eager
    assert sum(map(len, lazy)) >= 600  # the corpus's secrets are found


def test_a_rule_is_compiled_only_when_one_of_its_keywords_is_in_the_text():
    code = (
        "from memwiki.memorize import gitleaks, scrub, scrub_rules\n"
        "text = 'ok, I ran the tests again: 3 passed, 1 skipped'\n"
        "scrub.scrub_text(text)\n"
        "present = scrub._keywords().present(text.lower())\n"
        "assert present == {'pass', 'sk'}, present\n"
        "ours = scrub._TOKEN_RULES + scrub_rules._CLASS_RULES + scrub_rules._BLOCK_RULES\n"
        "compiled = {r.kind for r in ours if r._pattern}\n"
        "assert compiled == {r.kind for r in ours if not r.keys or present & set(r.keys)}\n"
        "assert compiled == {'pgpass', 'prefixed-token', 'secret-flag', 'secret-in-prose'}\n"
        "provider = {r.id for r in gitleaks.rules()[0] if r._compiled}\n"
        "assert provider == {'twilio-api-key'}, provider  # its keyword: `sk`\n"
        "assert not any(a._compiled for r in gitleaks.rules()[0] for a in r.allows)\n"
        "scrub.scrub_text('export GITHUB_TOKEN=ghp_' + 'Zx9kLm2QpR7vT4wYb8Nc3Dd5Ee6Ff7Gg8Hh9')\n"
        "assert any(r._compiled for r in gitleaks.rules()[0] if 'ghp_' in r.keywords)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(KEYWORDS), st.text(max_size=12)), max_size=20))
def test_keywords_looked_up_one_by_one_are_the_ones_the_regexes_find(pieces):
    low = "".join(pieces).lower()
    lookup = scrub_keywords.Keywords(KEYWORDS, budget=1 << 40)
    regex = scrub_keywords.Keywords(KEYWORDS, budget=0)
    assert lookup.present(low) == regex.present(low) == {k for k in KEYWORDS if k in low}
    assert all(g.rx is None for g in lookup._groups)


def test_a_keyword_group_turns_to_its_regex_once_it_has_read_its_budget():
    words = scrub_keywords.Keywords(["pass", "password", "passwd", "pwd", "token"], budget=100)
    text = "the password is in the token file " * 2  # 68 characters
    assert words.present(text) == {"pass", "password", "pwd", "token"} - {"pwd"}
    assert all(g.rx is None for g in words._groups)
    assert words.present(text) == {"pass", "password", "token"}  # 136 read: compiled
    assert {g.first for g in words._groups if g.rx is not None} == {"p", "t"}


def test_the_shipped_rule_data_is_the_toml_translated():
    # rules/gitleaks.json is written by `python -m memwiki.memorize.scrub_build` from the TOML
    built = gitleaks.build_data(gitleaks.RULES_FILE.read_bytes())
    assert json.loads(gitleaks.DATA_FILE.read_text(encoding="utf-8")) == built, (
        "run python -m memwiki.memorize.scrub_build"
    )
    assert len(built["rules"]) >= 200


def test_rule_data_older_than_the_toml_is_not_used(tmp_path, monkeypatch):
    stale = json.loads(gitleaks.DATA_FILE.read_text(encoding="utf-8"))
    stale["rules"] = stale["rules"][:3]
    data = tmp_path / "gitleaks.json"
    data.write_text(json.dumps(stale), encoding="utf-8")
    monkeypatch.setattr(gitleaks, "DATA_FILE", data)
    assert len(gitleaks._data()["rules"]) == 3  # the TOML's digest: taken as it is
    stale["source_sha256"] = "0" * 64  # the TOML changed since: read the TOML instead
    data.write_text(json.dumps(stale), encoding="utf-8")
    assert gitleaks._data() == gitleaks.build_data(gitleaks.RULES_FILE.read_bytes())
    data.write_text("{not json", encoding="utf-8")
    assert len(gitleaks._data()["rules"]) >= 200
    stale["source_sha256"] = gitleaks.build_data(gitleaks.RULES_FILE.read_bytes())["source_sha256"]
    stale["rules"] = [{"id": "half a rule"}]  # the TOML's digest, another shape
    data.write_text(json.dumps(stale), encoding="utf-8")
    gitleaks.rules.cache_clear()
    try:
        assert len(gitleaks.rules()[0]) >= 200
    finally:
        gitleaks.rules.cache_clear()


def test_the_shipped_anchors_are_the_ones_worked_out_now():
    # rules/anchors.json is written by `python -m memwiki.memorize.scrub_build`
    shipped = json.loads(scan.ANCHORS_FILE.read_text(encoding="utf-8"))
    if shipped["python"] != f"{sys.version_info.major}.{sys.version_info.minor}":
        pytest.skip("built on another Python, whose regex parser may spell anchors otherwise")
    assert shipped == scrub_build.anchors(), "run python -m memwiki.memorize.scrub_build"
    anchored = [p for p in scrub.patterns() if scan.cached_anchor(p) is not None]
    assert len(anchored) >= 200
    assert all(scan.cached_anchor(p) == scan.anchor(p) for p in scrub.patterns())


def test_a_pattern_missing_or_damaged_in_the_anchor_file_is_worked_out(tmp_path, monkeypatch):
    rx = re.compile(r"(?i)\b(?:token|secret)[:=]\s*(\w+)")
    damaged = re.compile(r"\bpassword[:=]\s*(\w+)")
    table = tmp_path / "anchors.json"
    table.write_text(json.dumps({"anchors": {scan.anchor_key(damaged): [1, 2]}}))
    monkeypatch.setattr(scan, "ANCHORS_FILE", table)
    scan._known.cache_clear()
    scan.cached_anchor.cache_clear()
    try:
        assert scan.cached_anchor(rx) == scan.anchor(rx) is not None
        assert scan.cached_anchor(damaged) == scan.anchor(damaged) is not None
    finally:
        scan._known.cache_clear()
        scan.cached_anchor.cache_clear()
