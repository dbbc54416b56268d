"""Every command's --json output against one table of shapes, and the table against the docs.

Agents parse `--json`, so its keys and value types are a contract. One scenario runs every
command that takes `--json` in-process, in order, on one wiki (and a remote and a second
device for sync), with the test embedder: successes, empty results, unicode, conflicts and
the documented errors. Each step must print exactly one JSON document on stdout, of the
shape named in SHAPES, and exit with the code the step expects; a failure must print the
error document whose exit code is the process's. Every key of every shape must be named in
the docs section that documents it, so a new key fails here until the docs say it too.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# A shape: "str", "int", "num" (int or float), "bool", "null", "any", alternatives joined by
# "|" or given as a tuple; [SHAPE] a list whose every item has SHAPE; a dict of exactly its
# keys ("?key": may be absent; "*": any key, each value of that shape).
ERROR = {"error": {"message": "str", "exit_code": "int"}}
PROBLEM = {"path": "str", "line": "int", "message": "str"}
PATH_PROBLEM = {"path": "str", "problem": "str"}
CHANGE = {"status": "str", "path": "str", "?from": "str"}
CONFLICT = {
    "path": "str",
    "kind": "str",
    "kept": "str|null",
    "copy": "str|null",
    "other_name": "str|null",
}
HOOKS = {
    "wiki": "str",
    "config": "str",
    "config_written": "bool",
    "installed": "bool",
    "pre_commit": "str|null",
    "hooks": ["str"],
    "message": "str",
}
LINK = {
    "source": "str",
    "line": "int",
    "raw": "str",
    "name": "str",
    "heading": "str|null",
    "label": "str|null",
    "embed": "bool",
    "target": "str|null",
    "broken": "bool",
    "via_alias": "bool",
}
TRANSCRIPT = {
    "session": "str",
    "source_id": "str",
    "messages": "str",
    "full": "str",
    "project": "str|null",
    "touched": "str|null",
}
SESSION = {
    "session_id": "str",
    "key": "str",
    "source_path": "str",
    "counts": {
        "message": "int",
        "tool": "int",
        "drop": "int",
        "unrecognized": "int",
        "?not_json": "int",
    },
    "project": "str|null",
}
COMMITTED = {
    "run_id": "str",
    "commit": "str|null",
    "created": ["str"],
    "updated": ["str"],
    "deleted": ["str"],
    "conflicts": [CONFLICT],
    "run_commit": "str|null",
    "already_committed": "bool",
    "warnings": ["str"],
}
INSTALLED = {
    "host": "str",
    "dry_run": "bool",
    "changed": "bool",
    "changes": [{"path": "str", "kind": "str", "action": "str"}],
}
SCHEDULE = {"host": "str", "entry": "str", "action": "str", "files": ["str"]}

SHAPES: dict[str, object] = {
    "error": ERROR,
    "init": {
        "path": "str",
        "created": "bool",
        "?config_file": "str",
        "?hint": "str",
        "?remote": {"name": "str", "url": "str", "previous": "str|null"},
        "?hooks": HOOKS,
    },
    "config show": {
        "config_file": "str",
        "settings": {"*": {"value": "str|null", "source": "str"}},
    },
    "commit result": {
        "commit": "str|null",
        "created": ["str"],
        "updated": ["str"],
        "deleted": ["str"],
        "not_committed": [PATH_PROBLEM],
    },
    "list": {
        "items": [
            {
                "track": "str",
                "name": "str",
                "path": "str",
                "description": "str",
                "tags": ["str"],
                "updated": "str|null",
            }
        ],
        "next_cursor": "str|null",
        "skipped": [PROBLEM],
    },
    "show": {
        "track": "str",
        "name": "str",
        "path": "str",
        "description": "str",
        "tags": ["str"],
        "created": "str|null",
        "updated": "str|null",
        "sources": ["str"],
        "extra": {"*": "any"},
        "body": "str",
    },
    "log": [
        {"commit": "str", "author": "str", "time": "str", "message": "str", "changes": [CHANGE]}
    ],
    "lint": {"ok": "bool", "problems": [PROBLEM]},
    "links": {"path": "str", "outgoing": [LINK], "backlinks": [LINK]},
    "retrieve": {
        "query": "str",
        "mode": "str",
        "results": [
            {
                "path": "str",
                "track": "str",
                "name": "str",
                "description": "str",
                "score": "num",
                "project": "str|null",
                "projects": ["str"],
                "conflict": "bool",
                "conflict_of": "str|null",
                "sections": [
                    {
                        "heading": "str",
                        "start_line": "int",
                        "end_line": "int",
                        "text": "str",
                        "score": "num",
                    }
                ],
            }
        ],
        "index": {
            "files": "int",
            "items": "int",
            "embedder": ("null", {"provider": "str", "model": "str", "dim": "int"}),
            "stale": "bool",
            "updated_files": "int",
            "project": "str|null",
            "pending_items": "int",
            "background_reindex": "bool",
            "?note": "str",
            "?project_named": ["str"],
            "?prefer_global": "bool",
        },
    },
    "reindex": {
        "full": "bool",
        "indexed": "int",
        "removed": "int",
        "embedded": "int",
        "problems": [{"path": "str", "message": "str"}],
    },
    "doctor": {"ok": "bool", "checks": [{"name": "str", "ok": "bool", "detail": "str"}]},
    "eval": {
        "k": "int",
        "modes": [
            {
                "mode": "str",
                "queries": "int",
                "recall_any": "num",
                "recall_all": "num",
                "mrr": "num",
                "ndcg10": "num",
                "latency_median_ms": "num",
                "latency_p95_ms": "num",
            }
        ],
    },
    "project": {"project": "str|null", "root": "str|null", "source": "str|null"},
    "hooks install": HOOKS,
    "restore": {"path": "str", "rev": "str", "commit": "str|null", "saved": "str|null"},
    "untrack-ignored": {"commit": "str|null", "untracked": ["str"]},
    "remote add": {"name": "str", "url": "str", "previous": "str|null"},
    "remote show": {
        "remotes": [{"name": "str", "url": "str"}],
        "remote": "str|null",
        "branch": "str|null",
        "upstream": "str|null",
        "ahead": "int|null",
        "behind": "int|null",
    },
    "sync": {
        "remote": "str",
        "branch": "str",
        "commit": "str|null",
        "committed": "str|null",
        "fetched": "int",
        "merged": "str",
        "pushed": "bool",
        "conflicts": [CONFLICT],
        "retries": "int",
        "changes": [CHANGE],
        "not_committed": [PATH_PROBLEM],
        "committed_invalid": [PATH_PROBLEM],
        "conflict_copies": ["str"],
        "copy_of": {"*": "str"},
        "messages": ["str"],
        "upstream": "str|null",
        "upstream_gone": "str|null",
        "left_out": ["str"],
    },
    "clone": {
        "url": "str",
        "path": "str",
        "branch": "str",
        "commit": "str|null",
        "config_file": "str",
        "warnings": ["str"],
        "hooks": "str|null",
    },
    "memorize prepare": {
        "run_id": "str",
        "workspace": "str",
        "transcripts": [TRANSCRIPT],
        "jobs": ["str"],
        "executor_prompt": "str",
        "next_command": "str",
        "redactions": {"*": "int"},
    },
    "memorize status": [
        {
            "run_id": "str",
            "state": "str",
            "detail": "str",
            "created": "str|null",
            "updated": "str|null",
            "workspace": "str|null",
            "sessions": ["str"],
            "jobs": "int",
            "changed": ["str"],
            "commit": "str|null",
        }
    ],
    "memorize verify-resources": {
        "run_id": "str",
        "projects": [
            {
                "project": "str",
                "root": "str|null",
                "kept": ["str"],
                "dropped": [{"path": "str", "reason": "str"}],
                "file": "str",
            }
        ],
    },
    "memorize commit": COMMITTED,
    "memorize commit refused": {
        "ok": "bool",
        "run_id": "str",
        "error": {"message": "str", "exit_code": "int"},
        "problems": [PROBLEM],
    },
    "memorize discard": {"run_id": "str", "discarded": "bool", "state": "str"},
    "hosts detect": {
        "hosts": [
            {
                "host": "str",
                "found": "bool",
                "memorize": "bool",
                "session_location": "str|null",
                "sessions": "int",
                "sample": {"*": "int"},
                "retrieve": "bool",
                "instruction_file": "str|null",
                "installed": "bool",
                "hook_installed": "bool|null",
                "next_command": "str|null",
                "notes": ["str"],
                "version": "str|null",
                "version_tested": "bool|null",
                "tested_versions": ["str"],
            }
        ]
    },
    "install": INSTALLED,
    "uninstall": {**INSTALLED, "schedule": ("null", SCHEDULE)},
    "schedule": SCHEDULE,
    "bridge prepare": {
        "host": "str",
        "nothing_new": "bool",
        "resumed": "bool",
        "run_id": "str|null",
        "workspace": "str|null",
        "jobs": ["str"],
        "executor_prompt": "str|null",
        "next_command": "str|null",
        "transcripts": [TRANSCRIPT],
        "redactions": {"*": "int"},
        "sessions": [SESSION],
        "advanced": "int",
        "claimed": ["str"],
        "warnings": ["str"],
    },
    "bridge commit": {
        **COMMITTED,
        "host": "str",
        "sessions": [SESSION],
        "cursor_advanced": "bool",
    },
}

# Where each shape is documented: (file under docs/, heading). The keys must all be named there.
DOCUMENTED: dict[str, list[tuple[str, str]]] = {
    "error": [("reference.md", "## Conventions")],
    "init": [("reference.md", "## memwiki init"), ("obsidian.md", "### Set-up")],
    "config show": [("reference.md", "## memwiki config show")],
    "commit result": [("reference.md", "### Commit result")],
    "list": [("reference.md", "## memwiki list"), ("reference.md", "### Problem")],
    "show": [("reference.md", "## memwiki show")],
    "log": [("reference.md", "## memwiki log")],
    "lint": [("reference.md", "## memwiki lint"), ("reference.md", "### Problem")],
    "links": [("obsidian.md", "### memwiki links")],
    "retrieve": [("reference.md", "## memwiki retrieve")],
    "reindex": [("reference.md", "## memwiki reindex")],
    "doctor": [("reference.md", "## memwiki doctor")],
    "eval": [("reference.md", "## memwiki eval")],
    "project": [("reference.md", "## memwiki project")],
    "hooks install": [("obsidian.md", "### Set-up")],
    "restore": [("sync.md", "## Restore")],
    "untrack-ignored": [("reference.md", "## Devices: memwiki sync, clone, remote, restore")],
    "remote add": [("reference.md", "## Devices: memwiki sync, clone, remote, restore")],
    "remote show": [("sync.md", "## Conflicts and conflict copies")],
    "sync": [("sync.md", "### `--json`")],
    "clone": [("reference.md", "## Devices: memwiki sync, clone, remote, restore")],
    "memorize prepare": [("reference.md", "## memwiki memorize prepare")],
    "memorize status": [("reference.md", "## memwiki memorize status")],
    "memorize verify-resources": [("reference.md", "## memwiki memorize verify-resources")],
    "memorize commit": [("reference.md", "## memwiki memorize commit")],
    "memorize commit refused": [
        ("reference.md", "## memwiki memorize commit"),
        ("reference.md", "### Problem"),
    ],
    "memorize discard": [("reference.md", "## memwiki memorize discard")],
    "hosts detect": [("reference.md", "## memwiki hosts detect")],
    "install": [("reference.md", "## memwiki install")],
    "uninstall": [("reference.md", "## memwiki uninstall"), ("reference.md", "## memwiki install")],
    "schedule": [("reference.md", "## memwiki schedule")],
    "bridge prepare": [("reference.md", "## memwiki bridge prepare")],
    "bridge commit": [
        ("reference.md", "## memwiki bridge commit"),
        ("reference.md", "## memwiki bridge prepare"),
        ("reference.md", "## memwiki memorize commit"),
    ],
}


def mismatches(value, shape, where: str = "$") -> list[str]:
    """Every way value differs from shape, as 'where: what' lines (empty when it fits)."""
    if isinstance(shape, tuple):
        if any(not mismatches(value, alt, where) for alt in shape):
            return []
        return [f"{where}: {json.dumps(value)[:80]} fits none of {len(shape)} alternatives"]
    if isinstance(shape, str):
        kinds = {
            "str": lambda v: isinstance(v, str),
            "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "num": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "bool": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
            "any": lambda v: True,
        }
        if any(kinds[k](value) for k in shape.split("|")):
            return []
        return [f"{where}: expected {shape}, got {type(value).__name__} {json.dumps(value)[:60]}"]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [
            m for i, item in enumerate(value) for m in mismatches(item, shape[0], f"{where}[{i}]")
        ]
    assert isinstance(shape, dict)
    if not isinstance(value, dict):
        return [f"{where}: expected an object, got {type(value).__name__}"]
    if "*" in shape:
        return [m for k, v in value.items() for m in mismatches(v, shape["*"], f"{where}.{k}")]
    found = []
    keys = {k.lstrip("?"): k for k in shape}
    for key in sorted(set(value) - set(keys)):
        found.append(f"{where}: undocumented key {key!r}")
    for bare, key in keys.items():
        if bare not in value:
            if not key.startswith("?"):
                found.append(f"{where}: missing key {bare!r}")
            continue
        found.extend(mismatches(value[bare], shape[key], f"{where}.{bare}"))
    return found


def key_names(shape) -> set[str]:
    """Every key a shape names, at any depth."""
    if isinstance(shape, tuple | list):
        return {k for part in shape for k in key_names(part)}
    if isinstance(shape, dict):
        own = {k.lstrip("?") for k in shape if k != "*"}
        return own | {k for v in shape.values() for k in key_names(v)}
    return set()


def doc_section(file: str, heading: str) -> str:
    """The text under heading in docs/file, up to the next heading of its level or above."""
    lines = (REPO / "docs" / file).read_text(encoding="utf-8").splitlines()
    level = len(heading.split(" ", 1)[0])
    assert heading in lines, f"docs/{file} has no heading {heading!r}"
    section, fenced = [], False
    for line in lines[lines.index(heading) + 1 :]:
        fenced ^= line.startswith("```")
        ending = re.match(r"(#+) ", line)
        if not fenced and ending and len(ending.group(1)) <= level:
            break
        section.append(line)
    return "\n".join(section)


# ----- the scenario ------------------------------------------------------------------------

PAYLOAD = {
    "recall_files": [
        {
            "track": "memory",
            "name": "billing-service",
            "description": "Billing service: déploiement, 計費 and the payments cluster",
            "tags": ["billing"],
            "content": "# Billing service\n\nRuns on the payments cluster. See [[release]].\n",
        },
        {
            "track": "skill",
            "name": "release",
            "description": "How to release the billing service",
            "content": "# Release\n\n1. make release\n2. watch the canary\n",
        },
    ],
    "message": "billing",
}


class Scenario:
    """Runs memwiki in-process step by step and keeps every step's (exit, stdout, stderr)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.wiki = home / "memwiki"
        self.steps: dict[str, tuple[str, int, str, str]] = {}  # label -> (shape, code, out, err)
        self.values: dict[str, str] = {}

    def run(self, label: str, shape: str, *argv: str, stdin: str = "") -> dict | list:
        """memwiki ARGV; the step is recorded under label, to be checked against shape."""
        from memwiki.cli import main

        out, err = io.StringIO(), io.StringIO()
        held = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([str(a) for a in argv])
        finally:
            sys.stdin = held
        assert label not in self.steps, label
        self.steps[label] = (shape, code, out.getvalue(), err.getvalue())
        try:
            return json.loads(out.getvalue())
        except ValueError:
            return {}

    def script(self) -> None:
        """Every command that takes --json: successes, empty answers, errors, conflicts."""
        home, wiki = self.home, self.wiki
        r = self.run
        git = ["git", "-c", "init.defaultBranch=main"]
        r("show before init", "error", "show", "memory/nothing", "--json")
        r("init", "init", "init", "--json")
        r("init again with hooks", "init", "init", "--hooks", "--json")
        r(
            "init elsewhere with a remote",
            "init",
            "init",
            home / "second",
            "--remote",
            "https://example.invalid/wiki.git",
            "--json",
        )
        r("init inside the wiki", "error", "init", wiki / "memory" / "inner", "--json")
        r("config show", "config show", "config", "show", "--json")
        r("list empty", "list", "list", "--json")
        r("put", "commit result", "put", "-", "--json", stdin=json.dumps(PAYLOAD))
        r("put unchanged", "commit result", "put", "-", "--json", stdin=json.dumps(PAYLOAD))
        r("put not json", "error", "put", "-", "--json", stdin="nope")
        r(
            "add",
            "commit result",
            "add",
            "memory",
            "oncall",
            "-d",
            "Who is on call",
            "--json",
            stdin="Ada, then Kim. See [[nowhere]].\n",
        )
        r("add bad name", "error", "add", "memory", "Bad", "-d", "x", "--json", stdin="x")
        r("show", "show", "show", "memory/billing-service", "--json")
        r("show missing", "error", "show", "memory/nothing", "--json")
        r("list page", "list", "list", "--limit", "1", "--json")
        r("list bad cursor", "error", "list", "--cursor", "garbage", "--json")
        (wiki / "memory" / "broken.md").write_text("no frontmatter\n", encoding="utf-8")
        (wiki / "memory" / "owned.md").write_text(
            "---\nname: owned\ndescription: Has an owner\nowner: ada\n---\nbody\n",
            encoding="utf-8",
        )
        r("list skipped", "list", "list", "--json")
        r("lint problems", "lint", "lint", "--json")
        r("lint one file", "lint", "lint", wiki / "memory" / "billing-service.md", "--json")
        r("commit", "commit result", "commit", "--json")
        r("commit nothing", "commit result", "commit", "--json")
        r("show extra", "show", "show", "memory/owned", "--json")
        r("log", "log", "log", "-n", "3", "--json")
        r("log file", "log", "log", "memory/billing-service", "--json")
        r("log missing", "error", "log", "memory/nothing", "--json")
        r("links", "links", "links", "memory/billing-service", "--json")
        r("links backlinks", "links", "links", "skill/release", "--json")
        r("links broken", "links", "links", "memory/oncall", "--json")
        r("retrieve", "retrieve", "retrieve", "billing payments", "--json")
        r("retrieve unicode", "retrieve", "retrieve", "計費 déploiement", "--json")
        r("retrieve nothing", "retrieve", "retrieve", "zzqqxx", "--json", "--track", "skill")
        r("retrieve bad k", "error", "retrieve", "x", "-k", "0", "--json")
        r("retrieve no query", "error", "retrieve", "--json")
        r("reindex", "reindex", "reindex", "--json")
        r("reindex full", "reindex", "reindex", "--full", "--json")
        r("doctor", "doctor", "doctor", "--json")
        queries = home / "queries.jsonl"
        queries.write_text(
            json.dumps({"query": "billing", "relevant": ["memory/billing-service.md"]}) + "\n"
        )
        r("eval", "eval", "eval", queries, "--json")
        r("eval missing file", "error", "eval", home / "nothing.jsonl", "--json")
        r("project outside", "project", "project", home, "--json")
        code = home / "code"
        subprocess.run([*git, "init", "-q", code], check=True, timeout=30)
        r("project repository", "project", "project", code, "--json")
        r("project the wiki", "project", "project", wiki, "--json")
        r("project not a directory", "error", "project", home / "nothing", "--json")
        r("hooks install", "hooks install", "hooks", "install", "--json")
        r("rm", "commit result", "rm", "memory/oncall", "--json")
        r("rm missing", "error", "rm", "memory/oncall", "--json")
        r("restore", "restore", "restore", "memory/oncall", "--json")
        r("restore never existed", "error", "restore", "memory/nothing", "--json")
        r("untrack-ignored", "untrack-ignored", "untrack-ignored", "--json")

        # A remote and a second device, then one line edited on both: a conflict copy.
        remote, other = home / "remote.git", home / "laptop"
        subprocess.run([*git, "init", "-q", "--bare", remote], check=True, timeout=30)
        r("remote show none", "remote show", "remote", "show", "--json")
        r("remote add", "remote add", "remote", "add", remote, "--json")
        r("sync push", "sync", "sync", "--json")
        r("sync unknown remote", "error", "sync", "--remote", "nope", "--json")
        r("clone", "clone", "clone", remote, other, "--json")
        r("clone into existing", "error", "clone", remote, other, "--json")
        for where, text in ((wiki, "on the desktop"), (other, "on the laptop")):
            note = where / "skill" / "release.md"
            note.write_text(note.read_text().replace("watch the canary", text))
        r("sync desktop", "sync", "--wiki", wiki, "sync", "--json")
        r("sync conflict", "sync", "--wiki", other, "sync", "--json")
        r("remote show", "remote show", "--wiki", other, "remote", "show", "--json")
        r("log after a merge", "log", "--wiki", other, "log", "-n", "3", "--json")
        # One note renamed differently on each device: other_name is the remote's path.
        r(
            "add to rename",
            "commit result",
            "--wiki",
            wiki,
            "add",
            "memory",
            "moving",
            "-d",
            "Moves",
            "--json",
            stdin="x\n",
        )
        r("sync the note out", "sync", "--wiki", wiki, "sync", "--json")
        r("sync the note in", "sync", "--wiki", other, "sync", "--json")
        for where, name in ((wiki, "moved-here"), (other, "moved-there")):
            text = (where / "memory" / "moving.md").read_text()
            (where / "memory" / f"{name}.md").write_text(
                text.replace("name: moving", f"name: {name}")
            )
            (where / "memory" / "moving.md").unlink()
        r("sync a rename", "sync", "--wiki", wiki, "sync", "--json")
        r("sync renamed differently", "sync", "--wiki", other, "sync", "--json")
        r(
            "retrieve a conflict copy",
            "retrieve",
            "--wiki",
            other,
            "retrieve",
            "release laptop desktop",
            "--json",
        )

        # memorize: prepare (with a project, for verify-resources), refuse, commit a conflict.
        session = REPO / "examples" / "memorize" / "session-release.json"
        w = ["--wiki", wiki]
        prepared = r(
            "memorize prepare",
            "memorize prepare",
            *w,
            "memorize",
            "prepare",
            session,
            "--project",
            "billing",
            "--root",
            code,
            "--json",
        )
        run_id = str(prepared.get("run_id"))
        r("memorize prepare bad", "error", *w, "memorize", "prepare", "-", "--json", stdin="{}")
        r("memorize status", "memorize status", *w, "memorize", "status", "--json")
        r("memorize status one", "memorize status", *w, "memorize", "status", run_id, "--json")
        r("memorize status unknown", "error", *w, "memorize", "status", "nosuch", "--json")
        r(
            "memorize verify-resources",
            "memorize verify-resources",
            *w,
            "memorize",
            "verify-resources",
            run_id,
            "--json",
        )
        workspace = Path(str(prepared.get("workspace")))
        (workspace / "memory" / "bad.md").write_text("no frontmatter\n")
        r(
            "memorize commit refused",
            "memorize commit refused",
            *w,
            "memorize",
            "commit",
            run_id,
            "--json",
        )
        (workspace / "memory" / "bad.md").unlink()
        for where, text in ((workspace, "by the run"), (wiki, "by hand")):
            note = where / "memory" / "billing-service.md"
            note.write_text(note.read_text().replace("payments cluster", text))
        r("memorize commit", "memorize commit", *w, "memorize", "commit", run_id, "--json")
        r("memorize commit again", "memorize commit", *w, "memorize", "commit", run_id, "--json")
        r("memorize status committed", "memorize status", *w, "memorize", "status", "--json")
        r("memorize discard", "memorize discard", *w, "memorize", "discard", run_id, "--json")
        r("memorize discard path", "error", *w, "memorize", "discard", "../x", "--json")

        # Agent hosts, on this private HOME only.
        shutil.copytree(
            FIXTURES / "hosts" / "claude-code" / "projects", home / ".claude" / "projects"
        )
        r("hosts detect", "hosts detect", *w, "hosts", "detect", "--json")
        r(
            "hosts detect path",
            "hosts detect",
            *w,
            "hosts",
            "detect",
            FIXTURES / "hosts" / "generic",
            "--json",
        )
        agents = home / "AGENTS.md"
        agents.write_text("# My agents\n")
        r("install", "install", *w, "install", "--host", "generic", "--path", agents, "--json")
        r("install unknown host", "error", *w, "install", "--host", "nope", "--json")
        r(
            "uninstall",
            "uninstall",
            *w,
            "uninstall",
            "--host",
            "generic",
            "--path",
            agents,
            "--json",
        )
        r("schedule", "schedule", *w, "schedule", "--host", "claude-code", "--json")
        r("install claude-code", "install", *w, "install", "--host", "claude-code", "--json")
        r(
            "schedule install",
            "schedule",
            *w,
            "schedule",
            "--host",
            "claude-code",
            "--install",
            "--json",
        )
        r("uninstall claude-code", "uninstall", *w, "uninstall", "--host", "claude-code", "--json")
        r("schedule generic", "error", *w, "schedule", "--host", "generic", "--json")
        r(
            "bridge commit nothing pending",
            "error",
            *w,
            "bridge",
            "commit",
            "--host",
            "claude-code",
            "--json",
        )
        r(
            "bridge prepare",
            "bridge prepare",
            *w,
            "bridge",
            "prepare",
            "--host",
            "claude-code",
            "--json",
        )
        r(
            "bridge prepare resumed",
            "bridge prepare",
            *w,
            "bridge",
            "prepare",
            "--host",
            "claude-code",
            "--json",
        )
        r(
            "bridge commit",
            "bridge commit",
            *w,
            "bridge",
            "commit",
            "--host",
            "claude-code",
            "--json",
        )
        r(
            "bridge prepare nothing new",
            "bridge prepare",
            *w,
            "bridge",
            "prepare",
            "--host",
            "claude-code",
            "--json",
        )

        # Usage errors found by the parser: the error document too.
        r("unknown option", "error", "list", "--bogus", "--json")
        r("not a number", "error", "list", "--limit", "x", "--json")
        r("unknown command", "error", "nocommand", "--json")
        r("missing argument", "error", "show", "--json")


