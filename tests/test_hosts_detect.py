"""hosts detect: found / memorize / retrieve per host, and the next command."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from memwiki.config import load
from memwiki.hosts.integrate.detect import detect_hosts, host_status
from memwiki.hosts.integrate.inject import install

FIX = Path(__file__).parent / "fixtures" / "hosts"


def make_config(tmp_path: Path, **env: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load(options={"wiki": str(tmp_path / "wiki")}, environ={"HOME": str(home), **env})


def by_host(statuses):
    return {s.host: s for s in statuses}


def test_empty_machine_finds_nothing(tmp_path):
    statuses = detect_hosts(make_config(tmp_path))
    assert [s.host for s in statuses] == ["claude-code", "codex", "cursor", "openclaw", "hermes"]
    assert not any(s.found or s.memorize for s in statuses)
    assert all(s.next_command is None for s in statuses)
    json.dumps([s.to_dict() for s in statuses])


def test_detects_sessions_instruction_files_and_next_commands(tmp_path):
    home = tmp_path / "home"
    cfg = make_config(tmp_path)
    shutil.copytree(FIX / "claude-code", home / ".claude")
    shutil.copytree(FIX / "cursor", home / ".cursor")
    (home / ".hermes").mkdir()
    conn = sqlite3.connect(home / ".hermes" / "state.db")
    conn.executescript((FIX / "hermes" / "state.sql").read_text())
    conn.close()
    st = by_host(detect_hosts(cfg))
    cc = st["claude-code"]
    assert cc.found and cc.memorize and cc.sessions == 4 and cc.retrieve
    assert cc.instruction_file == str(home / ".claude" / "CLAUDE.md")
    assert cc.next_command == "memwiki install --host claude-code" and cc.hook_installed is False
    assert st["cursor"].memorize and not st["cursor"].retrieve
    assert st["cursor"].next_command == "memwiki install --host cursor --path ./AGENTS.md"
    assert st["hermes"].memorize and st["hermes"].sessions == 2
    assert not st["codex"].found

    install("claude-code", cfg)
    cc = by_host(detect_hosts(cfg))["claude-code"]
    assert cc.installed and cc.hook_installed
    assert cc.next_command == "memwiki bridge prepare --host claude-code"


def test_a_host_used_for_no_session_yet_is_told_so_not_sent_to_another_folder(tmp_path):
    # A new Codex user: ~/.codex exists, no session yet. detect suggested
    # `bridge prepare --host codex --session-dir DIR`, as if the logs were elsewhere.
    home = tmp_path / "home"
    cfg = make_config(tmp_path)
    (home / ".codex").mkdir(parents=True)
    install("codex", cfg)
    st = by_host(detect_hosts(cfg))["codex"]
    assert st.found and st.installed and st.sessions == 0
    assert st.next_command is None
    assert st.notes == ["no sessions yet: they are mined once codex has been used"]


def test_generic_notes_count_records_in_the_singular_too(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    line = {"type": "user", "message": {"role": "user", "content": "hello there"}}
    (one / "s.jsonl").write_text(json.dumps(line) + "\n")
    notes = by_host(detect_hosts(make_config(tmp_path), one))["generic"].notes
    assert notes and all(" 1 records" not in n for n in notes), notes


def test_generic_path_is_sniffed(tmp_path):
    cfg = make_config(tmp_path)
    st = by_host(detect_hosts(cfg, FIX / "generic"))["generic"]
    assert st.memorize and st.sessions == 2
    assert (
        st.next_command == f"memwiki bridge prepare --host generic --session-dir {FIX / 'generic'}"
    )
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "chat.sqlite").write_bytes(b"")
    st = by_host(detect_hosts(cfg, dbs))["generic"]
    assert not st.memorize and any("dedicated adapter" in n for n in st.notes)


def test_detect_notes_a_corrupt_hermes_store(tmp_path):
    """Bug: detect said "memorize: no (0 sessions)" for a corrupt store, with no note."""
    cfg = make_config(tmp_path)
    (cfg.home / ".hermes").mkdir()
    (cfg.home / ".hermes" / "state.db").write_bytes(b"garbage\n")
    st = host_status("hermes", cfg)
    assert not st.memorize
    assert any("state.db: cannot read the database: file is not a database" in n for n in st.notes)


def test_detect_finds_a_codex_block_left_in_agents_md_under_an_override(tmp_path):
    """Bug: detect said "block no" when the block was in AGENTS.md and an override existed."""
    cfg = make_config(tmp_path)
    codex = cfg.home / ".codex"
    codex.mkdir()
    (codex / "AGENTS.md").write_text("# Mine\n")
    install("codex", cfg)
    (codex / "AGENTS.override.md").write_text("o\n")
    st = host_status("codex", cfg)
    assert st.installed
    assert any("does not read" in n and "AGENTS.override.md" in n for n in st.notes)
