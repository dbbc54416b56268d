"""`memwiki install/uninstall` against the files users really have, through the real command.

Each test drives `memwiki` as a subprocess with its own HOME and checks the bytes on disk:
what install wrote, what uninstall gave back, and that the user's own text never changed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fake_crontab

from memwiki.hosts.integrate.block import BEGIN, END


@pytest.fixture
def home(tmp_path) -> Path:
    """A HOME with a space in it, as on many desktops ("/home/Ana Lima")."""
    path = tmp_path / "Ana Lima"
    path.mkdir()
    return path


@pytest.fixture
def crontab(tmp_path) -> str:
    """A PATH whose `crontab` keeps its table in a file: uninstall also looks at the crontab,
    and cron is per user, not per HOME."""
    bindir, _ = fake_crontab(tmp_path)
    return f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture
def mw(run_memwiki, home, crontab):
    """memwiki with HOME (and XDG) pointing at the home fixture; returns the process."""

    def run(*argv: str, **kw):
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": crontab}
        env.update(kw.pop("env", {}))
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


# --- Every host's instruction file -------------------------------------------------------

# The file each host's install writes by default, relative to HOME.
INSTRUCTION = {
    "claude-code": ".claude/CLAUDE.md",
    "codex": ".codex/AGENTS.md",
    "openclaw": ".openclaw/workspace/AGENTS.md",
    "hermes": ".hermes/SOUL.md",
}
HOSTS = sorted(INSTRUCTION)
# What users' files look like: none, empty, a BOM, CRLF, no final newline, blank lines.
CONTENTS = {
    "missing": None,
    "empty": b"",
    "bom": b"\xef\xbb\xbf# Mine\n",
    "crlf": b"# Mine\r\n\r\n- use tabs\r\n",
    "no-final-newline": b"# Mine\n- use tabs",
    "blank-lines": b"\n\n# Mine\n\n\n",
}


def instruction(home: Path, host: str) -> Path:
    path = home / INSTRUCTION[host]
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# Each kind of file once, with the hosts taken in turn: the block code is shared.
@pytest.mark.parametrize(
    ("host", "content"), [(HOSTS[i % len(HOSTS)], c) for i, c in enumerate(sorted(CONTENTS))]
)
def test_install_twice_uninstall_twice_gives_every_byte_back(home, mw, host, content):
    """Install, install, uninstall, uninstall on each kind of file: the second of each
    changes nothing, and the file ends as it began (or absent, if install created it)."""
    path = instruction(home, host)
    if CONTENTS[content] is not None:
        path.write_bytes(CONTENTS[content])
    first = changes(mw("install", "--host", host, "--json"))[0]
    assert first == (path.name, "created" if CONTENTS[content] is None else "appended")
    assert changes(mw("install", "--host", host, "--json"))[0] == (path.name, "unchanged")
    assert path.read_bytes().count(BEGIN.encode()) == 1
    mw("uninstall", "--host", host)
    assert (path.read_bytes() if path.exists() else None) == CONTENTS[content]
    again = changes(mw("uninstall", "--host", host, "--json"))[0]
    assert again == (path.name, "absent" if CONTENTS[content] is None else "unchanged")


def crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


@pytest.mark.parametrize("host", HOSTS)
def test_a_file_an_editor_turned_to_crlf_is_given_back_without_a_stray_cr(home, mw, host):
    """Bug: after an editor saved the file with CRLF line endings, install again wrote the
    block's lines with LF into it ("updated"), and uninstall left "\r" + a blank line
    behind: the file did not come back as it was."""
    path = instruction(home, host)
    mine = b"# Mine\r\n- use tabs\r\n"
    path.write_bytes(mine)
    mw("install", "--host", host)
    path.write_bytes(crlf(path.read_bytes()))  # the editor's save
    assert changes(mw("install", "--host", host, "--json"))[0] == (path.name, "unchanged")
    assert b"\n" not in path.read_bytes().replace(b"\r\n", b"")
    mw("uninstall", "--host", host)
    assert path.read_bytes() == mine


def test_words_typed_after_the_end_marker_keep_their_own_line(home, mw):
    """Bug: text typed right after <!-- memwiki:end --> was joined onto the line above the
    block by uninstall ("above it trailing words"), changing the user's text."""
    path = instruction(home, "codex")
    path.write_text("# Mine\n")
    mw("install", "--host", "codex")
    text = path.read_text()
    text = text.replace(END, END + " trailing words").replace("\n" + BEGIN, "\nabove it\n" + BEGIN)
    path.write_text(text)
    mw("uninstall", "--host", "codex")
    assert path.read_text() == "# Mine\n\nabove it\n trailing words\n"


