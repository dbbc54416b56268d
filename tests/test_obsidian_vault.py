"""What memwiki does with the other files of a real Obsidian vault: plugins' own notes
(Excalidraw drawings, Kanban boards), the copies other sync tools make, Obsidian's markdown
extensions, and frontmatter written by the Properties editor. Real wikis on disk."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import zlib
from pathlib import Path

from memwiki import recallfile as rfmod
from memwiki.config import load
from memwiki.git import sync as syncmod
from memwiki.index.search import retrieve
from memwiki.links import LinkIndex
from memwiki.lint import lint_wiki
from memwiki.recallfile import RecallFile
from memwiki.wiki import Wiki

# As the Excalidraw plugin saves a drawing: its text elements (with block ids), then the
# scene as a compressed-json block inside a %% comment.
_SCENE = base64.b64encode(zlib.compress(os.urandom(3000))).decode()
DRAWING = f"""---

excalidraw-plugin: parsed
tags: [excalidraw]

---
==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==


# Excalidraw Data

## Text Elements
zebracorn billing service ^aB3dE9fG

[[no-such-note]] ^xYz12345

%%
## Drawing
```compressed-json
{_SCENE}
```
%%"""

# As the Kanban plugin saves a board.
BOARD = """---

kanban-plugin: basic

---

## Todo

- [ ] zebracorn: rotate the webhook secret [[billing]]
- [ ] write [[a-note-not-written-yet]]


## Done

**Complete**
- [x] migrate the billing database




%% kanban:settings
```
{"kanban-plugin":"basic"}
```
%%"""

NOTE = """\
# Billing

status:: active
owner:: [[people]]

