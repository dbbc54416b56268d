"""`memwiki init PATH` and the wiki later commands open.

Bug it prevents: `memwiki init ~/notes/wiki` then `memwiki add ...` failed with "no wiki at
~/memwiki", and nothing had said the new wiki needed configuring. `clone` already made its
clone the configured wiki; `init PATH` now does the same when no wiki is configured yet,
and otherwise says how to reach the new one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def _config_file(home: Path) -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "memwiki" / "config.toml"


def test_init_path_with_nothing_configured_makes_it_the_configured_wiki(tmp_path, run_memwiki):
    root = tmp_path / "notes" / "wiki"
    got = run_memwiki("init", root)
    assert got.returncode == 0, got.stderr
    config_file = _config_file(tmp_path)
    assert f"It is now the configured wiki ({config_file})" in got.stdout
    assert config_file.read_text(encoding="utf-8") == f'wiki = "{root}"\n'
    added = run_memwiki("add", "memory", "oncall", "-d", "Who is on call", input="# Oncall\nKim\n")
    assert added.returncode == 0, added.stderr
    assert (root / "memory" / "oncall.md").is_file()


def test_init_path_leaves_a_configured_wiki_configured_and_says_how(tmp_path, run_memwiki):
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_memwiki("init", first).returncode == 0
    config_file = _config_file(tmp_path)
    before = config_file.read_text(encoding="utf-8")
    got = run_memwiki("init", second, "--json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["created"] is True and "config_file" not in data
    assert data["hint"] == (
        f"commands without --wiki still use {first}: pass --wiki {second}, "
        f'or set wiki = "{second}" in {config_file}'
    )
    assert config_file.read_text(encoding="utf-8") == before
    env = run_memwiki("init", tmp_path / "third", env={"MEMWIKI_DIR": str(first)})
    assert env.returncode == 0, env.stderr
    assert f"or set MEMWIKI_DIR={tmp_path / 'third'}" in env.stdout
    assert config_file.read_text(encoding="utf-8") == before


def test_init_of_the_configured_wiki_or_by_wiki_option_writes_no_config(tmp_path, run_memwiki):
    home_wiki = Path(os.environ["HOME"]) / "memwiki"
    assert run_memwiki("init").returncode == 0  # the default, ~/memwiki
    assert run_memwiki("init", home_wiki).stdout.count("\n") == 1  # nothing to add
    other = run_memwiki("--wiki", tmp_path / "w", "init")
    assert other.returncode == 0 and other.stdout.count("\n") == 1, other.stdout
    assert not _config_file(tmp_path).exists()


def test_init_with_an_unwritable_config_folder_makes_the_wiki_and_says_so(tmp_path, run_memwiki):
    """Found by the disk audit: with HOME read-only the wiki was made and committed, then
    init failed with exit 5 over the config file it only meant to write for convenience."""
    config_dir = Path(os.environ["XDG_CONFIG_HOME"])
    config_dir.parent.mkdir(parents=True, exist_ok=True)
    config_dir.write_text("a file where the config folder belongs\n")  # blocks it, as root too
    root = tmp_path / "w"
    got = run_memwiki("init", root)
    assert got.returncode == 0, got.stderr
    assert (root / ".git").is_dir()
    assert f"Note: the config file {config_dir / 'memwiki' / 'config.toml'} cannot be written" in (
        got.stdout
    )