# label -> the exit code it must end with (0 when not listed).
EXIT = {
    "show before init": 3,
    "put not json": 2,
    "add bad name": 2,
    "show missing": 3,
    "list bad cursor": 2,
    "lint problems": 1,
    "log missing": 3,
    "retrieve bad k": 2,
    "retrieve no query": 2,
    "eval missing file": 2,
    "project not a directory": 3,
    "rm missing": 3,
    "restore never existed": 3,
    "sync unknown remote": 3,
    "clone into existing": 4,
    "memorize prepare bad": 2,
    "memorize status unknown": 3,
    "memorize commit refused": 2,
    "memorize discard path": 2,
    "install unknown host": 2,
    "schedule generic": 2,
    "bridge commit nothing pending": 3,
    "init inside the wiki": 4,
    "unknown option": 2,
    "not a number": 2,
    "unknown command": 2,
    "missing argument": 2,
}
DOCTOR_MAY_FAIL = {"doctor"}  # the hash embedder is a test embedder: a check may say so


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Scenario:
    """The whole scenario, run once in a private HOME with the test embedder."""
    home = tmp_path_factory.mktemp("contract-home")
    with pytest.MonkeyPatch.context() as mp:
        for var in list(os.environ):
            if var.startswith("MEMWIKI_") or var in ("GIT_DIR", "GIT_WORK_TREE"):
                mp.delenv(var)
        from conftest import GIT_IDENTITY, fake_crontab

        bindir, _ = fake_crontab(home)
        mp.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        mp.setenv("MEMWIKI_EMBED", "hash")
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.delenv("GIT_CONFIG_GLOBAL", raising=False)
        for var, value in GIT_IDENTITY.items():
            mp.setenv(var, value)
        mp.chdir(home)
        ran = Scenario(home)
        ran.script()
    return ran