@pytest.mark.parametrize("host", HOSTS)
def test_a_read_only_file_is_refused_and_nothing_is_written(home, mw, host):
    """Bug: a file the user made read-only (chmod a-w) was replaced anyway (the atomic write
    renames a new file over it, which needs only the directory to be writable)."""
    path = instruction(home, host)
    path.write_bytes(b"# Mine, read-only on purpose\n")
    path.chmod(0o444)
    before = sorted(p.name for p in path.parent.iterdir())
    for argv in (["install"], ["install", "--dry-run"]):
        done = mw(*argv, "--host", host)
        assert done.returncode == 5
        assert done.stderr == (
            f"memwiki: error: {path}: read-only (mode 444); memwiki will not edit it: "
            "make it writable and run again\n"
        )
    assert path.read_bytes() == b"# Mine, read-only on purpose\n"
    assert sorted(p.name for p in path.parent.iterdir()) == before
    path.chmod(0o644)
    mw("install", "--host", host)
    installed = path.read_bytes()
    path.chmod(0o444)
    done = mw("uninstall", "--host", host)
    assert done.returncode == 5 and "read-only" in done.stderr
    assert path.read_bytes() == installed


def test_a_read_only_settings_json_refuses_the_whole_claude_install(home, mw):
    """A read-only settings.json refuses install before CLAUDE.md is written: no half install
    (a block that promises the hook without it)."""
    claude = home / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text('{"model": "opus"}\n')
    (claude / "settings.json").chmod(0o444)
    done = mw("install", "--host", "claude-code")
    assert done.returncode == 5 and "settings.json: read-only" in done.stderr
    assert sorted(p.name for p in claude.iterdir()) == ["settings.json"]


