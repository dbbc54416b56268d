"""The wiki commands of the `memwiki` CLI, and issue 2's acceptance items 2-5 end to end.

The acceptance tests run the real console script in a subprocess and check the result
with the plain `git` CLI; the per-command tests run in-process for speed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import typer.main

from memwiki.recallfile import parse

SHA12 = r"[0-9a-f]{12}"


def payload(*items: dict, message: str | None = None) -> str:
    data: dict = {"recall_files": list(items)}
    if message:
        data["message"] = message
    return json.dumps(data)


def rf_item(name: str, track: str = "memory", **more) -> dict:
    return {"track": track, "name": name, "description": f"About {name}", **more}


def commit_count(git, root: Path) -> int:
    return len(git(root, "log", "--format=%H").split())


@pytest.fixture
def w(tmp_path, cli) -> Path:
    """A wiki made with `memwiki init`; its path."""
    root = tmp_path / "w"
    assert cli("init", root)[0] == 0
    return root


# ------------------------------------------------------------------ help


def test_help_lists_every_verb_with_a_one_line_description(run_memwiki) -> None:
    from memwiki.cli.app import app

    done = run_memwiki("--help")
    assert done.returncode == 0
    listed = {}
    in_commands = False
    for line in done.stdout.splitlines():
        if line.startswith("Commands:"):
            in_commands = True
        elif in_commands and line.strip():
            verb, _, text = line.strip().partition(" ")
            listed[verb] = text.strip()
    registered = set(typer.main.get_command(app).commands)
    assert registered >= {"init", "config", "put", "add", "list", "show", "rm", "commit", "log"}
    assert set(listed) == registered | {"lint"}
    assert all(listed.values()), f"verbs without a description: {listed}"


def test_every_subcommand_has_help_and_json(cli) -> None:
    for verb in ("init", "put", "add", "list", "show", "rm", "commit", "log", "lint"):
        code, out, _ = cli(verb, "--help")
        assert code == 0 and "--json" in out, verb
    code, out, _ = cli("config", "show", "--help")
    assert code == 0 and "--json" in out


def test_version(cli) -> None:
    from memwiki import __version__

    assert cli("--version") == (0, f"memwiki {__version__}\n", "")


# ----------------------------------------------------- acceptance item 2


def test_acceptance_init_then_put_two_files(tmp_path, run_memwiki, git) -> None:
    root = tmp_path / "w"
    done = run_memwiki("init", root)
    assert done.returncode == 0
    assert done.stdout.startswith(f"Initialised a memwiki wiki in {root}\nIt is now the configured")
    before = commit_count(git, root)
    (tmp_path / "payload.json").write_text(
        payload(
            rf_item("billing-service", content="# Billing\n\nSee [[release]].\n", tags=["b"]),
            rf_item("release", "skill", content="# Release\n1. tag\n2. push"),
        )
    )
    done = run_memwiki("--wiki", root, "put", tmp_path / "payload.json")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        rf"created  memory/billing-service.md\ncreated  skill/release.md\ncommit {SHA12}\n",
        done.stdout,
    )
    for track, name in (("memory", "billing-service"), ("skill", "release")):
        parse((root / track / f"{name}.md").read_bytes(), track, name)
    assert run_memwiki("--wiki", root, "lint").returncode == 0
    assert commit_count(git, root) == before + 1
    assert "memwiki: created memory/billing-service, skill/release" in git(root, "log")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert (root / ".memwiki").is_dir()  # the write lock lives there
    assert git(root, "check-ignore", ".memwiki/wiki.lock").strip() == ".memwiki/wiki.lock"


def test_put_from_stdin_and_json_output(w, cli, git) -> None:
    code, out, err = cli("--wiki", w, "put", "-", "--json", stdin=payload(rf_item("a")))
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data == {
        "commit": git(w, "rev-parse", "HEAD").strip(),
        "created": ["memory/a.md"],
        "updated": [],
        "deleted": [],
        "not_committed": [],
    }
    code, out, _ = cli(
        "--wiki", w, "put", "-", stdin=payload(rf_item("a", description="new"), message="m\n")
    )
    assert code == 0 and out.startswith("updated  memory/a.md\ncommit ")
    assert git(w, "log", "-1", "--format=%s") == "m\n"
    code, out, _ = cli("--wiki", w, "put", "-", stdin=payload(rf_item("a", description="new")))
    assert (code, out) == (0, "Nothing to commit\n")


def test_a_new_track_is_named_on_stderr_once(w, cli) -> None:
    # Any top-level folder is a track, so a misspelt one was made without a word.
    code, out, err = cli("--wiki", w, "add", "memroy", "billing", "-d", "Billing")
    assert code == 0 and out.startswith("created  memroy/billing.md\n")
    assert err == "memwiki: note: new track memroy/ (the wiki had memory, skill)\n"
    # the folder exists now: a second file in it, or a file in memory/, says nothing
    assert cli("--wiki", w, "add", "memroy", "billing-2", "-d", "More")[2] == ""
    assert cli("--wiki", w, "add", "memory", "billing", "-d", "Billing")[2] == ""
    items = [rf_item("x", track="projects"), rf_item("y", track="people")]
    code, out, err = cli("--wiki", w, "put", "-", "--json", stdin=payload(*items))
    assert code == 0 and json.loads(out)["created"] == ["people/y.md", "projects/x.md"]
    assert err.splitlines() == [
        "memwiki: note: new track people/ (the wiki had memory, memroy, projects, skill)",
        "memwiki: note: new track projects/ (the wiki had memory, memroy, people, skill)",
    ]
    # a refused payload makes no folder, so it names none
    code, _, err = cli("--wiki", w, "put", "-", stdin=payload(rf_item("Bad Name", track="p2")))
    assert code == 2 and "new track" not in err and not (w / "p2").exists()


# ----------------------------------------------------- acceptance item 3


HAND_WRITTEN = (
    "---\n"
    "name: billing\n"
    "description: Billing facts\n"
    "aliases:\n"
    "  - Payments   # what finance calls it\n"
    "cssclasses: [wide,dark]\n"
    "# a person's note about the next key\n"
    "owner:   finance-team\n"
    "---\n"
    "# Billing\n"
    "\n"
    "| col | other   |\n"
    "|-----|---------|\n"
    "| a   |  b      |\n"
    "\n"
    "*  odd   list   spacing\n"
    "trailing spaces   \n"
)


def test_acceptance_hand_edit_commit_then_add_keeps_keys_and_body(
    tmp_path, run_memwiki, git
) -> None:
    root = tmp_path / "w"
    assert run_memwiki("init", root).returncode == 0
    path = root / "memory" / "billing.md"
    # Save the way an editor does: write a new file beside it, then rename it over.
    tmp = root / "memory" / ".billing.md.swp"
    tmp.write_text(HAND_WRITTEN)
    os.replace(tmp, path)
    done = run_memwiki("--wiki", root, "commit")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("created  memory/billing.md\ncommit ")
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "show", "HEAD:memory/billing.md") == HAND_WRITTEN

    # A second hand edit, in place this time, then an update of the description.
    path.write_text(HAND_WRITTEN.replace("owner:   finance-team", "owner:   billing-team"))
    done = run_memwiki("--wiki", root, "commit", "-m", "hand edit\n")
    assert done.stdout.startswith("updated  memory/billing.md\n")
    done = run_memwiki("--wiki", root, "add", "memory", "billing", "--description", "Billing: v2")
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    expected = HAND_WRITTEN.replace("owner:   finance-team", "owner:   billing-team").replace(
        "description: Billing facts\n", "description: 'Billing: v2'\n"
    )
    # Only the description changed, plus the two stamps memwiki adds at the end.
    without_stamps = "".join(
        line
        for line in text.splitlines(keepends=True)
        if not line.startswith(("created: ", "updated: "))
    )
    assert without_stamps == expected
    for key in ("created", "updated"):
        assert re.search(rf"^{key}: \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", text, re.M)
    assert text.split("---\n", 2)[2] == HAND_WRITTEN.split("---\n", 2)[2]
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "-1", "--format=%s") == "memwiki: save memory/billing\n"


# ----------------------------------------------------- acceptance item 4


def list_page(run_memwiki, root: Path, cursor: str | None) -> dict:
    args = ["--wiki", root, "list", "--json", "--limit", "2"]
    done = run_memwiki(*args, *(["--cursor", cursor] if cursor else []))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_acceptance_list_json_pages_through_seven_files(tmp_path, run_memwiki) -> None:
    root = tmp_path / "w"
    run_memwiki("init", root)
    names = ["b", "d", "f", "h", "j", "l", "n"]
    run_memwiki("--wiki", root, "put", "-", input=payload(*[rf_item(n) for n in names]))
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = list_page(run_memwiki, root, cursor)
        assert len(page["items"]) <= 2
        seen += [i["name"] for i in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == names


def test_acceptance_list_paging_while_files_are_added(tmp_path, run_memwiki) -> None:
    root = tmp_path / "w"
    run_memwiki("init", root)
    names = ["b", "d", "f", "h", "j", "l", "n"]
    run_memwiki("--wiki", root, "put", "-", input=payload(*[rf_item(n) for n in names]))
    # Before page 2: one file behind the cursor, one ahead; before page 3: one more ahead.
    inserts = {1: ["a", "e"], 2: ["m"]}
    seen: list[str] = []
    cursor = None
    for page_no in range(1, 10):
        page = list_page(run_memwiki, root, cursor)
        seen += [i["name"] for i in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
        for n in inserts.get(page_no, []):
            done = run_memwiki("--wiki", root, "add", "memory", n, "-d", f"late {n}")
            assert done.returncode == 0, done.stderr
    assert seen == sorted(set(seen)), "no repeats, in order"
    assert set(seen) == set(names) | {"e", "m"}  # 'a' was added behind the cursor
    assert list_page(run_memwiki, root, None)["items"][0]["name"] == "a"


# ----------------------------------------------------- acceptance item 5


def test_acceptance_bad_payload_writes_nothing(tmp_path, run_memwiki, git) -> None:
    root = tmp_path / "w"
    run_memwiki("init", root)
    head = git(root, "rev-parse", "HEAD")
    bad = payload(rf_item("good-one"), rf_item("../x"))
    done = run_memwiki("--wiki", root, "put", "-", input=bad)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "memwiki: error: recall_files[1]: name '../x' is not a slug "
        "(lowercase letters, digits and single hyphens)"
    ]
    assert "Traceback" not in done.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (root / "memory" / "good-one.md").exists()


@pytest.mark.parametrize("name", ["../x", "/etc/x"])
def test_acceptance_escaping_names_are_refused_everywhere(tmp_path, run_memwiki, git, name):
    root = tmp_path / "w"
    run_memwiki("init", root)
    for argv in (
        ["put", "-"],
        ["add", "memory", name, "-d", "x"],
        ["show", f"memory/{name}"],
        ["rm", f"memory/{name}"],
        ["log", f"memory/{name}"],
    ):
        done = run_memwiki(
            "--wiki", root, *argv, input=payload(rf_item(name)) if argv[0] == "put" else None
        )
        assert done.returncode == 2, argv
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("memwiki: error: ")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not Path("/etc/x.md").exists() and not (tmp_path / "x.md").exists()


def test_acceptance_lint_reports_broken_files_and_list_lists_the_rest(tmp_path, run_memwiki):
    root = tmp_path / "w"
    run_memwiki("init", root)
    run_memwiki("--wiki", root, "put", "-", input=payload(rf_item("fine"), rf_item("also-fine")))
    (root / "memory" / "yaml.md").write_text("---\nname: yaml\ndescription: 'open\n---\n")
    (root / "skill" / "bytes.md").write_bytes(b"---\nname: bytes\ndescription: d\n---\n\x81\n")
    done = run_memwiki("--wiki", root, "lint")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "memory/yaml.md:3: invalid YAML in frontmatter: found unexpected end of stream",
        "skill/bytes.md:5: not valid UTF-8 text",
    ]
    done = run_memwiki("--wiki", root, "list", "--json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert [i["name"] for i in data["items"]] == ["also-fine", "fine"]
    assert [(p["path"], p["line"]) for p in data["skipped"]] == [
        ("memory/yaml.md", 3),
        ("skill/bytes.md", 5),
    ]
    assert done.stderr.splitlines() == [
        "memwiki: skipped memory/yaml.md:3: invalid YAML in frontmatter: "
        "found unexpected end of stream",
        "memwiki: skipped skill/bytes.md:5: not valid UTF-8 text",
    ]


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["show", "memory/missing"], 3, "no RecallFile memory/missing"),
        (["rm", "memory/missing"], 3, "no RecallFile memory/missing"),
        (["show", "no-slash"], 2, "expected TRACK/NAME"),
        (["list", "--cursor", "garbage"], 2, "invalid cursor"),
        (["list", "--limit", "0"], 2, "limit must be at least 1"),
        (["put", "nonexistent.json"], 2, "cannot read"),
        (["put", "-"], 2, "invalid JSON at line 1"),
        (["add", "memory", "x", "-d", "two\nlines"], 2, "must be one line"),
        (["add", "memory", "x", "-d", "x", "--body-file", "/nonexistent"], 2, "no such file"),
    ],
)
def test_errors_are_one_line_with_their_exit_code(w, cli, git, argv, code, needle) -> None:
    head = git(w, "rev-parse", "HEAD")
    got, out, err = cli("--wiki", w, *argv, stdin="{not json")
    assert got == code
    assert out == ""
    assert len(err.splitlines()) == 1 and needle in err and err.startswith("memwiki: error: ")
    assert git(w, "rev-parse", "HEAD") == head


def test_missing_wiki_is_not_found(tmp_path, run_memwiki) -> None:
    done = run_memwiki("--wiki", tmp_path / "none", "list")
    assert done.returncode == 3
    assert done.stderr == (
        f"memwiki: error: no wiki at {tmp_path / 'none'}: run `memwiki init "
        f"{tmp_path / 'none'}` or pass --wiki PATH\n"
    )


def test_damaged_repository_is_a_storage_error(w, run_memwiki) -> None:
    (w / ".git" / "refs" / "heads" / "main").write_text("0" * 39 + "1\n")
    done = run_memwiki("--wiki", w, "log")
    assert done.returncode == 5
    assert len(done.stderr.splitlines()) == 1 and "cannot read HEAD" in done.stderr


def test_usage_errors_exit_2(cli) -> None:
    code, _, err = cli("show")
    assert code == 2 and "Missing argument" in err
    code, _, err = cli("frobnicate")
    assert code == 2 and "No such command" in err


def test_debug_shows_a_traceback(tmp_path, run_memwiki) -> None:
    plain = run_memwiki("--wiki", tmp_path / "none", "list")
    assert "Traceback" not in plain.stderr
    debug = run_memwiki("--debug", "--wiki", tmp_path / "none", "list")
    assert debug.returncode != 0
    assert "Traceback (most recent call last)" in debug.stderr
    assert "memwiki.errors.NotFound: no wiki at" in debug.stderr


# ------------------------------------------------------------ init / show


def test_init_text_json_and_again(tmp_path, cli, monkeypatch) -> None:
    root = tmp_path / "w"
    code, out, err = cli("init", root, "--json")
    assert (code, err) == (0, "")
    config_file = str(Path(os.environ["XDG_CONFIG_HOME"]) / "memwiki" / "config.toml")
    assert json.loads(out) == {"path": str(root), "created": True, "config_file": config_file}
    assert cli("init", root) == (0, f"{root} is already a memwiki wiki; nothing changed\n", "")
    assert json.loads(cli("init", root, "--json")[1]) == {"path": str(root), "created": False}
    # Without PATH: --wiki, then MEMWIKI_DIR.
    assert cli("--wiki", tmp_path / "w2", "init")[0] == 0 and (tmp_path / "w2" / ".git").is_dir()
    monkeypatch.setenv("MEMWIKI_DIR", str(tmp_path / "w3"))
    assert cli("init")[0] == 0 and (tmp_path / "w3" / ".git").is_dir()


def test_init_inside_a_repository_exits_4_unless_forced(w, cli) -> None:
    code, out, err = cli("init", w / "memory" / "inner")
    assert code == 4 and out == ""
    assert "is inside the git repository" in err and "--force" in err
    assert cli("init", w / "memory" / "inner", "--force")[0] == 0


def test_show_text_and_json(w, cli) -> None:
    cli("--wiki", w, "put", "-", stdin=payload(rf_item("a", content="Body\n", tags=["t"])))
    code, out, _ = cli("--wiki", w, "show", "memory/a")
    assert code == 0 and out == (w / "memory" / "a.md").read_text()
    assert cli("--wiki", w, "show", "memory/a.md")[1] == out
    data = json.loads(cli("--wiki", w, "show", "memory/a", "--json")[1])
    assert set(data) == {
        "track",
        "name",
        "path",
        "description",
        "tags",
        "created",
        "updated",
        "sources",
        "extra",
        "body",
    }
    assert (data["path"], data["tags"], data["body"], data["sources"]) == (
        "memory/a.md",
        ["t"],
        "Body\n",
        [],
    )
    (w / "memory" / "b.md").write_text("---\nname: b\ndescription: d\nowner: me\n---\n")
    assert json.loads(cli("--wiki", w, "show", "memory/b", "--json")[1])["extra"] == {"owner": "me"}


# ------------------------------------------------------------------- add


def test_add_create_with_body_file_stdin_and_tags(w, cli, tmp_path, git) -> None:
    body = tmp_path / "body.md"
    body.write_text("# Deploy\n\n1. build\n")
    code, out, err = cli(
        "--wiki", w, "add", "skill", "deploy", "-d", "Deploy it", "--body-file", body,
        "--tag", "ops", "-t", "ci",
    )  # fmt: skip
    assert (code, err) == (0, "") and re.fullmatch(
        rf"created  skill/deploy.md\ncommit {SHA12}\n", out
    )
    rf = parse((w / "skill" / "deploy.md").read_bytes(), "skill", "deploy")
    assert (rf.body, rf.tags, rf.description) == (
        "# Deploy\n\n1. build\n",
        ["ops", "ci"],
        "Deploy it",
    )

    code, out, _ = cli("--wiki", w, "add", "memory", "piped", "-d", "From a pipe", "--json",
                       stdin="piped body\n")  # fmt: skip
    assert json.loads(out)["created"] == ["memory/piped.md"]
    assert parse((w / "memory" / "piped.md").read_bytes(), "memory", "piped").body == "piped body\n"

    cli("--wiki", w, "add", "memory", "no-body", "-d", "Nothing piped")
    assert (w / "memory" / "no-body.md").read_text().endswith("---\n# No body\n")
    assert git(w, "status", "--porcelain") == ""


def test_add_and_put_commit_only_their_files_and_staged_work_stays_staged(
    w, run_memwiki, git
) -> None:
    # A person is half-way through a change and has `git add`ed part of it.
    (w / "memory" / "mine.md").write_text("---\nname: mine\ndescription: Mine\n---\nDraft.\n")
    (w / "README.md").write_text("# My wiki\n")
    git(w, "add", "memory/mine.md", "README.md")
    done = run_memwiki("--wiki", w, "add", "memory", "tea", "-d", "Tea", input="Green.\n")
    assert done.returncode == 0, done.stderr
    done = run_memwiki("--wiki", w, "put", "-", input=payload(rf_item("kettle")))
    assert done.returncode == 0, done.stderr
    assert git(w, "show", "--name-only", "--format=", "HEAD~1") == "memory/tea.md\n"
    assert git(w, "show", "--name-only", "--format=", "HEAD") == "memory/kettle.md\n"
    assert git(w, "status", "--porcelain") == "M  README.md\nA  memory/mine.md\n"


def test_add_update_keeps_body_and_tags_unless_given(w, cli) -> None:
    cli("--wiki", w, "add", "memory", "a", "-d", "First", "-t", "x", stdin="the body\n")
    code, out, _ = cli("--wiki", w, "add", "memory", "a", "-d", "Second")
    assert code == 0 and out.startswith("updated  memory/a.md\n")
    rf = parse((w / "memory" / "a.md").read_bytes(), "memory", "a")
    assert (rf.description, rf.body, rf.tags) == ("Second", "the body\n", ["x"])
    cli("--wiki", w, "add", "memory", "a", "-d", "Second", "-t", "y", stdin="new body\n")
    rf = parse((w / "memory" / "a.md").read_bytes(), "memory", "a")
    assert (rf.body, rf.tags) == ("new body\n", ["y"])
    assert cli("--wiki", w, "add", "memory", "a", "-d", "Second")[1] == "Nothing to commit\n"


# ------------------------------------------------------------------ list


def test_list_table_and_json(w, cli) -> None:
    cli("--wiki", w, "put", "-", stdin=payload(rf_item("a"), rf_item("b", "skill", tags=["t"])))
    code, out, _ = cli("--wiki", w, "list")
    lines = [line.split() for line in out.splitlines()]
    assert code == 0
    assert all(line == line.rstrip() for line in out.splitlines())
    assert lines[0] == ["track", "name", "description", "updated"]
    assert [row[:4] for row in lines[1:]] == [
        ["memory", "a", "About", "a"],
        ["skill", "b", "About", "b"],
    ]
    data = json.loads(cli("--wiki", w, "list", "--json", "--track", "skill")[1])
    assert set(data) == {"items", "next_cursor", "skipped"}
    [entry] = data["items"]
    assert set(entry) == {"track", "name", "path", "description", "tags", "updated"}
    assert (entry["path"], entry["tags"], data["next_cursor"]) == ("skill/b.md", ["t"], None)


def test_list_shows_descriptions_as_text_never_as_rich_markup(w, cli) -> None:
    """Bug: a description holding `[/]` made `memwiki list` fail (exit 70, rich's
    MarkupError), `[bold]` was swallowed as a style, and an escape sequence reached the
    terminal raw."""
    from memwiki.recallfile import RecallFile, render

    text = {"a": "use [/] to close", "b": "a [bold]word[/bold] here", "c": "red \x1b[31m here"}
    for name, description in text.items():
        (w / "memory" / f"{name}.md").write_text(render(RecallFile("memory", name, description)))
    code, out, err = cli("--wiki", w, "list")
    assert code == 0, err
    assert "use [/] to close" in out
    assert "a [bold]word[/bold] here" in out
    assert "\x1b" not in out and "red \\x1b[31m here" in out


def test_list_text_with_limit_prints_the_next_cursor(w, cli) -> None:
    cli("--wiki", w, "put", "-", stdin=payload(*[rf_item(n) for n in "abc"]))
    code, out, _ = cli("--wiki", w, "list", "--limit", "2")
    cursor = out.splitlines()[-1].removeprefix("(more: --cursor ").removesuffix(")")
    assert code == 0 and len(out.splitlines()) == 4
    code, out, _ = cli("--wiki", w, "list", "--limit", "2", "--cursor", cursor)
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["c"]


def test_list_without_limit_follows_every_page(w, cli) -> None:
    from memwiki.recallfile import RecallFile, render

    for i in range(520):  # more than one internal page of 500
        name = f"n{i:04d}"
        (w / "memory" / f"{name}.md").write_text(render(RecallFile("memory", name, "d")))
    data = json.loads(cli("--wiki", w, "list", "--json")[1])
    assert len(data["items"]) == 520 and data["next_cursor"] is None


# ----------------------------------------------------------- rm / commit / log


def test_rm_text_and_json(w, cli, git) -> None:
    cli("--wiki", w, "put", "-", stdin=payload(rf_item("a"), rf_item("b")))
    code, out, _ = cli("--wiki", w, "rm", "memory/a")
    assert code == 0 and re.fullmatch(rf"deleted  memory/a.md\ncommit {SHA12}\n", out)
    data = json.loads(cli("--wiki", w, "rm", "memory/b.md", "--json")[1])
    assert data["deleted"] == ["memory/b.md"]
    assert data["commit"] == git(w, "rev-parse", "HEAD").strip()
    assert git(w, "ls-files", "memory").split() == ["memory/.gitkeep"]


def test_commit_text_json_and_nothing(w, cli, git) -> None:
    assert cli("--wiki", w, "commit") == (0, "Nothing to commit\n", "")
    assert json.loads(cli("--wiki", w, "commit", "--json")[1]) == {
        "commit": None,
        "created": [],
        "updated": [],
        "deleted": [],
        "not_committed": [],
    }
    (w / "memory" / "x.md").write_text("---\nname: x\ndescription: d\n---\n")
    data = json.loads(cli("--wiki", w, "commit", "-m", "mine", "--json")[1])
    assert data["created"] == ["memory/x.md"]
    assert git(w, "log", "-1", "--format=%s") == "mine\n"


def test_log_text_json_and_one_file(w, cli, git) -> None:
    cli("--wiki", w, "put", "-", stdin=payload(rf_item("a")))
    cli("--wiki", w, "put", "-", stdin=payload(rf_item("b")))
    code, out, _ = cli("--wiki", w, "log")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert re.fullmatch(
        rf"{SHA12}  \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ  \S.*  memwiki: created memory/b", lines[0]
    )
    assert lines[-1].endswith("memwiki: initialise the wiki")
    data = json.loads(cli("--wiki", w, "log", "memory/a", "--json")[1])
    assert [e["commit"] for e in data] == git(w, "log", "--format=%H", "--", "memory/a.md").split()
    assert set(data[0]) == {"commit", "author", "time", "message", "changes"}
    assert data[0]["changes"] == [{"status": "created", "path": "memory/a.md"}]
    assert len(json.loads(cli("--wiki", w, "log", "-n", "1", "--json")[1])) == 1


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"message": 5}, "message must be a string"),
        ({"files": [rf_item("b", content="x\ud800y")]}, "not UTF-8 text"),
        ({"files": [rf_item("b", description="x\ud800y")]}, "not UTF-8 text"),
        ({"files": [rf_item("b", content="a\u0000b")]}, "binary file"),
        ({"files": [rf_item("b", created="yesterday")]}, "must be a timestamp"),
        (
            {"files": [rf_item("b", created="2026-01-01T00:00:00Z\nfoo: bar")]},
            "must be a timestamp",
        ),
    ],
)
def test_put_refuses_what_it_could_not_read_back_and_writes_nothing(w, cli, git, bad, message):
    """Bugs: a non-string message (exit 70) or a lone surrogate in content left the valid
    files of the same payload written; a surrogate in a description was committed and broke
    `list` and `retrieve` for good; a NUL byte or `created: yesterday` was committed."""
    before = git(w, "rev-parse", "HEAD")
    data = {"recall_files": [rf_item("a"), *bad.get("files", [])]}
    if "message" in bad:
        data["message"] = bad["message"]
    code, _, err = cli("--wiki", w, "put", "-", stdin=json.dumps(data))
    assert code == 2 and message in err, err
    assert git(w, "rev-parse", "HEAD") == before
    assert git(w, "status", "--porcelain", "--untracked-files=all") == ""
    assert cli("--wiki", w, "list")[0] == 0


def test_a_new_note_named_as_a_windows_device_is_refused_an_existing_one_kept(
    tmp_path, run_memwiki, git
) -> None:
    """memory/con.md cannot be checked out by Git for Windows: one such note breaks every
    Windows device the wiki syncs to. New ones are refused, a note already there stays."""
    root = tmp_path / "w"
    run_memwiki("init", root)
    head = git(root, "rev-parse", "HEAD")
    done = run_memwiki("--wiki", root, "put", "-", input=payload(rf_item("ok"), rf_item("con")))
    assert done.returncode == 2 and "device name Windows reserves" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    for track, name in (("memory", "lpt1"), ("skill", "nul")):
        done = run_memwiki("--wiki", root, "add", track, name, "-d", "x")
        assert done.returncode == 2 and f"name {name!r} is a device name" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    # A note made by hand on Linux before this check keeps working: update, show, retrieve.
    (root / "memory" / "aux.md").write_text("---\nname: aux\ndescription: the aux bus\n---\nx\n")
    assert run_memwiki("--wiki", root, "commit").returncode == 0
    assert (
        run_memwiki("--wiki", root, "add", "memory", "aux", "-d", "the aux bus, again").returncode
        == 0
    )
    assert "aux bus, again" in run_memwiki("--wiki", root, "show", "memory/aux").stdout
