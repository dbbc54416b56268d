"""Configuration: option > MEMWIKI_DIR > config file (XDG) > ~/memwiki, and where each came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwiki.config import config_file_path, load
from memwiki.errors import InvalidInput


def write_config(dir_: Path, text: str) -> Path:
    path = dir_ / "memwiki" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_default_is_home_memwiki(isolated_env) -> None:
    cfg = load()
    assert cfg.wiki_path == isolated_env / "memwiki"
    assert cfg.settings["wiki"].source == "default"
    assert cfg.config_file == isolated_env / ".config" / "memwiki" / "config.toml"


def test_precedence_option_env_file_default(isolated_env, monkeypatch, tmp_path) -> None:
    cfg_file = write_config(isolated_env / ".config", f'wiki = "{tmp_path / "from-file"}"\n')
    assert load().wiki_path == tmp_path / "from-file"
    assert load().settings["wiki"].source == f"file:{cfg_file}"

    monkeypatch.setenv("MEMWIKI_DIR", str(tmp_path / "from-env"))
    assert load().wiki_path == tmp_path / "from-env"
    assert load().settings["wiki"].source == "env:MEMWIKI_DIR"

    cfg = load({"wiki": str(tmp_path / "from-option")})
    assert cfg.wiki_path == tmp_path / "from-option"
    assert cfg.settings["wiki"].source == "option"

    # An empty variable counts as unset rather than as "the current directory".
    monkeypatch.setenv("MEMWIKI_DIR", "")
    assert load().settings["wiki"].source.startswith("file:")


def test_xdg_config_home_is_honoured_and_defaults_to_home_config(
    isolated_env, monkeypatch, tmp_path
) -> None:
    xdg = tmp_path / "xdg"
    write_config(xdg, 'wiki = "/from/xdg"\n')
    write_config(isolated_env / ".config", 'wiki = "/from/home-config"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert load().wiki_path == Path("/from/xdg")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert load().wiki_path == Path("/from/home-config")
    assert config_file_path({"HOME": "/h"}) == Path("/h/.config/memwiki/config.toml")


def test_tilde_means_the_configured_home(isolated_env) -> None:
    write_config(isolated_env / ".config", 'wiki = "~/notes/wiki"\n')
    assert load().wiki_path == isolated_env / "notes" / "wiki"
    cfg = load(environ={"HOME": "/elsewhere", "MEMWIKI_DIR": "~/w"})
    assert cfg.wiki_path == Path("/elsewhere/w")


def test_explicit_environ_ignores_the_process_environment(monkeypatch) -> None:
    monkeypatch.setenv("MEMWIKI_DIR", "/process")
    cfg = load(environ={"HOME": "/h"})
    assert cfg.wiki_path == Path("/h/memwiki")


@pytest.mark.parametrize(
    "text", ['wiki = "unterminated\n', "wiki = [1, 2]\n", "[wiki]\npath = 'x'\n", "\xff"]
)
def test_invalid_config_file_is_one_clear_error(isolated_env, text) -> None:
    path = isolated_env / ".config" / "memwiki" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(InvalidInput) as err:
        load()
    assert err.value.message.startswith(f"{path}: invalid config file:")
    assert "\n" not in err.value.message


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("wiki = ~/notes\n", '; text goes in quotes: wiki = "~/notes"'),
        ("# mine\nembed = hash  # fast\n", '; text goes in quotes: embed = "hash"'),
        ("wiki = C:\\notes\n", '; text goes in quotes: wiki = "C:\\\\notes"'),
        ("hook_budget_ms = 1500ms\n", ""),  # a number: quotes would not help
        ("nonsense = bare\n", ""),  # not a setting: the unknown key is the mistake
        ('wiki = "unterminated\n', ""),
    ],
)
def test_an_unquoted_text_setting_gets_the_line_to_write(isolated_env, text, hint) -> None:
    # A new user's first config is `wiki = ~/notes`; tomllib says only "Invalid value".
    path = isolated_env / ".config" / "memwiki" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput) as err:
        load()
    assert err.value.message.endswith(")" + hint)
    assert "\n" not in err.value.message


def test_config_show_text_and_json(cli, isolated_env, monkeypatch, tmp_path) -> None:
    cfg_file = write_config(isolated_env / ".config", 'embed = "none"\n')
    monkeypatch.setenv("MEMWIKI_DIR", str(tmp_path / "envwiki"))
    code, out, err = cli("config", "show")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"# config file: {cfg_file}"
    rows = {line.split()[0]: line.split(None, 1)[1] for line in lines[1:]}
    assert rows["wiki"] == f"{tmp_path / 'envwiki'}  (env:MEMWIKI_DIR)"
    assert rows["embed"] == f"none  (file:{cfg_file})"
    assert rows["hook_budget_ms"] == "1500  (default)"

    code, out, _ = cli("--wiki", str(tmp_path / "opt"), "config", "show", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["config_file"] == str(cfg_file)
    assert data["settings"]["wiki"] == {"value": str(tmp_path / "opt"), "source": "option"}
    assert data["settings"]["embed"] == {"value": "none", "source": f"file:{cfg_file}"}
    assert data["settings"]["git_token"] == {"value": None, "source": "default"}


def test_config_show_prints_the_wiki_a_command_opens(cli, isolated_env, monkeypatch, tmp_path):
    """Bug: a relative --wiki or MEMWIKI_DIR was printed as given ("notes"), not as the
    absolute path every other command resolves it to; "~/" in the file was already expanded."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("-w", "notes", "config", "show")
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == f"wiki             {tmp_path / 'notes'}  (option)"
    monkeypatch.setenv("MEMWIKI_DIR", "./sub/../env-notes")
    code, out, _ = cli("config", "show", "--json")
    wiki = json.loads(out)["settings"]["wiki"]
    assert (code, wiki) == (0, {"value": str(tmp_path / "env-notes"), "source": "env:MEMWIKI_DIR"})
    monkeypatch.delenv("MEMWIKI_DIR")
    write_config(isolated_env / ".config", 'wiki = "~/mine"\n')
    code, out, _ = cli("config", "show", "--json")
    assert json.loads(out)["settings"]["wiki"]["value"] == str(isolated_env / "mine")


