"""Project identity, `project:` frontmatter, and project-scoped retrieval (issue 15)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from memwiki import project as pj
from memwiki import project_file
from memwiki.index.fusion import OTHER_PROJECT_FACTOR, scope_to_project


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def repo(path: Path, origin: str | None = None, commit: bool = False) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    if origin:
        git(path, "remote", "add", "origin", origin)
    if commit:
        (path / "README.md").write_text("# x\n")
        git(path, "add", "README.md")
        git(path, "commit", "-qm", "init")
    return path


# ---------------------------------------------------------------- identity


@pytest.mark.parametrize(
    "url, slug",
    [
        ("git@github.com:acme/ledger.git", "ledger"),
        ("https://gitlab.com/acme/ledger.git", "ledger"),
        ("ssh://git@host.example:2222/srv/git/ledger", "ledger"),
        ("ssh://git@host.example/ledger.git/", "ledger"),
        ("https://github.com/acme/Billing_API.git", "billing-api"),
        ("file:///srv/repos/quill.git", "quill"),
        ("/srv/repos/quill", "quill"),
        ("../quill.git", "quill"),
        ("https://host/acme/ledger?ref=x", "ledger"),
        ("", None),
        ("https://host/", None),
        ("git@host:.git", None),
    ],
)
def test_slug_from_remote_urls(url, slug):
    assert pj.slug_from_url(url) == slug


def test_ssh_remote_names_the_project(tmp_path):
    root = repo(tmp_path / "checkout", "git@github.com:acme/ledger.git")
    found = pj.identify(root)
    assert found == pj.Project("ledger", str(root.resolve()), "remote")


def test_https_remote_names_the_project(tmp_path):
    root = repo(tmp_path / "work-copy", "https://gitlab.com/acme/harbor.git")
    assert pj.identify(root).slug == "harbor"


def test_no_remote_uses_the_directory_name(tmp_path):
    root = repo(tmp_path / "Atlas Web")
    assert pj.identify(root) == pj.Project("atlas-web", str(root.resolve()), "directory")


def test_a_subdirectory_is_the_same_project(tmp_path):
    root = repo(tmp_path / "ledger", "git@github.com:acme/ledger.git")
    deep = root / "src" / "ledger" / "api"
    deep.mkdir(parents=True)
    assert pj.identify(deep) == pj.identify(root)
    assert pj.identify(deep).root == str(root.resolve())


def test_a_linked_worktree_is_the_same_project(tmp_path):
    main = repo(tmp_path / "quill", commit=True)
    git(main, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "quill-feature"))
    sub = tmp_path / "quill-feature" / "src"
    sub.mkdir()
    found = pj.identify(sub)
    # No remote: the main working tree's name, not the worktree's.
    assert found.slug == "quill" and found.source == "directory"
    assert found.root == str((tmp_path / "quill-feature").resolve())
    git(main, "remote", "add", "origin", "git@github.com:acme/quill-cli.git")
    assert pj.identify(sub).slug == "quill-cli"


def test_outside_any_repository_there_is_none(tmp_path):
    plain = tmp_path / "notes"
    plain.mkdir()
    assert pj.identify(plain) is None
    assert pj.identify(tmp_path / "does-not-exist") is None
    assert pj.scope("auto", plain) is None


def test_a_dot_git_that_is_not_a_repository_is_skipped(tmp_path):
    outer = repo(tmp_path / "outer", "git@github.com:acme/outer.git")
    inner = outer / "vendor" / "thing"
    (inner / ".git").mkdir(parents=True)  # an empty .git dir: not a repository
    (outer / "junk").mkdir()
    (outer / "junk" / ".git").write_text("not a gitfile\n")
    assert pj.identify(inner).slug == "outer"
    assert pj.identify(outer / "junk").slug == "outer"


def test_origin_is_read_from_the_config_file_only_in_its_section(tmp_path):
    root = repo(tmp_path / "x")
    (root / ".git" / "config").write_text(
        '[remote "upstream"]\n\turl = git@github.com:other/wrong.git\n'
        '[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        '\turl = "https://github.com/acme/right.git"\n[core]\n\tbare = false\n'
    )
    assert pj.identify(root).slug == "right"


def test_config_maps_directories_and_remotes(tmp_path):
    mono = repo(tmp_path / "mono", "git@github.com:acme/monorepo.git")
    (mono / "services" / "billing").mkdir(parents=True)
    other = repo(tmp_path / "old", "git@github.com:acme/old-name.git")
    mapping = pj.parse_map(
        f"{mono}/services/billing=billing, git@github.com:acme/old-name.git = ledger,"
        " bad entry, x=Not_A_Slug"
    )
    assert mapping == {
        f"{mono}/services/billing": "billing",
        "git@github.com:acme/old-name.git": "ledger",
    }
    assert pj.identify(mono / "services" / "billing", mapping).to_dict() == {
        "project": "billing",
        "root": str(mono.resolve()),
        "source": "config",
    }
    assert pj.identify(mono, mapping).slug == "monorepo"
    assert pj.identify(other, mapping).source == "config"
    assert pj.identify(other, mapping).slug == "ledger"
    home = tmp_path
    assert pj.identify(mono, {"~/mono": "mapped"}, home).slug == "mapped"


def test_scope_option_values(tmp_path):
    root = repo(tmp_path / "ledger")
    assert pj.scope("auto", root) == "ledger"
    assert pj.scope(None, root) == "ledger"
    assert pj.scope("all", root) is None
    assert pj.scope("harbor", root) == "harbor"
    assert pj.scope("auto", root / ".", wiki_root=root) is None  # the wiki is no project
    assert pj.scope("harbor", root, wiki_root=root) == "harbor"
    from memwiki.errors import InvalidInput

    with pytest.raises(InvalidInput, match="--project"):
        pj.scope("../etc", root)


def test_project_command_json(tmp_path, run_memwiki):
    root = repo(tmp_path / "checkout", "git@github.com:acme/ledger.git")
    (root / "sub").mkdir()
    done = run_memwiki("project", str(root / "sub"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "project": "ledger",
        "root": str(root.resolve()),
        "source": "remote",
    }
    outside = tmp_path / "plain"
    outside.mkdir()
    done = run_memwiki("project", "--json", cwd=outside)
    assert done.returncode == 0 and json.loads(done.stdout)["project"] is None
    done = run_memwiki("project", cwd=root)
    assert done.returncode == 0 and done.stdout.startswith("ledger")


def test_mentioned_matches_whole_words():
    slugs = {"billing-api", "web", "quill"}
    assert pj.mentioned("how do I deploy billing-api?", slugs) == {"billing-api"}
    assert pj.mentioned("deploy the Billing API", slugs) == {"billing-api"}
    assert pj.mentioned("deploy billingapi", slugs) == {"billing-api"}
    assert pj.mentioned("the website is down", slugs) == set()
    assert pj.mentioned("Quill's tests", slugs) == {"quill"}
    assert pj.mentioned("", slugs) == set()


# ---------------------------------------------------------------- frontmatter


def parse(fm: str, track: str = "memory", stem: str = "x"):
    from memwiki import recallfile as rf

    return rf.parse(f"---\nname: {stem}\ndescription: d\n{fm}---\nbody\n", track, stem)


def test_project_keys_are_validated():
    from memwiki.recallfile import InvalidRecallFile

    assert parse("project: ledger\n").extra == {"project": "ledger"}
    assert parse("projects: [ledger, harbor]\n").extra == {"projects": ["ledger", "harbor"]}
    for bad, line in (
        ("project: Ledger App\n", 4),
        ("project: [a]\n", 4),
        ("projects: ledger\n", 4),
        ("projects: []\n", 4),
        ("projects: [ok, ../x]\n", 4),
        ("project: a\nprojects: [b]\n", 5),
    ):
        with pytest.raises(InvalidRecallFile) as exc:
            parse(bad)
        assert exc.value.problems[0].line == line
        assert "project" in exc.value.problems[0].message


def test_lint_reports_a_bad_project_key(wiki, cli):
    (wiki.root / "memory").mkdir(exist_ok=True)
    (wiki.root / "memory" / "a.md").write_text("---\nname: a\ndescription: d\nproject: No!\n---\n")
    code, out, err = cli("--wiki", wiki.root, "lint")
    assert code != 0
    assert "memory/a.md:4" in out + err and "project" in out + err


def test_file_projects():
    assert pj.file_projects({"project": "a"}) == ("a",)
    assert pj.file_projects({"projects": ["a", "b", "a"]}) == ("a", "b")
    assert pj.file_projects({}, "project", "ledger") == ("ledger",)
    assert pj.file_projects({"project": "x"}, "project", "ledger") == ("x",)
    assert pj.file_projects({}, "memory", "ledger") == ()


# ---------------------------------------------------------------- scoped ranking


def write(root: Path, rel: str, description: str, body: str, project: str | None = None) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    key = f"project: {project}\n" if project else ""
    name = Path(rel).stem
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{key}---\n{body}\n")


@pytest.fixture
def two_projects(wiki):
    for p, tool in (("ledger", "pytest -n auto"), ("harbor", "go test ./...")):
        write(wiki.root, f"skill/{p}-tests.md", f"How to run the {p} tests", f"Run `{tool}`.", p)
    write(wiki.root, "memory/editor.md", "My editor and how to run tests in it", "Neovim.")
    write(wiki.root, "project/ledger.md", "Ledger overview", "## Resources\n")
    return wiki


def paths(wiki, query, project):
    return wiki.retrieve(query, mode="bm25", project=project, notify=lambda _m: None).paths()


def test_the_current_project_comes_first(two_projects):
    w = two_projects
    assert paths(w, "how do I run the tests", "ledger")[0] == "skill/ledger-tests.md"
    assert paths(w, "how do I run the tests", "harbor")[0] == "skill/harbor-tests.md"


def test_naming_another_project_finds_it(two_projects):
    found = paths(two_projects, "how do I run the harbor tests", "ledger")
    assert found[0] == "skill/harbor-tests.md"


def test_all_is_unscoped_and_results_carry_project(two_projects):
    res = two_projects.retrieve("run the tests", mode="bm25", project=None, notify=lambda _m: None)
    scoped = two_projects.retrieve("run the tests", mode="bm25", project="harbor")
    by_path = {r.path: r.to_dict() for r in res.results}
    assert by_path["skill/ledger-tests.md"]["project"] == "ledger"
    assert by_path["memory/editor.md"]["project"] is None
    assert by_path["memory/editor.md"]["projects"] == []
    other = next(r for r in scoped.results if r.path == "skill/ledger-tests.md")
    unscoped = next(r for r in res.results if r.path == "skill/ledger-tests.md")
    assert other.score == pytest.approx(unscoped.score * OTHER_PROJECT_FACTOR)
    assert res.index["project"] is None and scoped.index["project"] == "harbor"
    files = {r.path: r.projects for r in scoped.results}
    assert files.get("project/ledger.md", ("ledger",)) == ("ledger",)


@pytest.mark.parametrize(
    "query, person",
    [
        ("who owns the databases?", True),
        ("Whom should I ask about deploys", True),
        ("whose turn is it on call", True),
        ("Deploy failed. Who can approve a rollback?", True),
        ("who's on call this week", True),
        ("how do I run the tests", False),
        ("find users who churned last month", False),  # a relative clause, not a question
        ("whoami prints the wrong user", False),
        ("", False),
    ],
)
def test_asks_for_person(query, person):
    assert pj.asks_for_person(query) is person


def test_a_who_question_prefers_global_memory(wiki):
    # The project's migration skill matches every word of the topic; the person who owns
    # the databases is global memory (people are kept global) and must come first.
    write(
        wiki.root,
        "skill/ledger-migrations.md",
        "How to write ledger database migrations",
        "Database migrations: `alembic revision`; big tables need a batched migration.",
        "ledger",
    )
    write(wiki.root, "skill/harbor-migrations.md", "Harbor database migrations", "goose.", "harbor")
    write(
        wiki.root,
        "memory/people.md",
        "People I work with",
        "Priya owns the databases and reviews every migration.",
    )
    q = "who owns the database migrations"
    res = wiki.retrieve(q, mode="bm25", project="ledger", notify=lambda _m: None)
    assert res.paths()[0] == "memory/people.md" and res.index["prefer_global"] is True
    # The current project's file still ranks ahead of the other project's.
    assert res.paths().index("skill/ledger-migrations.md") < res.paths().index(
        "skill/harbor-migrations.md"
    )
    unscoped = wiki.retrieve(q, mode="bm25", project=None, notify=lambda _m: None)
    assert unscoped.paths()[0] != "memory/people.md" and "prefer_global" not in unscoped.index
    # Naming a project scopes the question to it, who-question or not.
    named = wiki.retrieve(q + " in harbor", mode="bm25", project="ledger", notify=lambda _m: None)
    assert "prefer_global" not in named.index and named.index["project_named"] == ["harbor"]


def test_retrieve_cli_scopes_by_the_working_directory(two_projects, tmp_path, run_memwiki):
    ledger = repo(tmp_path / "src" / "ledger", "git@github.com:acme/ledger.git")
    harbor = repo(tmp_path / "src" / "harbor-checkout", "https://gitlab.com/acme/harbor.git")
    env = {"MEMWIKI_EMBED": "none"}
    args = ("--wiki", two_projects.root, "retrieve", "how do I run the tests", "--json")
    for cwd, first in ((ledger, "skill/ledger-tests.md"), (harbor, "skill/harbor-tests.md")):
        done = run_memwiki(*args, cwd=cwd, env=env)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["results"][0]["path"] == first
        assert data["index"]["project"] == first.split("/")[1].split("-")[0]
    done = run_memwiki(*args, "--project", "harbor", cwd=ledger, env=env)
    assert json.loads(done.stdout)["results"][0]["path"] == "skill/harbor-tests.md"
    done = run_memwiki(*args, "--project", "Bad Slug", cwd=ledger, env=env)
    assert done.returncode == 2 and "--project" in done.stderr


def test_hook_follows_the_payload_cwd(two_projects, tmp_path, run_memwiki):
    ledger = repo(tmp_path / "ledger", "git@github.com:acme/ledger.git")
    harbor = repo(tmp_path / "harbor", "git@github.com:acme/harbor.git")
    env = {"MEMWIKI_EMBED": "none", "MEMWIKI_DIR": str(two_projects.root)}
    run_memwiki("reindex", env=env)  # the first build is not what this test times
    for cwd, first in ((ledger, "skill/ledger-tests.md"), (harbor, "skill/harbor-tests.md")):
        payload = {"hook_event_name": "UserPromptSubmit", "prompt": "how do I run the tests?"}
        payload["cwd"] = str(cwd)
        # The hook process itself runs elsewhere: only the payload says where the session is.
        done = run_memwiki("hook", "claude-code", input=json.dumps(payload), cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        listed = [ln[3:] for ln in context.splitlines() if ln.startswith("## ")]
        assert listed[0] == first


@settings(max_examples=60, deadline=None)
@given(
    scores=hst.lists(hst.floats(0.01, 2.0), min_size=1, max_size=30),
    project=hst.one_of(hst.none(), hst.sampled_from(["ledger", "x"])),
    query=hst.text(max_size=30),
)
def test_scope_is_a_no_op_without_project_keys(scores, project, query):
    from memwiki.index.manifest import Row

    rows = [
        Row(f"memory/f{i}.md", "memory", f"f{i}", "d", (), "", 1, 2, "s")
        for i, _ in enumerate(scores)
    ]
    fused = dict(enumerate(scores))
    assert scope_to_project(rows, fused, project, query) == (fused, [], False)


def test_demo_wiki_shows_two_projects():
    from memwiki import recallfile as rf

    examples = Path(__file__).resolve().parents[1] / "examples"
    seen: dict[str, int] = {}
    for path in sorted((examples / "demo-wiki").rglob("*.md")):
        track = path.relative_to(examples / "demo-wiki").parts[0]
        parsed = rf.read(path, track)
        for slug in pj.file_projects(parsed.extra, track, path.stem):
            seen[slug] = seen.get(slug, 0) + 1
    assert set(seen) == {"billing", "gridview"} and seen["billing"] >= 5
    for slug in ("billing", "gridview"):
        parsed = rf.read(examples / "demo-projects" / "project" / f"{slug}.md", "project")
        assert pj.file_projects(parsed.extra, "project", slug) == (slug,)
        assert "## Resources" in parsed.body
        text = (examples / "demo-projects" / "project" / f"{slug}.md").read_text()
        from memwiki.memorize.resources import project_file_entries

        assert len(project_file_entries(text)) >= 4


# ---------------------------------------------------------------- bad input

BAD_RESOURCES = """---
name: ledger
description: Ledger overview
---
# Ledger