def _labels() -> list[str]:
    """The scenario's step labels, read from its source (they are literal strings)."""
    import inspect

    return re.findall(r'r\(\s*"([^"]+)"', inspect.getsource(Scenario.script))


@pytest.mark.parametrize("label", _labels())
def test_each_step_prints_one_document_of_its_shape(scenario, label):
    shape, code, out, err = scenario.steps[label]
    allowed = {0, 1} if label in DOCTOR_MAY_FAIL else {EXIT.get(label, 0)}
    assert code in allowed, f"exit {code}\nstdout: {out}\nstderr: {err}"
    assert "Traceback" not in err, err
    document = json.loads(out)  # exactly one document: json.loads refuses anything after it
    problems = mismatches(document, SHAPES[shape])
    assert not problems, "\n".join(problems) + f"\n{json.dumps(document, indent=1)[:3000]}"
    if shape == "error" or "error" in document:
        assert document["error"]["exit_code"] == code
        assert document["error"]["message"] in err


def test_the_scenario_covers_each_command_that_takes_json(scenario):
    from memwiki.cli.app import app

    covered = {shape for shape, code, _, _ in scenario.steps.values() if code == 0}
    root = typer.main.get_command(app)
    missing = []

    def walk(group, prefix: list[str]) -> None:
        for name, command in group.commands.items():
            path = " ".join([*prefix, name])
            if getattr(command, "commands", None) is not None:
                walk(command, [*prefix, name])
            elif any("--json" in p.opts for p in command.params):
                shape = "commit result" if path in ("put", "add", "commit", "rm") else path
                if shape not in covered:
                    missing.append(path)

    walk(root, [])
    assert not missing, f"commands with --json that no step ran successfully: {missing}"


