"""`memwiki install/uninstall` against the files users really have, through the real command.

Each test drives `memwiki` as a subprocess with its own HOME and checks the bytes on disk:
what install wrote, what uninstall gave back, and that the user's own text never changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwiki.hosts.integrate.block import BEGIN


@pytest.fixture
def home(tmp_path) -> Path:
    """A HOME with a space in it, as on many desktops ("/home/Ana Lima")."""
    path = tmp_path / "Ana Lima"
    path.mkdir()
    return path


@pytest.fixture
def mw(run_memwiki, home):
    """memwiki with HOME (and XDG) pointing at the home fixture; returns the process."""

    def run(*argv: str, **kw):
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **kw.pop("env", {})}
        done = run_memwiki(*argv, env=env, **kw)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    return run


def changes(done) -> list[tuple[str, str]]:
    assert done.returncode == 0, done.stderr
    return [(Path(c["path"]).name, c["action"]) for c in json.loads(done.stdout)["changes"]]


# --- Codex: AGENTS.override.md -----------------------------------------------------------


def test_codex_install_again_after_an_override_appeared_moves_the_block(home, mw):
    """Bug: install run again after the user created AGENTS.override.md wrote the block there
    and left the old one in AGENTS.md, which Codex no longer reads: two blocks, one stale."""
    codex = home / ".codex"
    codex.mkdir()
    plain, override = codex / "AGENTS.md", codex / "AGENTS.override.md"
    mine = b"# Mine\r\n\r\nuse tabs  \n\xe2\x9c\x93 no trailing newline"
    plain.write_bytes(mine)
    assert changes(mw("install", "--host", "codex", "--json")) == [("AGENTS.md", "appended")]
    override.write_bytes(b"# For this week\n")
    dry = mw("install", "--host", "codex", "--json", "--dry-run")
    assert changes(dry) == [("AGENTS.override.md", "appended"), ("AGENTS.md", "removed")]
    assert BEGIN.encode() in plain.read_bytes()  # a dry run writes nothing
    done = mw("install", "--host", "codex", "--json")
    assert changes(done) == [("AGENTS.override.md", "appended"), ("AGENTS.md", "removed")]
    assert plain.read_bytes() == mine  # the user's text, byte for byte
    assert override.read_bytes().count(BEGIN.encode()) == 1
    again = mw("install", "--host", "codex", "--json")
    assert changes(again) == [("AGENTS.override.md", "unchanged")]
    assert changes(mw("uninstall", "--host", "codex", "--json")) == [
        ("AGENTS.override.md", "removed")
    ]
    assert override.read_bytes() == b"# For this week\n" and plain.read_bytes() == mine


def test_codex_an_agents_md_install_created_goes_when_the_block_moves(home, mw):
    """The AGENTS.md that install created (it holds nothing but the block) is deleted when
    the block moves to the override, as uninstall would delete it."""
    codex = home / ".codex"
    codex.mkdir()
    mw("install", "--host", "codex")
    (codex / "AGENTS.override.md").write_text("# Mine\n")
    assert changes(mw("install", "--host", "codex", "--json")) == [
        ("AGENTS.override.md", "appended"),
        ("AGENTS.md", "deleted"),
    ]
    assert sorted(p.name for p in codex.iterdir()) == ["AGENTS.override.md"]


def test_codex_an_empty_override_does_not_take_the_block(home, mw):
    """Bug: an empty AGENTS.override.md got the block, which made it the file Codex reads:
    Codex skips an override that holds only whitespace, and then stopped reading the user's
    AGENTS.md."""
    codex = home / ".codex"
    codex.mkdir()
    (codex / "AGENTS.md").write_text("# Mine\n")
    (codex / "AGENTS.override.md").write_text(" \n\n")
    assert changes(mw("install", "--host", "codex", "--json")) == [("AGENTS.md", "appended")]
    assert (codex / "AGENTS.override.md").read_text() == " \n\n"
    detect = json.loads(mw("hosts", "detect", "--json").stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "codex"]
    assert st["instruction_file"] == str(codex / "AGENTS.md") and st["installed"]
    assert changes(mw("uninstall", "--host", "codex", "--json")) == [("AGENTS.md", "removed")]
    assert (codex / "AGENTS.md").read_text() == "# Mine\n"
