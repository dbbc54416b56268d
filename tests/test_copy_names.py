"""Which file names can be another sync tool's conflict copy: the quick test sync's and
lint's walk of the whole wiki make on each name (recallfile.model.maybe_sync_copy) lets
through every name a SYNC_COPIES pattern matches, and passes the others over without
matching each against every pattern."""

from __future__ import annotations

import random
from pathlib import PurePosixPath

from test_sync_copies import note, write

from memwiki.git import copies
from memwiki.recallfile.model import SYNC_COPIES


def matched_by_a_pattern(name: str) -> bool:
    """What other_tools_copy tries, by the patterns themselves (no quick test first)."""
    p = PurePosixPath(name)
    for pattern, _, by_name in SYNC_COPIES:
        if by_name and (pattern.match(p.stem) or pattern.match(p.name)):
            return True
    return p.suffix == ".md" and SYNC_COPIES[-1][0].match(p.stem) is not None


NAMES = [
    "deploys (Ann's conflicted copy 2026-12-01).md",
    "README (conflicted copy).md",
    "diagram (CONFLICTED COPY 2) (1).png",
    "x (conflıcted copy).md",  # dotless i: a case-insensitive match of "i"
    "x (ConFlİcted Copy).md",
    "deploys.sync-conflict-20261201-101010-ABCDEFG.md",
    "Makefile.sync-conflict-20261201-101010-ABCDEFG",
    "deploys 2.md",
    "Chapter 12.md",
    "a 1 234.md",
    "x 2\n.md",
    "x 2.MD",
    "x 2.txt",
    "Meeting notes 1234.md",
    "Meeting notes about the deploy.md",
    "note-00012.md",
    "conflicted copy.md",
    " 2.md",
]


def fuzzed(rng: random.Random) -> str:
    """A name made like a copy, or almost: random stems, forms, case and extensions."""
    stem = rng.choice(["x", "deploys", "a b", "Meeting 1", "", " ", "ı", "n\n"])
    form = rng.choice(
        [
            " ({}conflicted copy{})".format(
                rng.choice(["", "Ann's ", "x"]), rng.choice(["", " 2"])
            ),
            " (conflicted copy) (3)",
            ".sync-conflict-20261201-101010-{}".format(rng.choice(["ABC", "a1", ""])),
            f" {rng.randint(0, 1200)}",
            f"{rng.randint(0, 99)}",
            " copy",
        ]
    )
    text = "".join(c.swapcase() if rng.random() < 0.2 else c for c in stem + form)
    text = text.replace("i", rng.choice(["i", "ı", "İ"]))
    return text + rng.choice(["", ".md", ".MD", ".png", "\n.md", ".md\n", ".tar.md"])


def test_every_name_a_pattern_matches_passes_the_quick_test():
    from memwiki.recallfile.model import maybe_sync_copy

    rng = random.Random(5)
    names = NAMES + [fuzzed(rng) for _ in range(20_000)]
    missed = [n for n in names if matched_by_a_pattern(n) and not maybe_sync_copy(n)]
    assert missed == []
    assert sum(matched_by_a_pattern(n) for n in names) > 2000  # the fuzz reaches copies
    assert not maybe_sync_copy("Meeting notes about the deploy.md")
    assert not maybe_sync_copy("note-00012.md")


def test_the_walk_matches_only_names_that_may_be_copies(tmp_path, monkeypatch):
    """Bug (cost): every name with a space went through every pattern and three paths, so
    a 20,000-note vault named as Obsidian users name notes ("Meeting notes about x.md")
    spent 300 ms of each sync (and lint) there; 33 ms now."""
    root = tmp_path / "w"
    for n in range(200):
        write(root, f"memory/Meeting notes about thing {n}x.md", note(f"m{n}", "Body.\n"))
    write(root, "memory/deploys.md", note("deploys", "Ours.\n"))
    write(root, "memory/deploys (conflicted copy).md", note("deploys", "Theirs.\n"))
    write(root, "memory/deploys 2.md", note("deploys", "iCloud's.\n"))
    write(root, "memory/Chapter 2.md", note("Chapter 2", "A name someone chose.\n"))
    seen: list[str] = []
    real = copies.other_tools_copy

    def counted(where, rel):
        seen.append(rel)
        return real(where, rel)

    monkeypatch.setattr(copies, "other_tools_copy", counted)
    found = copies.copies_in(root)
    assert found == {
        "memory/deploys (conflicted copy).md": "memory/deploys.md",
        "memory/deploys 2.md": "memory/deploys.md",
    }
    assert sorted(seen) == [
        "memory/Chapter 2.md",
        "memory/deploys (conflicted copy).md",
        "memory/deploys 2.md",
    ]