def test_config_show_prints_no_secret(cli, isolated_env, monkeypatch):
    """An agent running `config show` put MEMWIKI_GIT_TOKEN, and a projects URL's
    user:token@, into its transcript: both were printed whole."""
    monkeypatch.setenv("MEMWIKI_GIT_TOKEN", "ghp_Secret0123456789")
    monkeypatch.setenv("MEMWIKI_PROJECTS", "https://bob:tok999@github.com/org/repo=shop")
    for args in ((), ("--json",)):
        code, out, err = cli("config", "show", *args)
        assert (code, err) == (0, "")
        assert "ghp_Secret0123456789" not in out and "tok999" not in out
        assert "*** (20 characters)" in out and "https://***@github.com/org/repo=shop" in out


def test_invalid_config_in_the_real_cli(run_memwiki, isolated_env) -> None:
    write_config(isolated_env / ".config", "wiki = \n")
    done = run_memwiki("config", "show")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("memwiki: error: ") and "invalid config file" in done.stderr


@pytest.mark.parametrize(
    "source, key, value, message",
    [
        ("file", "embed", '"onxx"', "embed must be one of onnx, ensemble, hash, none"),
        ("env", "embed", "openai", "embed must be one of"),
        ("option", "embed", "foo", "embed must be one of"),
        ("file", "embeed", '"hash"', "unknown setting 'embeed'"),
        ("file", "wiki", "5", "'wiki' must be a string"),
        ("file", "hook_budget_ms", '"abc"', "hook_budget_ms must be a whole number"),
        ("env", "hook_budget_ms", "-1", "hook_budget_ms must be a whole number of at least 0"),
        ("env", "git_timeout_s", "-5", "git_timeout_s must be a number of at least"),
        ("file", "git_timeout_s", "[1]", "'git_timeout_s' must be a number"),
    ],
)
def test_a_value_memwiki_would_ignore_is_refused_where_it_is_read(
    isolated_env, source, key, value, message
) -> None:
    """Bug: `embed = "onxx"` meant BM25-only retrieval without a word; an unknown key, a
    number for the wiki path, a budget of "abc" or a negative git timeout were taken
    silently (docs/reference.md: an invalid configuration stops every command, exit 2)."""
    from memwiki.config import SETTINGS

    options: dict = {}
    environ = {"HOME": str(isolated_env)}
    if source == "file":
        path = config_file_path(environ)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{key} = {value}\n")
    elif source == "env":
        environ[SETTINGS[key][0]] = value
    else:
        options[key] = value
    with pytest.raises(InvalidInput, match=message):
        load(options, environ)


def test_valid_values_of_every_kind_load(isolated_env) -> None:
    environ = {"HOME": str(isolated_env), "MEMWIKI_EMBED": "ONNX", "MEMWIKI_GIT_TIMEOUT_S": "2.5"}
    path = config_file_path(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('hook_budget_ms = 900\nembed = "hash"\nwiki = "~/w"\n')
    config = load({}, environ)
    assert config.embed == "onnx" and config.hook_budget_s == 0.9
    assert config.get("git_timeout_s") == "2.5" and config.wiki_path == isolated_env / "w"