@pytest.mark.parametrize("host", HOSTS)
def test_symlinked_files_stay_links_and_their_targets_are_edited(home, tmp_path, mw, host):
    """Dotfiles repositories link these files: the link survives install and uninstall, and
    the file in the repository gets the block and gives it back."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "instructions.md"
    target.write_bytes(b"# Mine\n")
    path = instruction(home, host)
    path.symlink_to(os.path.relpath(target, path.parent))
    links = [(path, target)]
    if host == "claude-code":
        settings = dotfiles / "settings.json"
        settings.write_bytes(b'{\n  "model": "opus"\n}\n')
        (home / ".claude" / "settings.json").symlink_to(settings)
        links.append((home / ".claude" / "settings.json", settings))
    mw("install", "--host", host)
    for link, real in links:
        assert link.is_symlink() and link.resolve() == real
    assert BEGIN in target.read_text()
    if host == "claude-code":
        assert "memwiki" in settings.read_text()
    mw("uninstall", "--host", host)
    for link, real in links:
        assert link.is_symlink() and link.resolve() == real
    assert target.read_bytes() == b"# Mine\n"
    if host == "claude-code":
        assert settings.read_bytes() == b'{\n  "model": "opus"\n}\n'


def test_the_hook_runs_from_a_memwiki_whose_path_has_a_space(home, tmp_path, mw, wiki):
    """A virtualenv under a HOME with a space ("/home/Ana Lima/.venvs/…"): the hook command
    install writes into settings.json must run as written, through a shell."""
    venv = Path(sys.executable).parent.parent
    spaced = home / ".venvs" / "mem wiki"
    spaced.parent.mkdir()
    spaced.symlink_to(venv)
    python = spaced / "bin" / Path(sys.executable).name
    (home / ".claude").mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    subprocess.run(
        [str(python), "-m", "memwiki", "install", "--host", "claude-code"],
        env=env, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["UserPromptSubmit"]
    command = group["hooks"][0]["command"]
    assert str(spaced / "bin" / "memwiki") in command
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "anything"}
    done = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(prompt), text=True, capture_output=True,
        env={**env, "MEMWIKI_DIR": str(wiki.root)}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "not found" not in done.stderr, done.stderr


def test_detect_says_why_install_would_stop(home, mw):
    """Bug: detect offered `memwiki install` for files install then refused (a settings.json
    that is not JSON, a read-only file) and said nothing about them."""
    claude = home / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text('{"hooks": ')
    hermes = instruction(home, "hermes")
    hermes.write_text("# Mine\n")
    hermes.chmod(0o444)
    done = mw("hosts", "detect", "--json")
    notes = {h["host"]: h["notes"] for h in json.loads(done.stdout)["hosts"]}
    assert any(
        n.startswith("install would stop: ") and "settings.json: not valid JSON" in n
        for n in notes["claude-code"]
    ), notes
    assert any("SOUL.md: read-only (mode 444)" in n for n in notes["hermes"]), notes
    assert not any("install would stop" in n for n in notes["codex"] + notes["openclaw"])
    assert sorted(p.name for p in claude.iterdir()) == ["settings.json"]  # detect wrote nothing


@pytest.mark.parametrize("record", [True, False], ids=["with-record", "surgical"])
def test_a_settings_json_with_a_bom_gets_the_hook_and_keeps_its_bom(home, mw, record):
    """Bug: a settings.json that starts with a UTF-8 BOM (Windows editors write one; Claude
    Code 2.1.197 reads it and runs its hooks) was refused: "not valid JSON (Unexpected UTF-8
    BOM (decode using utf-8-sig) at line 1)", exit 2, and detect said "hook no"."""
    claude = home / ".claude"
    claude.mkdir()
    settings = claude / "settings.json"
    mine = b'\xef\xbb\xbf{\r\n  "model": "opus"\r\n}\r\n'
    settings.write_bytes(mine)
    done = mw("install", "--host", "claude-code", "--json")
    assert changes(done) == [("CLAUDE.md", "created"), ("settings.json", "added")]
    data = settings.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf{") and data.count(b"\xef\xbb\xbf") == 1
    assert (
        "hook claude-code"
        in json.loads(data.decode("utf-8-sig"))["hooks"]["UserPromptSubmit"][0]["hooks"][0][
            "command"
        ]
    )
    detect = json.loads(mw("hosts", "detect", "--json").stdout)
    assert [h["hook_installed"] for h in detect["hosts"] if h["host"] == "claude-code"] == [True]
    if not record:  # installed by an older memwiki: no bytes kept, the hook is cut out
        (home / ".config" / "memwiki" / "claude-settings-before.json").unlink()
    mw("uninstall", "--host", "claude-code")
    assert settings.read_bytes() == mine


def test_the_hook_goes_into_a_crlf_settings_json_with_crlf_lines(home, mw):
    """Bug: the hook entry was written with LF lines into a settings.json whose lines end in
    CRLF, leaving the file with mixed line endings."""
    claude = home / ".claude"
    claude.mkdir()
    settings = claude / "settings.json"
    mine = b'{\r\n  "model": "opus",\r\n  "hooks": {\r\n    "Stop": []\r\n  }\r\n}\r\n'
    settings.write_bytes(mine)
    mw("install", "--host", "claude-code")
    data = settings.read_bytes()
    assert b"hook claude-code" in data and b"\n" not in data.replace(b"\r\n", b"")
    (home / ".config" / "memwiki" / "claude-settings-before.json").unlink()  # cut it out
    mw("uninstall", "--host", "claude-code")
    assert settings.read_bytes() == mine


def test_a_fifo_instead_of_a_file_is_refused_not_waited_for(home, mw):
    """Bug: an instruction file that is a FIFO (a named pipe) made install and hosts detect
    wait for ever on reading it."""
    path = instruction(home, "codex")
    os.mkfifo(path)
    done = mw("install", "--host", "codex", timeout=30)
    assert done.returncode == 5
    assert done.stderr == (
        f"memwiki: error: {path}: not a regular file; memwiki edits regular files only\n"
    )
    detect = json.loads(mw("hosts", "detect", "--json", timeout=30).stdout)
    [codex] = [h for h in detect["hosts"] if h["host"] == "codex"]
    assert any("not a regular file" in n for n in codex["notes"])


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_a_link_to_a_device_is_never_renamed_over(home, tmp_path, mw):
    """Bug: AGENTS.md linked to a null device (a way to silence a global file) was read as
    empty and then replaced: as root, the atomic rename put a regular file where the device
    was. (The device here is a private copy of /dev/null in the test's own directory.)"""
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    path = instruction(home, "codex")
    path.symlink_to(device)
    done = mw("install", "--host", "codex")
    assert done.returncode == 5 and "not a regular file" in done.stderr
    assert stat.S_ISCHR(device.lstat().st_mode) and path.is_symlink()


def test_a_second_block_is_not_left_behind(home, mw):
    """Bug: a file holding the block twice (two devices' dotfiles merged, a paste) kept the
    second one: uninstall said "removed" and left a block naming memwiki in the file, and
    install again left both."""
    path = instruction(home, "openclaw")
    path.write_text("# Mine\n")
    mw("install", "--host", "openclaw")
    text = path.read_text()
    path.write_text(text + "\nmore of mine\n" + text[text.index(BEGIN) :])
    assert changes(mw("install", "--host", "openclaw", "--json")) == [("AGENTS.md", "updated")]
    assert path.read_text().count(BEGIN) == 1 and "more of mine" in path.read_text()
    mw("uninstall", "--host", "openclaw")
    assert path.read_text() == "# Mine\n\nmore of mine"


def test_codex_an_override_holding_only_the_block_gives_agents_md_back(home, mw):
    """Bug: an older memwiki put the block into an empty AGENTS.override.md, which made Codex
    read it instead of the user's AGENTS.md; install again kept it there. The override holds
    nothing of the user's, so install now moves the block to AGENTS.md and leaves the
    override empty again, as the user had it."""
    codex = home / ".codex"
    codex.mkdir()
    plain, override = codex / "AGENTS.md", codex / "AGENTS.override.md"
    plain.write_text("# Mine\n")
    override.write_text("")
    mw("install", "--host", "codex", "--path", str(override))  # what the older memwiki did
    assert changes(mw("install", "--host", "codex", "--json")) == [
        ("AGENTS.md", "appended"),
        ("AGENTS.override.md", "removed"),
    ]
    assert override.read_bytes() == b"" and plain.read_text().count(BEGIN) == 1
    detect = json.loads(mw("hosts", "detect", "--json").stdout)
    [st] = [h for h in detect["hosts"] if h["host"] == "codex"]
    assert st["instruction_file"] == str(plain) and st["installed"]
    assert st["notes"] == ["no sessions yet: they are mined once codex has been used"]