def test_show_json_always_has_extra(scenario):
    """Bug: `show --json` left `extra` out for a file without unknown frontmatter keys, so an
    agent's data["extra"] failed on most notes; it is {} there now."""
    plain = json.loads(scenario.steps["show"][2])
    assert plain["extra"] == {}
    assert json.loads(scenario.steps["show extra"][2])["extra"] == {"owner": "ada"}


def test_the_scenario_reaches_the_cases_it_names(scenario):
    """The steps that stand for a conflict, a next page or a skipped file really have one."""
    doc = {label: json.loads(out) for label, (_, _, out, _) in scenario.steps.items()}
    assert doc["list page"]["next_cursor"]
    assert doc["list skipped"]["skipped"]
    assert doc["retrieve"]["results"] and doc["retrieve nothing"]["results"] == []
    assert doc["reindex full"]["problems"]
    assert doc["sync conflict"]["conflicts"] and doc["sync conflict"]["copy_of"]
    assert doc["memorize commit"]["conflicts"]
    assert doc["memorize commit again"]["already_committed"]
    assert doc["memorize verify-resources"]["projects"]
    assert doc["bridge prepare"]["sessions"] and not doc["bridge prepare"]["nothing_new"]
    assert doc["bridge prepare nothing new"]["nothing_new"]
    assert doc["log"][0]["changes"]
    (renamed,) = doc["sync renamed differently"]["conflicts"]
    assert (renamed["kind"], renamed["other_name"]) == (
        "renamed-differently",
        "memory/moved-here.md",
    )
    assert doc["links broken"]["outgoing"][0]["target"] is None
    copies = [x for x in doc["retrieve a conflict copy"]["results"] if x["conflict"]]
    assert copies and copies[0]["conflict_of"] == "skill/release.md"
    assert (
        doc["install claude-code"]["changes"] and doc["schedule install"]["action"] == "installed"
    )
    assert doc["uninstall claude-code"]["schedule"]["action"] == "removed"
    assert doc["project repository"]["project"] == "code"
    assert doc["project the wiki"]["project"] is None
    second = doc["init elsewhere with a remote"]
    assert "remote" in second and ("config_file" in second or "hint" in second)