## Resources

Files worth knowing:
- `README.md` — overview
- src/x.py — no backticks
- `unterminated — a description
- ask Priya before changing the schema
- `/home/ada/src/ledger/setup.cfg` — absolute
- `../harbor/go.mod` — another repository
- `README.md` — twice
```
## Resources
- `in a code block` — not a line of the section
```

## Resources
"""


def test_lint_names_resource_lines_memorize_cannot_read(wiki, cli):
    (wiki.root / "project").mkdir(exist_ok=True)
    path = wiki.root / "project" / "ledger.md"
    path.write_text(BAD_RESOURCES)
    code, out, err = cli("--wiki", wiki.root, "lint")
    assert code == 1
    found = [ln for ln in (out + err).splitlines() if ln.startswith("project/ledger.md:")]
    assert [ln.split(":")[1] for ln in found] == ["11", "12", "14", "15", "16", "22"]
    assert "not a resource line" in found[0] and "relative to the repository root" in found[2]
    assert "'..' leaves the repository" in found[3] and "listed twice (also line 10)" in found[4]
    assert "second Resources section" in found[5]
    # Still a valid RecallFile: indexed, found, and its bytes untouched.
    assert wiki.retrieve("ledger overview", mode="bm25", project="ledger").paths()[0] == (
        "project/ledger.md"
    )
    assert path.read_text() == BAD_RESOURCES


def test_resource_problems_of_a_good_file_and_of_frontmatter_lines():
    good = "---\nname: a\ndescription: d\n---\n## Resources\n\n- `a.py` — the a\n* `b/` - dir\n"
    assert project_file.resource_problems(good) == []
    assert project_file.resource_problems("no section\n- `/abs` — x\n") == []
    crlf = "---\r\nname: a\r\ndescription: d\r\n---\r\n## Resources\r\n- `/x` — y\r\n"
    assert project_file.resource_problems(crlf) == [
        (6, "resource '/x': paths are relative to the repository root")
    ]


def test_project_of_a_directory_whose_name_is_not_utf8(tmp_path, run_memwiki):
    import os

    top = os.path.join(os.fsencode(tmp_path), b"caf\xe9-api")
    os.makedirs(os.path.join(top, b"src"))
    subprocess.run(["git", "init", "-q"], cwd=top, check=True, timeout=30)
    found = pj.identify(os.fsdecode(os.path.join(top, b"src")))
    assert found is not None and found.slug == "caf-api" and found.source == "directory"
    done = run_memwiki("project", "--json", cwd=Path(os.fsdecode(os.path.join(top, b"src"))))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["project"] == "caf-api"


# ---------------------------------------------------- names without ASCII letters


@pytest.mark.parametrize(
    "name",
    ["计费服务", "データ基盤.git", "日本 語", "Ελληνικά", "сервис_оплаты"],
)
def test_a_name_without_ascii_letters_gets_a_punycode_slug(name):
    slug = pj.slugify(name)
    assert slug is not None and slug.startswith("xn-") and pj.SLUG_RE.match(slug)
    letters = "".join(c for c in name.removesuffix(".git").lower() if c.isalnum())
    assert pj.slug_name(slug) == letters


def test_ascii_names_keep_their_slugs_and_symbols_have_none():
    assert pj.slugify("Ledger_API.git") == "ledger-api"
    assert pj.slugify("api-计费") == "api"  # as before: the ASCII part names it
    assert pj.slugify("🙂🙂") is None
    assert pj.slug_name("ledger-api") == "ledger-api"
    assert pj.slug_name("xn-!!") == "xn-!!"  # not Punycode: the slug itself


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Łódź utils", "lodz-utils"),  # was d-utils: the marked letters were dropped
        ("Café_API.git", "cafe-api"),
        ("naïve-Résumé", "naive-resume"),
        ("Straße", "strasse"),
        ("Ærø", "aero"),
    ],
)
def test_latin_letters_with_marks_keep_their_letters(name, slug):
    assert pj.slugify(name) == slug
    assert pj.mentioned(f"how do I release {name.removesuffix('.git')}?", [slug]) == {slug}


def test_marks_on_other_scripts_are_not_dropped():
    # Greek and Japanese decompose too (ά, デ), but only marks on Latin letters go.
    assert pj.slug_name(pj.slugify("Ελληνικά")) == "ελληνικά"
    assert pj.slug_name(pj.slugify("データ基盤")) == "データ基盤"
    assert pj.mentioned("データ基盤の移行", [pj.slugify("データ基盤")]) == {
        pj.slugify("データ基盤")
    }


@settings(max_examples=300, deadline=None)
@given(hst.text(max_size=120))
def test_slugify_gives_a_valid_slug_or_none(text):
    from memwiki.recallfile import check_slug

    slug = pj.slugify(text)
    assert slug is None or check_slug(slug, "project") == slug
    assert slug is None or slug == pj.slugify(text)  # the same on every call


def test_a_cjk_repository_is_a_project_and_its_name_in_a_query_names_it(tmp_path, wiki):
    root = repo(tmp_path / "checkout", "git@github.com:acme/计费服务.git")
    found = pj.identify(root)
    assert found is not None and found.source == "remote"
    slug = found.slug
    assert pj.slug_name(slug) == "计费服务"
    assert pj.mentioned("计费服务的部署说明在哪里", {slug, "ledger"}) == {slug}
    assert pj.mentioned("how do I deploy ledger", {slug, "ledger"}) == {"ledger"}
    write(wiki.root, "skill/deploy-billing.md", "How to deploy", "Run make deploy.", slug)
    write(wiki.root, "skill/deploy-ledger.md", "How to deploy", "Run make deploy.", "ledger")
    for project, first in ((slug, "skill/deploy-billing.md"), ("ledger", "skill/deploy-ledger.md")):
        assert paths(wiki, "how to deploy", project)[0] == first


@pytest.mark.parametrize(
    "text, problem",
    [
        ("garbage", "expected KEY=slug"),
        ("/tmp/r2=Bad Slug", "is not a project slug"),
        ("src/x=foo", "the key must be an absolute directory"),
    ],
)
def test_a_projects_entry_memwiki_cannot_use_stops_the_command(text, problem, cli, monkeypatch):
    """Bug: `MEMWIKI_PROJECTS='garbage'` (or a bad slug, or a relative directory) was
    ignored without a word by `memwiki project` and `retrieve`; the hook stays lenient."""
    from memwiki.errors import InvalidInput

    assert pj.parse_map(text) == {}
    with pytest.raises(InvalidInput, match=problem):
        pj.parse_map(text, strict=True)
    monkeypatch.setenv("MEMWIKI_PROJECTS", text)
    code, _, err = cli("project")
    assert code == 2 and problem in err
    good = "/srv/a=alpha, ~/b=beta, git@example.org:team/c.git=gamma, https://x.example/d=delta"
    assert len(pj.parse_map(good, strict=True)) == 4
