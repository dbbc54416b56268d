"""Streams that are not UTF-8 (a Latin-1 or ASCII locale, PYTHONIOENCODING=ascii): memwiki
still answers, with what the encoding cannot say escaped, its JSON stays valid JSON, and
what is piped in is read as UTF-8, like every note.

Bugs they prevent: a note in Chinese made `retrieve`, `list` and `retrieve --json` an
"internal error: UnicodeEncodeError" (the whole answer lost), and the Claude Code hook
wrote no memory at all for that prompt; `echo Café | memwiki add` under a Latin-1 locale
committed "CafÃ©".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

JP = "---\nname: jp\ndescription: 計費サービスのメモ\n---\n# 計費\n計費サービスの配備 🚀\n"
DE = "---\nname: cafe\ndescription: Notes über das Café\n---\n# Café\nDer Kaffee ist gut.\n"


@pytest.fixture
def wiki(tmp_path, run_memwiki):
    root = tmp_path / "wiki"
    assert run_memwiki("init", root).returncode == 0
    (root / "memory/jp.md").write_text(JP, encoding="utf-8")
    (root / "memory/cafe.md").write_text(DE, encoding="utf-8")
    return root


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_commands_answer_on_a_stdout_that_is_not_utf8(wiki, run_memwiki, encoding):
    env = {"PYTHONIOENCODING": encoding, "LC_ALL": "C"}

    def run(*argv: str):
        done = run_memwiki("--wiki", wiki, *argv, env=env)
        assert done.returncode == 0, done.stderr
        assert "internal error" not in done.stderr
        return done.stdout

    out = run("retrieve", "計費", "--mode", "bm25")
    assert "## memory/jp.md" in out and "\\u8a08\\u8cbb" in out
    assert "\\U0001f680" in out  # outside the BMP: escaped too, not an error
    listed = run("list")
    assert "jp" in listed and "cafe" in listed
    found = json.loads(run("retrieve", "計費", "--mode", "bm25", "--json"))
    assert found["results"][0]["description"] == "計費サービスのメモ"
    assert "🚀" in found["results"][0]["sections"][0]["text"]  # a surrogate pair in JSON


def test_the_hook_adds_memory_on_a_latin1_stdout(wiki, run_memwiki):
    payload = json.dumps({"prompt": "計費 サービス", "cwd": str(wiki)})
    env = {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C", "MEMWIKI_HOOK_BUDGET_MS": "20000"}
    done = run_memwiki("--wiki", wiki, "hook", "claude-code", input=payload, env=env)
    assert done.returncode == 0
    assert done.stdout.isascii()
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## memory/jp.md" in context and "計費サービスの配備 🚀" in context


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_piped_body_is_read_as_utf8_whatever_the_locale(wiki, run_memwiki, encoding):
    env = {"PYTHONIOENCODING": encoding, "LC_ALL": "C"}
    argv = ("--wiki", wiki, "add", "memory", "piped", "-d", "A piped body")
    done = run_memwiki(*argv, input="Café 計費\r\nzwei\n".encode(), env=env)
    assert done.returncode == 0, done.stderr
    assert (wiki / "memory/piped.md").read_text(encoding="utf-8").endswith("Café 計費\nzwei\n")


def test_a_piped_body_that_is_not_utf8_is_refused(wiki, run_memwiki):
    argv = ("--wiki", wiki, "add", "memory", "latin", "-d", "A Latin-1 body")
    done = run_memwiki(*argv, input=b"Caf\xe9\n")
    assert (done.returncode, done.stderr) == (2, "memwiki: error: stdin: not UTF-8 text\n")
    assert not (wiki / "memory/latin.md").exists()


# Python's own C locale, without the coercion to C.UTF-8 or UTF-8 mode: ASCII streams that
# escape undecodable bytes as surrogates (surrogateescape), and ASCII for subprocess text.
PURE_C = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


def test_the_plain_c_locale_answers_and_reads_git_as_utf8(wiki, run_memwiki, tmp_path):
    done = run_memwiki("--wiki", wiki, "list", env=PURE_C)
    assert done.returncode == 0, done.stderr
    assert "\\u8a08\\u8cbb" in done.stdout and "Notes \\xfcber" in done.stdout
    done = run_memwiki("--wiki", wiki, "retrieve", "Kaffee", "--json", env=PURE_C)
    assert json.loads(done.stdout)["results"][0]["description"] == "Notes über das Café"
    # git's output is UTF-8 whatever the locale: a user.name with accents was an
    # uncaught UnicodeDecodeError in the one helper that reads `git config`.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = José Núñez\n", encoding="utf-8")
    code = (
        "from memwiki.git.transport import git_config\n"
        "print(ascii(git_config('git', ['--get', 'user.name'])))"
    )
    env = {**os.environ, **PURE_C, "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == ascii("José Núñez\n"), done.stderr
