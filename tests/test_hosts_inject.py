"""install/uninstall: managed block and Claude Code hook, byte-identical round trips."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from memwiki.config import load
from memwiki.errors import InvalidInput, NotFound
from memwiki.hosts.integrate import block
from memwiki.hosts.integrate.claude_settings import (
    HOOK_COMMAND,
    add_hook,
    is_hook_command,
    remove_hook,
)
from memwiki.hosts.integrate.inject import install, installed, uninstall
from memwiki.hosts.integrate.texts import instruction_block

CLAUDE_SETTINGS = """{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(npm test:*)"
    ]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/guard.sh"
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/ticket-context"
          }
        ]
      }
    ]
  },
  "statusLine": {
    "type": "command",
    "command": "~/bin/status"
  }
}"""


def make_config(tmp_path: Path, **env: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home), **env})


def claude_home(tmp_path: Path):
    cfg = make_config(tmp_path)
    (tmp_path / "home" / ".claude").mkdir()
    return cfg, tmp_path / "home" / ".claude"


def snapshot(*paths: Path) -> dict[str, bytes | None]:
    return {str(p): (p.read_bytes() if p.exists() else None) for p in paths}


@pytest.mark.parametrize(
    "original",
    [None, b"", b"# My rules\n\nBe terse.\n", b"# My rules\n\nBe terse.", b"\n", b"x\r\ny\r\n"],
    ids=["absent", "empty", "trailing-newline", "no-trailing-newline", "only-newline", "crlf"],
)
def test_install_uninstall_round_trip_is_byte_identical(tmp_path, original):
    cfg, claude = claude_home(tmp_path)
    target, settings = claude / "CLAUDE.md", claude / "settings.json"
    if original is not None:
        target.write_bytes(original)
    before = snapshot(target, settings)
    first = install("claude-code", cfg)
    once = snapshot(target, settings)
    second = install("claude-code", cfg)
    assert snapshot(target, settings) == once  # install twice == install once
    assert not second.changed
    assert first.changed and instruction_block().strip().splitlines()[0] in target.read_text()
    assert installed("claude-code", cfg)
    uninstall("claude-code", cfg)
    assert snapshot(target, settings) == before
    assert not installed("claude-code", cfg)


def test_settings_with_other_hooks_round_trip(tmp_path):
    cfg, claude = claude_home(tmp_path)
    settings = claude / "settings.json"
    settings.write_text(CLAUDE_SETTINGS)
    install("claude-code", cfg)
    data = json.loads(settings.read_text())
    groups = data["hooks"]["UserPromptSubmit"]
    assert groups[0]["hooks"][0]["command"] == "~/bin/ticket-context"
    assert groups[1]["hooks"][0]["timeout"] == 10
    assert is_hook_command(groups[1]["hooks"][0]["command"])
    assert list(data) == ["model", "permissions", "hooks", "statusLine"]  # key order kept
    assert "matcher" not in groups[1]  # UserPromptSubmit takes no matcher
    once = settings.read_bytes()
    install("claude-code", cfg)
    assert settings.read_bytes() == once
    uninstall("claude-code", cfg)
    assert settings.read_text() == CLAUDE_SETTINGS


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        '{\n    "theme": "dark"\n}\n',
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}',
        '{\n\t"hooks": {\n\t\t"UserPromptSubmit": []\n\t},\n\t"a": [1, 2]\n}',
        '{\n  "hooks": {\n    "UserPromptSubmit": [\n      {\n        "hooks": [\n'
        '          {"type": "command", "command": "a"}\n        ]\n      }\n    ]\n  }\n}\n',
    ],
)
def test_settings_shapes_round_trip(text):
    added = add_hook(text)
    assert add_hook(added) == added
    assert json.loads(added)["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"] == HOOK_COMMAND
    if "[]" in text:
        # A pre-existing empty array is indistinguishable from one install created (documented):
        # it goes, and so does the "hooks" object it leaves empty; nothing else changes.
        assert remove_hook(added) == '{\n\t"a": [1, 2]\n}'
    else:
        assert remove_hook(added) == text


def test_settings_created_then_deleted_and_hook_merged_by_hand_is_removed_alone():
    created = add_hook(None)
    assert remove_hook(created) is None
    merged = json.dumps(
        {
            "hooks": {
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {"type": "command", "command": "a"},
                            {"type": "command", "command": HOOK_COMMAND, "timeout": 10},
                        ]
                    }
                ]
            }
        }
    )
    assert json.loads(remove_hook(merged)) == {
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "a"}]}]}
    }


def test_invalid_settings_writes_nothing(tmp_path):
    cfg, claude = claude_home(tmp_path)
    (claude / "settings.json").write_text("{ not json")
    with pytest.raises(InvalidInput):
        install("claude-code", cfg)
    assert not (claude / "CLAUDE.md").exists()


def test_block_is_updated_in_place_and_other_text_untouched(tmp_path):
    target = tmp_path / "AGENTS.md"
    # The block an install from another virtualenv wrote (text typed into the block would
    # be refused: tests/test_hosts_typed_text.py).
    ours = block.render_block(instruction_block("/old/venv/bin/memwiki"))
    old = f"# Top\n\n{ours}\n\n## Mine, added later\nkeep\n"
    target.write_text(old)
    (tmp_path / "home").mkdir()
    cfg = make_config(tmp_path)
    result = install("generic", cfg, path=target)
    assert result.changes[0].action == "updated"
    text = target.read_text()
    assert text.startswith("# Top\n\n" + block.BEGIN + "\n")
    assert text.endswith(f"{block.END}\n\n## Mine, added later\nkeep\n")
    assert "/old/venv/bin/memwiki" not in text


def test_uninstall_keeps_text_the_user_added_after_the_block(tmp_path):
    cfg = make_config(tmp_path)
    target = tmp_path / "AGENTS.md"
    target.write_text("# Rules\n")
    install("generic", cfg, path=target)
    with target.open("a") as fh:
        fh.write("added later\n")
    uninstall("generic", cfg, path=target)
    assert target.read_text() == "# Rules\nadded later\n"


def test_dry_run_writes_nothing(tmp_path):
    cfg, claude = claude_home(tmp_path)
    result = install("claude-code", cfg, dry_run=True)
    assert [c.action for c in result.changes] == ["created", "created"]
    assert list(claude.iterdir()) == []
    assert json.loads(json.dumps(result.to_dict()))["changed"] is True


def test_symlink_and_mode_are_preserved(tmp_path):
    cfg = make_config(tmp_path)
    real = tmp_path / "dotfiles" / "AGENTS.md"
    real.parent.mkdir()
    real.write_text("mine\n")
    os.chmod(real, 0o640)
    link = tmp_path / "AGENTS.md"
    link.symlink_to(real)
    install("generic", cfg, path=link)
    assert link.is_symlink() and block.BEGIN in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    uninstall("generic", cfg, path=link)
    assert link.is_symlink() and real.read_text() == "mine\n"


def test_host_targets(tmp_path):
    cfg = make_config(tmp_path, CODEX_HOME=str(tmp_path / "cx"), HERMES_HOME=str(tmp_path / "hh"))
    with pytest.raises(InvalidInput):
        install("cursor", cfg)
    with pytest.raises(NotFound):
        install("codex", cfg)  # ~/.codex is missing: codex is not installed
    (tmp_path / "cx").mkdir()
    (tmp_path / "cx" / "AGENTS.override.md").write_text("override wins\n")
    assert install("codex", cfg).changes[0].path == str(tmp_path / "cx" / "AGENTS.override.md")
    (tmp_path / "hh").mkdir()
    assert install("hermes", cfg).changes[0].path == str(tmp_path / "hh" / "SOUL.md")
    assert "memwiki retrieve" in (tmp_path / "hh" / "SOUL.md").read_text()  # inline, not a pointer


def test_block_markers():
    assert block.find_block(f"quote {block.BEGIN} mid-line\n") is None
    with pytest.raises(InvalidInput):
        block.find_block(f"{block.BEGIN}\nno end\n")
    with pytest.raises(InvalidInput):
        block.find_block(f"text\n{block.END}\n")


def test_instruction_block_template_says_what_to_do():
    text = instruction_block()
    assert 'memwiki retrieve "<the request, reworded if useful>"' in text
    assert "memwiki retrieve --json" in text
    assert "stale" in text and "line ranges" in text


def test_codex_uninstall_finds_the_block_after_an_override_appears(tmp_path):
    """Bug: once AGENTS.override.md existed, uninstall looked only there and left the block
    install had put in AGENTS.md (and detect said the block was not installed)."""
    home = tmp_path / "cx"
    home.mkdir()
    cfg = make_config(tmp_path, CODEX_HOME=str(home))
    plain, override = home / "AGENTS.md", home / "AGENTS.override.md"
    plain.write_text("# Mine\n")
    install("codex", cfg)
    override.write_text("o\n")
    assert installed("codex", cfg) and not installed("codex", cfg, override)
    result = uninstall("codex", cfg)
    assert [(c.path, c.action) for c in result.changes] == [(str(plain), "removed")]
    assert plain.read_text() == "# Mine\n" and override.read_text() == "o\n"
    assert not installed("codex", cfg)
    # A block in each file (each put there by hand with --path): both go.
    install("codex", cfg, override)
    install("codex", cfg, plain)
    assert [c.action for c in uninstall("codex", cfg).changes] == ["removed", "removed"]
    assert plain.read_text() == "# Mine\n" and override.read_text() == "o\n"


@pytest.mark.parametrize(
    "text",
    [
        '{"hooks": {"Stop": []}, "hooks": {"UserPromptSubmit": []}}\n',
        '{"hooks": {"UserPromptSubmit": [], "UserPromptSubmit": [{"hooks": []}]}}\n',
        '{"hooks": {"UserPromptSubmit": [{"hooks": [], "hooks": []}]}}\n',
    ],
    ids=["hooks", "event", "group-hooks"],
)
def test_settings_with_a_duplicate_key_are_refused_and_nothing_is_written(tmp_path, text):
    """Bug: with "hooks" twice, install edited the last and uninstall the first, so the
    round trip ended as {"hooks": {}} and the user's "Stop" member was lost."""
    cfg, claude = claude_home(tmp_path)
    settings, target = claude / "settings.json", claude / "CLAUDE.md"
    settings.write_text(text)
    with pytest.raises(InvalidInput, match="appears 2 times"):
        install("claude-code", cfg)
    assert snapshot(target, settings) == {str(target): None, str(settings): text.encode()}
    # Installed before the duplicate appeared: uninstall refuses too, and leaves the block.
    settings.write_text('{"hooks": {"Stop": []}}\n')
    install("claude-code", cfg)
    settings.write_text(text)
    block_before = target.read_bytes()
    with pytest.raises(InvalidInput):
        uninstall("claude-code", cfg)
    assert target.read_bytes() == block_before and settings.read_text() == text


