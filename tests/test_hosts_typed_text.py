"""Text a person typed inside memwiki's managed block is never silently replaced or deleted.

Each test drives the real `memwiki` command with its own HOME and looks at the bytes on
disk: install and uninstall refuse (exit 4, one line, nothing written) a block holding words
memwiki did not write, and --force replaces or deletes it as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwiki.hosts.integrate.block import BEGIN, END
from memwiki.hosts.integrate.texts import instruction_block

NOTE = "Also: our staging cluster is called blue-moon."
# The file each host's install writes by default, relative to HOME.
INSTRUCTION = {
    "claude-code": ".claude/CLAUDE.md",
    "codex": ".codex/AGENTS.md",
    "openclaw": ".openclaw/workspace/AGENTS.md",
    "hermes": ".hermes/SOUL.md",
}


@pytest.fixture
def mw(home_memwiki):
    """memwiki with HOME in tmp_path and an empty crontab stand-in."""
    return home_memwiki


def instruction(mw, host: str) -> Path:
    path = mw.home / INSTRUCTION[host]
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def type_into_block(path: Path, words: str = NOTE) -> bytes:
    """What a person does: add a line of their own just above the end marker."""
    text = path.read_text().replace(END, f"{words}\n{END}")
    path.write_text(text)
    return path.read_bytes()


@pytest.mark.parametrize("host", sorted(INSTRUCTION))
def test_install_again_refuses_to_replace_words_typed_inside_the_block(mw, host):
    """Bug: a second install replaced the block, and the note typed into it was gone."""
    path = instruction(mw, host)
    path.write_text("# Mine\n")
    assert mw("install", "--host", host).returncode == 0
    typed = type_into_block(path)
    done = mw("install", "--host", host)
    assert done.returncode == 4
    assert path.read_bytes() == typed
    [line] = done.stderr.splitlines()
    assert str(path) in line and "--force" in line and "out of the block" in line
    # --force: replaced as before, the note goes.
    assert mw("install", "--host", host, "--force").returncode == 0
    assert NOTE not in path.read_text() and path.read_text().count(BEGIN) == 1
    assert mw("install", "--host", host).returncode == 0  # and it is memwiki's again


@pytest.mark.parametrize("host", ["codex", "hermes"])
def test_uninstall_refuses_to_delete_words_typed_inside_the_block(mw, host):
    """Bug: uninstall deleted the block with the note a person had typed inside it."""
    path = instruction(mw, host)
    path.write_text("# Mine\n")
    mw("install", "--host", host)
    typed = type_into_block(path)
    done = mw("uninstall", "--host", host, "--json")
    assert done.returncode == 4
    assert json.loads(done.stdout)["error"]["exit_code"] == 4
    assert path.read_bytes() == typed
    assert mw("uninstall", "--host", host, "--force").returncode == 0
    assert path.read_text() == "# Mine\n"


def test_claude_code_install_refused_for_typed_text_writes_no_settings(mw):
    """The refusal comes before anything is written: no hook without its block."""
    path = instruction(mw, "claude-code")
    path.write_text(f"{BEGIN}\nmy own rules, pasted from a colleague's file\n{END}\n")
    assert mw("install", "--host", "claude-code").returncode == 4
    assert not (mw.home / ".claude" / "settings.json").exists()
    detect = json.loads(mw("hosts", "detect", "--json").stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "claude-code"]
    assert any(n.startswith("install would stop: ") and "--force" in n for n in st["notes"])


def test_a_block_written_by_an_earlier_version_is_still_memwikis(mw):
    """Blocks older versions wrote (the bare `memwiki`, another install's absolute path, an
    editor's CRLF) are replaced and removed without --force, with no record of them."""
    path = instruction(mw, "codex")
    older = [instruction_block(), instruction_block("'/opt/my tools/bin/memwiki'")]
    for body in older:
        block = f"{BEGIN}\n{body.strip()}\n{END}\n".replace("\n", "\r\n")
        path.write_text(f"# Mine\r\n\r\n{block}", newline="")
        assert mw("install", "--host", "codex").returncode == 0
        assert mw("uninstall", "--host", "codex").returncode == 0
        assert path.read_bytes() == b"# Mine\r\n"


def test_a_block_this_machine_wrote_is_memwikis_by_its_record(mw):
    """A block whose words a later template no longer matches (a newer memwiki wrote it,
    then an older one runs) is known by the hash install recorded, not refused."""
    path = instruction(mw, "hermes")
    assert mw("install", "--host", "hermes").returncode == 0
    record = mw.home / ".config" / "memwiki" / "instruction-blocks.json"
    # Stand in for a newer template: other words, and the hash a newer install recorded.
    newer = "## Long-term memory (memwiki)\n\nA newer wording."
    path.write_text(f"{BEGIN}\n{newer}\n{END}\n")
    from memwiki.hosts.integrate.written import digest

    record.write_text(json.dumps({str(path): digest(newer)}))
    assert mw("uninstall", "--host", "hermes").returncode == 0
    assert not path.exists()
    assert not record.exists()  # its one entry forgotten, the empty record deleted


def test_a_second_block_with_typed_words_is_refused_too(mw):
    """Two blocks (merged dotfiles): words in either one stop install and uninstall."""
    path = instruction(mw, "codex")
    mw("install", "--host", "codex")
    ours = path.read_text()
    path.write_text(ours + f"\n{BEGIN}\n{NOTE}\n{END}\n")
    assert mw("install", "--host", "codex").returncode == 4
    assert mw("uninstall", "--host", "codex").returncode == 4
    assert NOTE in path.read_text()


def test_an_emptied_block_is_refilled_without_force(mw):
    """A block whose text the person deleted holds nothing to lose: install refills it."""
    path = instruction(mw, "codex")
    path.write_text(f"# Mine\n\n{BEGIN}\n\n{END}\n")
    assert mw("install", "--host", "codex").returncode == 0
    assert "retrieve" in path.read_text()
