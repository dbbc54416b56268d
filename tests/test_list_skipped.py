"""`memwiki list` on a vault with many notes it cannot read: stderr stays short.

Bug it prevents: a vault of notes made without memwiki printed one "skipped" line per
file on every `list` (about 900 in the vault audit's 5,000 notes); `lint` is the command
that names every one, and `--json` still lists them all.
"""

from __future__ import annotations

import json

from memwiki.cli.wiki_cmds import SKIPPED_SHOWN


def test_list_names_the_first_skipped_files_and_counts_the_rest(wiki, cli):
    for n in range(SKIPPED_SHOWN + 5):
        (wiki.root / "memory" / f"Untitled {n}.md").write_text("no frontmatter\n")
    code, out, err = cli("--wiki", wiki.root, "list")
    assert code == 0 and out.startswith("track")
    lines = err.splitlines()
    assert len(lines) == SKIPPED_SHOWN + 1
    assert lines[-1] == "memwiki: skipped 5 more files (`memwiki lint` names every one)"
    code, out, _ = cli("--wiki", wiki.root, "list", "--json")
    assert code == 0 and len(json.loads(out)["skipped"]) == SKIPPED_SHOWN + 5
