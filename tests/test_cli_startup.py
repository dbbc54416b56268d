"""What a cold `memwiki` process imports: every command pays for it before it does anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Run in one fresh interpreter: each main() is a command as an agent runs it, and what
# sys.modules holds afterwards is what those commands imported.
LOADED = """
import json, sys
from memwiki.cli import main
codes = [main(argv) for argv in json.loads(sys.argv[1])]
print(json.dumps({"codes": codes, "modules": sorted(sys.modules)}))
"""


def loaded_after(*commands: list[str]) -> set[str]:
    """The modules a fresh process holds after running these commands (each must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, json.dumps(commands)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["codes"] == [0] * len(commands), done.stderr
    return set(report["modules"])


def test_commands_that_never_retrieve_import_no_index_code(wiki):
    """Bug: memwiki/cli/__init__.py imported index/progressive.py (and threading) for the
    Ctrl-C note and the process start time, so every command loaded index code."""
    w = ["-w", str(wiki.root)]
    modules = loaded_after(["config", "show", *w], ["hosts", "detect"], ["list", "--help"])
    assert not {m for m in modules if m.startswith("memwiki.index")}


def test_commands_import_no_pydantic_and_no_rich(wiki, tmp_path):
    """Bug: Typer (0.2x) converted every option value through pydantic, ~40 ms of each
    command; cli/coercion.py converts the plain ones. rich is never needed either."""
    payload = tmp_path / "put.json"
    payload.write_text(json.dumps({"recall_files": [{"track": "memory", "name": "p",
                                   "description": "d", "content": "body\n"}]}))  # fmt: skip
    w = ["-w", str(wiki.root)]
    modules = loaded_after(
        ["put", str(payload), *w],
        ["add", "memory", "a", "-d", "one line", "-t", "x", "-t", "y", *w],
        ["list", "-n", "5", *w],
        ["lint", *w],
        ["log", "-n", "3", *w],
        ["show", "memory/a", *w],
        ["hosts", "detect"],
        ["config", "show", *w],
        ["list", "--help"],
    )
    assert not {m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core", "rich")}
    assert "typer" in modules  # these are Typer commands: the check above means something


def _typer_parameters():
    """(context, parameter) for every Typer parameter of every command, --help included."""
    import typer
    from typer.main import get_command

    from memwiki.cli.app import app

    def walk(command, parent):
        ctx = typer.Context(command, parent=parent, info_name=command.name)
        for param in command.get_params(ctx):
            if hasattr(param, "type_descriptor"):
                yield ctx, param
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub, ctx)

    return list(walk(get_command(app), None))


def _samples(tmp_path) -> list:
    unreadable = tmp_path / "secret"
    unreadable.write_text("x")
    unreadable.chmod(0)
    texts = ["x", "", "café", "caf\udce9", "a\0b", " 5 ", "-"]
    numbers = [5, 0, "5", "0", "-3", "007", "-0", "+4", "1_000", "5.0", "1e3", "١٢", "x"]
    numbers += ["9" * 18, "9" * 19, "-" + "9" * 30, True, 2.0]
    paths = [str(tmp_path), str(unreadable), str(tmp_path / "absent"), tmp_path, "notes"]
    lists = [(), ("a", "b"), ["a"], ("caf\udce9",), "a", (1,)]
    return [None, False, True, b"bytes", *texts, *numbers, *paths, *lists]


def _outcome(convert, value, param, ctx):
    from typer import TyperException

    try:
        out = convert.coerce(value, param=param, ctx=ctx)
    except TyperException as exc:
        return ("error", type(exc).__name__, exc.format_message())
    except Exception as exc:  # Typer's own converter may raise anything: so must ours
        return ("raised", type(exc).__name__, str(exc))
    return ("value", type(out).__name__, out)


def test_the_plain_converter_answers_as_typer_does(tmp_path):
    """Every value that reaches cli/coercion.Plain gets Typer's own result or error, for
    every parameter of every command (a value it is unsure of is handed to Typer)."""
    from typer._coercion import build_runtime_param

    from memwiki.cli.coercion import Plain

    pairs = _typer_parameters()
    assert len(pairs) > 100
    differ, answered = [], set()
    for value in _samples(tmp_path):
        for ctx, param in pairs:
            typer_says = _outcome(build_runtime_param(param.type_descriptor), value, param, ctx)
            param._runtime_param = None  # Plain hands a value to Typer by filling this slot
            ours = _outcome(Plain(param.type_descriptor), value, param, ctx)
            if ours != typer_says:
                differ.append(
                    (param.name, param.type_descriptor.annotation, value, ours, typer_says)
                )
            elif param._runtime_param is None and value is not None:
                answered.add((param.type_descriptor.annotation, repr(value)))
    assert not differ, differ[:5]
    # And it does answer the plain values itself, with no pydantic.
    assert {(str, "'x'"), (int, "'-3'"), (int, "5"), (Path, repr(str(tmp_path)))} <= answered
    assert (list[str], "('a', 'b')") in answered


def _argvs() -> list[list[str]]:
    """Every command's and subcommand's --help and a wrong option; a group's usage errors."""
    from memwiki.cli.app import COMMANDS, GROUPS

    out = []
    for name, _ in COMMANDS:
        out += [[name, "--help"], [name, "--no-such-option"], ["--json", name, "-x"]]
    for group, _, commands in GROUPS:
        out += [[group], [group, "--help"], [group, "no-such-command"]]
        for name, _ in commands:
            out += [[group, name, "--help"], [group, name, "--no-such-option"]]
    return out


def test_a_command_run_alone_answers_as_the_whole_application(capsys, monkeypatch, tmp_path):
    """app.run builds only the command named (Typer converts the whole application into
    Click commands on every run, ~20 ms): its help and usage errors stay byte for byte."""
    from memwiki.cli import app as appmod

    monkeypatch.chdir(tmp_path)  # a command that does run finds no wiki here
    monkeypatch.setenv("MEMWIKI_DIR", str(tmp_path / "none"))
    differ = []
    for argv in _argvs():
        alone = appmod.run(argv), *capsys.readouterr()
        with monkeypatch.context() as m:
            m.setattr(appmod, "NAMES", frozenset())  # no command is known: the whole app
            whole = appmod.run(argv), *capsys.readouterr()
        if alone != whole:
            differ.append((argv, alone, whole))
    assert not differ, differ[:3]