> [!note] Deploy
> Deploy with [[people#^bob|Bob]]; the picture: ![[arch.excalidraw]], the plan: [[sprint]].

zebracorn paragraph ^imp1

See [[billing#^imp1]], ![[people#Team]] and ![[diagram.png]].

%%a comment hidden in reading view: quokkafish%%

```dataview
TABLE status FROM "memory"
```
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def vault(wiki: Wiki) -> None:
    """A note, the note it links to, a drawing and a board, as Obsidian and its plugins write them."""
    wiki.put(RecallFile("memory", "billing", "Billing facts", body=NOTE))
    wiki.put(RecallFile("memory", "people", "The team", body="# Team\nBob ^bob\n"))
    write(wiki.root, "memory/Drawings/arch.excalidraw.md", DRAWING)
    write(wiki.root, "memory/boards/sprint.md", BOARD)


def gitcli(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


# ------------------------------------------------------------ plugins' own notes


def test_drawings_and_boards_are_left_out_of_lint_list_and_retrieve_in_silence(wiki, cli):
    """A drawing and a board were four 'missing name/description' errors in lint (so the
    pre-commit hook refused them), 'skipped' lines in every `list` and 'not indexed' in
    retrieve; they are a plugin's data, not memory, and not mistakes."""
    vault(wiki)
    assert lint_wiki(wiki) == []
    # As the pre-commit hook runs it: the staged files by name.
    staged = ["memory/Drawings/arch.excalidraw.md", "memory/boards/sprint.md"]
    assert lint_wiki(wiki, staged) == []
    code, out, err = cli("--wiki", wiki.root, "lint", *[wiki.root / p for p in staged])
    assert (code, err) == (0, ""), out
    page = wiki.list_recall_files()
    assert [e.path for e in page.items] == ["memory/billing.md", "memory/people.md"]
    assert page.skipped == []
    said: list[str] = []
    hits = retrieve(wiki, "zebracorn", k=10, mode="bm25", notify=said.append).paths()
    assert hits == ["memory/billing.md"]
    assert not [m for m in said if "not indexed" in m], said
    # A %%comment%% is the note's own text, hidden only in Obsidian's reading view: indexed.
    assert retrieve(wiki, "quokkafish", k=10, mode="bm25", notify=said.append).paths() == [
        "memory/billing.md"
    ]
    # The scene's base64 is nowhere in the index: a query of one of its chunks finds nothing.
    assert retrieve(wiki, _SCENE[100:140], k=10, mode="bm25", notify=said.append).paths() == []
    # Asked for by name, the board says what it is (exit 2, one line).
    code, _, err = cli("--wiki", wiki.root, "show", "memory/sprint")
    assert code == 2 and "memory/boards/sprint.md:1: a Kanban board, not a RecallFile" in err


def test_links_to_a_drawing_or_a_board_count_as_attachments_and_theirs_are_not_checked(wiki, cli):
    """`![[arch.excalidraw]]` was listed as a link between notes, and a board's card linking
    a note not written yet would be a broken link in a file lint does not otherwise read."""
    vault(wiki)
    index = LinkIndex(wiki)
    assert index.plugin_notes == {
        "memory/Drawings/arch.excalidraw.md": "an Excalidraw drawing",
        "memory/boards/sprint.md": "a Kanban board",
    }
    out = [(lk.raw, lk.target) for lk in index.outgoing("memory/billing.md")]
    assert out == [
        ("[[people]]", "memory/people.md"),
        ("[[people#^bob|Bob]]", "memory/people.md"),
        ("[[billing#^imp1]]", "memory/billing.md"),
        ("![[people#Team]]", "memory/people.md"),
    ]
    assert index.outgoing("memory/boards/sprint.md") == []
    assert [lk.source for lk in index.backlinks("memory/billing.md")] == []
    graph = index.graph()
    assert {"memory/billing.md", "memory/people.md"} <= set(graph)
    assert not set(index.plugin_notes) & (set(graph) | set().union(*graph.values()))
    code, _, err = cli("--wiki", wiki.root, "links", "memory/sprint")
    assert code == 2 and "memory/boards/sprint.md:1: a Kanban board, not a RecallFile" in err, err
    # A second run reads the link cache, and says the same.
    assert LinkIndex(wiki).plugin_notes == index.plugin_notes
    assert lint_wiki(wiki) == []


def test_drawings_and_boards_are_not_counted_nor_read_again_by_every_list(wiki, cli, monkeypatch):
    """The index counted a drawing or a board as an indexed file (`reindex`, `doctor`,
    `retrieve --json`: 4 files in a vault of 2 notes), and `list` parsed each of them again
    on every run: the manifest held nothing that let it skip them. Found measuring a vault
    of 200 notes and 50 drawings: 250 files everywhere, every list parsing 2 MB of scenes."""
    monkeypatch.setenv("MEMWIKI_EMBED", "hash")
    # utime moves the mtimes only; the ctimes, in the racy window, would have list read
    # the files again (tests/test_clock_restored_mtime.py): zero stands for a day later.
    monkeypatch.setattr("memwiki.index.listing.RACY_NS", 0)
    vault(wiki)
    then = time.time() - 60  # outside the manifest's racy window, as files of a day ago are
    for path in (wiki.root / "memory").rglob("*.md"):
        os.utime(path, (then, then))
    code, out, err = cli("--wiki", wiki.root, "reindex")
    assert code == 0 and "2 files indexed" in out, (out, err)
    code, out, _ = cli("--wiki", wiki.root, "retrieve", "--json", "zebracorn")
    assert code == 0 and json.loads(out)["index"]["files"] == 2
    code, out, _ = cli("--wiki", wiki.root, "doctor")
    assert "fresh; 2 files," in out, out
    parsed: list[str] = []
    real = rfmod.try_read
    monkeypatch.setattr(rfmod, "try_read", lambda p, t, r: parsed.append(r) or real(p, t, r))
    page = Wiki(wiki.root).list_recall_files()  # a new process, as `memwiki list` is
    assert [e.path for e in page.items] == ["memory/billing.md", "memory/people.md"]
    assert (page.skipped, parsed) == ([], [])
    # An edit of the board is read again, and still left out.
    write(wiki.root, "memory/boards/sprint.md", BOARD.replace("## Done", "- [ ] card\n\n## Done"))
    os.utime(wiki.root / "memory/boards/sprint.md", (then, then))
    # A drawing touched (same bytes, a new mtime) keeps what the index knew of it.
    os.utime(wiki.root / "memory/Drawings/arch.excalidraw.md", (then - 30, then - 30))
    code, out, err = cli("--wiki", wiki.root, "reindex")
    assert code == 0 and "0 files indexed" in out, (out, err)
    code, out, _ = cli("--wiki", wiki.root, "retrieve", "--json", "zebracorn")
    assert json.loads(out)["index"]["files"] == 2
    page = Wiki(wiki.root).list_recall_files()
    assert (len(page.items), page.skipped, parsed) == (2, [], [])


def test_a_board_edited_in_obsidian_is_committed_by_sync(tmp_path):
    """sync held a board back ('not committed ... missing name') on every run, for good."""
    remote = tmp_path / "remote.git"
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    wiki, _ = Wiki.init(tmp_path / "w")
    syncmod.add_remote(wiki, str(remote))
    vault(wiki)
    write(wiki.root, "memory/bad.md", "---\nname: bad\n---\nno description\n")
    result = syncmod.sync(wiki, load()).to_dict()
    assert [p["path"] for p in result["not_committed"]] == ["memory/bad.md"]
    on_remote = gitcli(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    assert "memory/boards/sprint.md" in on_remote
    assert "memory/Drawings/arch.excalidraw.md" in on_remote
    write(
        wiki.root, "memory/boards/sprint.md", BOARD.replace("## Done", "- [ ] new card\n\n## Done")
    )
    result = syncmod.sync(wiki, load()).to_dict()
    assert [p["path"] for p in result["not_committed"]] == ["memory/bad.md"]
    assert "new card" in gitcli(remote, "show", "main:memory/boards/sprint.md")


def test_a_recallfile_is_never_taken_for_a_plugin_note_by_its_body_or_a_nested_key(wiki):
    text = "---\nname: notes\ndescription: about kanban-plugin\nx:\n  kanban-plugin: basic\n---\n"
    write(wiki.root, "memory/notes.md", text + "excalidraw-plugin: parsed\n")
    assert [e.path for e in wiki.list_recall_files().items] == ["memory/notes.md"]
    assert LinkIndex(wiki).plugin_notes == {}


# ----------------------------------------------------------- other tools' copies


def test_copies_made_by_other_sync_tools_are_named_as_copies_everywhere(wiki, cli):
    """Dropbox's, Syncthing's and iCloud's copies keep the original's `name:`: lint said
    'name does not match the file name', which hides what happened and what to do."""
    wiki.put(RecallFile("memory", "people", "The team", body="zebracorn\n"))
    original = (wiki.root / "memory/people.md").read_text()
    copies = {
        "memory/people (conflicted copy).md": "(Dropbox's naming)",
        "memory/people (Ann's conflicted copy 2024-01-01 (1)).md": "(Dropbox's naming)",
        "memory/people.sync-conflict-20240101-123456-ABCDEFG.md": "made by Syncthing",
        "memory/people 2.md": "(iCloud's conflict copy, or Obsidian's Make a copy)",
    }
    for rel in copies:
        write(wiki.root, rel, original)
    write(wiki.root, "memory/other 2.md", original)  # a copy of no note called "other"
    problems = {p.path: p.message for p in lint_wiki(wiki)}
    for rel, who in copies.items():
        assert problems[rel].startswith(f"a conflict copy of memory/people.md {who}") or (
            problems[rel].startswith(f"a numbered copy of memory/people.md {who}")
        ), problems[rel]
        assert "merge what you want to keep into that file, then delete this one" in problems[rel]
    assert problems["memory/other 2.md"] == "name 'people' does not match the file name 'other 2'"
    # Not indexed, so never a duplicate hit, and said once when the index meets them.
    said: list[str] = []
    hits = retrieve(wiki, "zebracorn", k=10, mode="bm25", notify=said.append).paths()
    assert hits == ["memory/people.md"]
    assert sum("a conflict copy of memory/people.md" in m for m in said) == 3
    code, out, err = cli("--wiki", wiki.root, "list", "--json")
    skipped = {p["path"] for p in json.loads(out)["skipped"]}
    assert set(copies) <= skipped


def test_sync_holds_back_another_tools_copy_and_says_what_it_is(tmp_path):
    remote = tmp_path / "remote.git"
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    wiki, _ = Wiki.init(tmp_path / "w")
    syncmod.add_remote(wiki, str(remote))
    wiki.put(RecallFile("memory", "people", "The team", body="Bob\n"))
    write(
        wiki.root, "memory/people (conflicted copy).md", "---\nname: people\ndescription: x\n---\n"
    )
    result = syncmod.sync(wiki, load()).to_dict()
    (held,) = result["not_committed"]
    assert held["path"] == "memory/people (conflicted copy).md"
    assert "a conflict copy of memory/people.md (Dropbox's naming)" in held["problem"]
    assert "memory/people.md" in gitcli(remote, "ls-tree", "-r", "--name-only", "main")


# --------------------------------------------------- Properties, rewritten by memwiki


PROPERTIES = """\
---
# the Properties editor keeps this comment
name: billing
description: Billing facts
aliases:
  - billingd
cssclasses:
  - wide
created: 2024-01-05
reviewed: true
due: 2024-02-01T10:00
tags:
  - "#billing"
  - infra
empty:
related: "[[people]]"
---
# Billing
"""


def test_add_over_a_note_from_the_properties_editor_changes_only_what_it_must(wiki, cli):
    """Every unknown key, comment and date stays byte for byte; a block list (as the
    Properties editor writes `tags`) stays a block list instead of becoming `[a, b]`, which
    Obsidian turned back on its next save: a style flip in every diff."""
    write(wiki.root, "memory/billing.md", PROPERTIES)
    code, _, err = cli(
        "--wiki",
        wiki.root,
        "add",
        "memory",
        "billing",
        "-d",
        "Billing, v2",
        "-t",
        "billing",
        "-t",
        "#payments",
    )
    assert code == 0, err
    text = (wiki.root / "memory/billing.md").read_text()
    before = PROPERTIES.replace("Billing facts", "Billing, v2").replace(
        '  - "#billing"\n  - infra\n', "  - billing\n  - '#payments'\n"
    )
    lines = text.splitlines(keepends=True)
    assert lines[-3].startswith("updated: ")  # the one added line, after the last key
    assert "".join(line for line in lines if not line.startswith("updated: ")) == before
    rf = wiki.get("memory", "billing")
    assert rf.tags == ["billing", "#payments"] and rf.extra["reviewed"] is True
    # An inline list stays inline.
    write(wiki.root, "memory/inline.md", "---\nname: inline\ndescription: d\ntags: [a, b]\n---\n")
    assert cli("--wiki", wiki.root, "add", "memory", "inline", "-d", "d", "-t", "c")[0] == 0
    assert "\ntags: [c]\n" in (wiki.root / "memory/inline.md").read_text()


def test_links_in_properties_count_as_obsidian_counts_them(wiki, cli):
    """Obsidian shows `related: "[[people]]"` in backlinks and the graph; memwiki did not
    read the frontmatter for links, so such a link was missing from `memwiki links` and a
    broken one was never reported."""
    write(
        wiki.root,
        "memory/billing.md",
        PROPERTIES.replace("empty:\n", '# see [[not-a-link]]\nlinks:\n  - "[[nowhere]]"\n'),
    )
    wiki.put(RecallFile("memory", "people", "The team", body="Bob\n"))
    index = LinkIndex(wiki)
    out = [(lk.line, lk.raw, lk.target) for lk in index.outgoing("memory/billing.md")]
    assert out == [
        (17, "[[nowhere]]", None),
        (18, "[[people]]", "memory/people.md"),
    ]
    assert [lk.source for lk in index.backlinks("memory/people.md")] == ["memory/billing.md"]
    assert [(p.path, p.line, p.message) for p in lint_wiki(wiki)] == [
        ("memory/billing.md", 17, "broken link [[nowhere]]")
    ]