def test_an_internal_error_is_an_error_document_too(cli, monkeypatch, tmp_path):
    """A bug (exit 70) under --json still prints the error document on stdout."""

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("memwiki.project.identify", boom)
    code, out, err = cli("project", tmp_path, "--json")
    assert code == 70
    assert json.loads(out) == {"error": {"message": "RuntimeError: boom", "exit_code": 70}}
    assert err == "memwiki: internal error: RuntimeError: boom (run with --debug for details)\n"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_key_of_a_shape_is_named_in_its_docs(shape):
    text = "\n".join(doc_section(f, h) for f, h in DOCUMENTED[shape])
    unnamed = sorted(
        k
        for k in key_names(SHAPES[shape])
        if not re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", text)
    )
    assert not unnamed, f"{shape}: keys the docs never name: {unnamed}"


def test_a_run_an_older_memwiki_left_pending_resumes_with_every_key(cli, tmp_path, monkeypatch):
    """Bug: a bridge run prepared before transcripts had project/touched resumed without
    them, so one upgrade's first resumed run broke the shape."""
    monkeypatch.setenv("MEMWIKI_EMBED", "hash")
    home = Path(os.environ["HOME"])
    shutil.copytree(FIXTURES / "hosts" / "claude-code" / "projects", home / ".claude" / "projects")
    wiki = tmp_path / "wiki"
    assert cli("init", wiki, "--json")[0] == 0
    prepare = ("--wiki", wiki, "bridge", "prepare", "--host", "claude-code", "--json")
    assert cli(*prepare)[0] == 0
    pending = wiki / ".memwiki" / "hosts" / "claude-code" / "pending.json"
    data = json.loads(pending.read_text())
    for transcript in data["run"]["transcripts"]:
        del transcript["project"], transcript["touched"]
    pending.write_text(json.dumps(data))
    code, out, _ = cli(*prepare)
    resumed = json.loads(out)
    assert code == 0 and resumed["resumed"]
    assert not mismatches(resumed, SHAPES["bridge prepare"])