@pytest.mark.parametrize(
    "original",
    [b"{}\n", b"", b"{}", b"\n", b'{"hooks": {"UserPromptSubmit": []}}\n', b'{"hooks": {}}\n'],
    ids=["braces", "empty", "braces-no-newline", "newline", "empty-event", "empty-hooks"],
)
def test_settings_that_look_created_come_back_byte_for_byte(tmp_path, original):
    """Bug: settings.json that was `{}` or empty was deleted by uninstall, and an empty
    "UserPromptSubmit": [] came back as {}, although docs promise every file back as it was."""
    cfg, claude = claude_home(tmp_path)
    settings = claude / "settings.json"
    settings.write_bytes(original)
    install("claude-code", cfg)
    install("claude-code", cfg)  # a second install keeps the record of the first's original
    result = uninstall("claude-code", cfg)
    assert settings.read_bytes() == original
    assert [c.action for c in result.changes] == ["deleted", "removed"]
    # Created by install: deleted, as before.
    settings.unlink()
    install("claude-code", cfg)
    assert [c.action for c in uninstall("claude-code", cfg).changes] == ["deleted", "deleted"]
    assert not settings.exists()


def test_settings_changed_after_install_lose_only_the_hook(tmp_path):
    """Bug guard: the before-install record must not undo what changed in settings.json since
    install (Claude Code rewrites the file): then only the hook entry is taken out."""
    cfg, claude = claude_home(tmp_path)
    settings = claude / "settings.json"
    settings.write_text('{\n  "model": "opus"\n}\n')
    install("claude-code", cfg)
    settings.write_text(settings.read_text().replace('"opus"', '"sonnet"'))
    uninstall("claude-code", cfg)
    assert settings.read_text() == '{\n  "model": "sonnet"\n}\n'


