"""Errors: one stderr line and a documented exit code; --json adds the error document on
stdout; --debug adds the traceback and keeps the exit code (issue 13 items 7 and 9)."""

from __future__ import annotations

import json

import pytest

from memwiki.wiki import Wiki

PREFIX = "memwiki: error: "


def _document(out: str) -> dict:
    data = json.loads(out)
    assert set(data) == {"error"} and set(data["error"]) == {"message", "exit_code"}
    return data["error"]


def test_json_error_of_a_typer_command(wiki, cli):
    code, out, err = cli("--wiki", wiki.root, "show", "memory/nope", "--json")
    assert code == 3
    assert err == f"{PREFIX}no RecallFile memory/nope\n"
    assert _document(out) == {"message": "no RecallFile memory/nope", "exit_code": 3}


def test_json_error_of_the_fast_retrieve_path(tmp_path, run_memwiki):
    done = run_memwiki("retrieve", "anything", "--json", "-w", tmp_path / "missing")
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(PREFIX)
    error = _document(done.stdout)
    assert error["exit_code"] == 3 and error["message"] == done.stderr[len(PREFIX) : -1]


def test_json_usage_errors_also_print_the_document(wiki, cli):
    code, out, err = cli("--wiki", wiki.root, "show", "--json")
    assert code == 2 and "Missing argument" in err
    assert _document(out) == {"message": "Missing argument 'ref'.", "exit_code": 2}
    code, out, _ = cli("--wiki", wiki.root, "retrieve", "q", "-k", "x", "--json")
    assert code == 2 and _document(out)["exit_code"] == 2


def test_without_json_stdout_stays_empty_on_error(wiki, cli):
    code, out, err = cli("--wiki", wiki.root, "show", "memory/nope")
    assert code == 3 and out == "" and err.count("\n") == 1


def test_a_json_after_double_dash_is_an_argument_not_the_option(wiki, cli):
    code, out, _ = cli("--wiki", wiki.root, "show", "--", "--json")
    assert code == 2 and out == ""


@pytest.mark.parametrize("flags", [["--debug"], ["--debug", "--json"]])
def test_debug_keeps_the_exit_code_of_a_memwiki_error(wiki, cli, flags):
    code, out, err = cli("--wiki", wiki.root, "show", "memory/nope", *flags)
    assert code == 3
    assert "Traceback (most recent call last)" in err and "NotFound" in err
    assert err.endswith(f"{PREFIX}no RecallFile memory/nope\n")
    assert (out != "") == ("--json" in flags)


def test_debug_keeps_exit_70_of_an_internal_error(wiki, cli, monkeypatch):
    # A bug has to be planted: memwiki has none on purpose that a test could reach.
    def broken(self, *args, **kwargs):
        raise RuntimeError("planted bug")

    monkeypatch.setattr(Wiki, "log", broken)
    code, out, err = cli("--wiki", wiki.root, "log", "--json")
    assert code == 70 and err.count("\n") == 1
    assert "internal error: RuntimeError: planted bug" in err
    assert _document(out)["exit_code"] == 70
    code, _, err = cli("--wiki", wiki.root, "--debug", "log")
    assert code == 70
    assert "Traceback (most recent call last)" in err and "planted bug" in err


def test_debug_after_the_command_keeps_the_exit_code(tmp_path, run_memwiki):
    done = run_memwiki("retrieve", "q", "--debug", "--wiki", tmp_path / "missing")
    assert done.returncode == 3 and "Traceback" in done.stderr


def test_retrieve_json_and_files_together_is_a_usage_error(wiki, run_memwiki):
    """Bug: the synopsis says `[--json | --files]`, but both together quietly printed JSON."""
    done = run_memwiki("--wiki", wiki.root, "retrieve", "deploy", "--json", "--files")
    assert done.returncode == 2
    assert "--json and --files cannot be used together" in done.stderr


@pytest.mark.parametrize("deadline", ["10000000000000", "9" * 400])
def test_a_huge_deadline_is_no_deadline_not_an_overflow(wiki, run_memwiki, deadline):
    """Bug: `--deadline 10000000000000` ended with an internal error (OverflowError:
    timestamp out of range), in markdown and in --json."""
    done = run_memwiki("--wiki", wiki.root, "retrieve", "deploy", "--deadline", deadline, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode"] in ("hybrid", "bm25")


def test_values_that_were_taken_silently_are_usage_errors(wiki, cli):
    """Bugs: `retrieve --budget -5` was taken as no budget, `log ''` printed the whole
    history, and a hand-made list cursor of other values returned an empty page."""
    import base64

    code, _, err = cli("--wiki", wiki.root, "retrieve", "x", "--budget", "-5")
    assert code == 2 and "--budget must be 0" in err
    code, _, err = cli("--wiki", wiki.root, "log", "")
    assert code == 2 and "expected TRACK/NAME" in err
    cursor = base64.urlsafe_b64encode(b'[{"a":1},2,3]').decode()
    code, _, err = cli("--wiki", wiki.root, "list", "--cursor", cursor)
    assert code == 2 and "invalid cursor" in err


def test_log_and_retrieve_refuse_what_other_commands_refuse(wiki, cli):
    """Bugs: `log memory/nothing` was exit 0 with nothing where show/rm say exit 3, and
    `log -n 0` printed a commit; retrieve took abbreviated options (`--fil`, `--js`),
    which every other command refuses, so a typo could change the output format."""
    code, _, err = cli("--wiki", wiki.root, "log", "memory/nothing")
    assert code == 3 and "no RecallFile memory/nothing" in err
    for n in ("0", "-1"):
        code, _, err = cli("--wiki", wiki.root, "log", "-n", n)
        assert code == 2 and "-n must be at least 1" in err
    code, _, _ = cli("--wiki", wiki.root, "retrieve", "x", "--fil")
    assert code == 2


def test_bridge_prepare_says_when_it_was_given_nowhere_to_read(wiki, cli, tmp_path):
    """Bug: `--host generic` without --session-dir, or a --session-dir that does not exist,
    printed "nothing new to memorize" with exit 0: a typo looked like a clean run."""
    code, _, err = cli("--wiki", wiki.root, "bridge", "prepare", "--host", "generic")
    assert code == 2 and "needs --session-dir" in err
    for host in ("generic", "codex"):
        code, _, err = cli("--wiki", wiki.root, "bridge", "prepare", "--host", host,
                           "--session-dir", tmp_path / "nothere")  # fmt: skip
        assert code == 3 and "no such file or directory" in err
