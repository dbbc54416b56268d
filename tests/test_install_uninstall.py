"""`memwiki uninstall` of every host leaves nothing of memwiki's in agents' folders nor
its own records of what install wrote."""

from __future__ import annotations


def test_uninstalling_every_host_leaves_no_record_behind(home_memwiki):
    """Bug: after install and uninstall of claude-code and codex, ~/.config/memwiki kept
    claude-settings-before.json and instruction-blocks.json, each holding `{}`."""
    home = home_memwiki.home
    for host, folder in (("claude-code", ".claude"), ("codex", ".codex")):
        (home / folder).mkdir()
        assert home_memwiki("install", "--host", host).returncode == 0
    records = home / ".config" / "memwiki"
    assert {p.name for p in records.glob("*.json")} == {
        "claude-settings-before.json",
        "instruction-blocks.json",
    }
    assert home_memwiki("uninstall", "--host", "codex").returncode == 0
    assert (records / "instruction-blocks.json").exists()  # claude-code's block is still in
    assert home_memwiki("uninstall", "--host", "claude-code").returncode == 0
    assert list(records.glob("*.json")) == []
    left = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert left == [], left
    # Installing again after that works as the first time did.
    assert home_memwiki("install", "--host", "claude-code").returncode == 0
    assert "hook claude-code" in (home / ".claude" / "settings.json").read_text()