def test_the_before_install_record_keeps_no_copy_of_an_ordinary_settings_file(tmp_path):
    """settings.json may hold secrets (an `env` block): the record keeps a copy of it only
    where the surgical removal could not give the bytes back, and is readable by its owner
    alone."""
    cfg, claude = claude_home(tmp_path)
    settings = claude / "settings.json"
    original = '{\n  "env": {"SOME_TOKEN": "sk-not-a-real-one"},\n  "theme": "dark"\n}\n'
    settings.write_text(original)
    install("claude-code", cfg)
    record = cfg.config_file.parent / "claude-settings-before.json"
    assert "sk-not-a-real-one" not in record.read_text()
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    uninstall("claude-code", cfg)
    assert settings.read_text() == original


def test_install_tells_an_installed_but_never_run_host_to_run_it_first(tmp_path):
    # ~/.openclaw exists (installed) but not its workspace: "is openclaw installed?" misled.
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    cfg = load(options={"wiki": str(tmp_path / "w")}, environ={"HOME": str(home)})
    with pytest.raises(NotFound) as err:
        install("openclaw", cfg)
    assert "does not exist yet: run openclaw once" in err.value.message
    assert "is openclaw installed" not in err.value.message
    with pytest.raises(NotFound) as err:  # no trace of it at all: the old question stands
        install("openclaw", load(options={"wiki": "w"}, environ={"HOME": str(tmp_path / "x")}))
    assert "is openclaw installed? (or pass --path)" in err.value.message
