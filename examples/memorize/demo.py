"""End to end: a wiki with one skill, two sessions, the scripted executor, one commit.

Usage: python demo.py [--wiki DIR]   (default: a new temporary directory)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memwiki import memorize
from memwiki.wiki import Wiki

HERE = Path(__file__).resolve().parent

SKILL = """---
name: release-billing-service
description: How to cut and ship a release of the billing service
tags: [release, billing]
---
# Release the billing service

## Steps
1. `uv run pytest -q` must pass on `main`.
2. Tag the release and push the tag: `git tag v<version> && git push origin v<version>`.
3. The release pipeline builds and deploys the tag to production.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wiki", type=Path, default=None)
    args = parser.parse_args()
    root = args.wiki or Path(tempfile.mkdtemp(prefix="memwiki-demo-")) / "wiki"

    wiki, _ = Wiki.init(root)
    if not (wiki.root / "skill" / "release-billing-service.md").exists():
        (wiki.root / "skill" / "release-billing-service.md").write_text(SKILL, encoding="utf-8")
        wiki.commit("Add the release skill by hand\n")

    sessions = [HERE / "session-flaky-test.json", HERE / "session-release.json"]
    prepared = memorize.prepare(wiki, sessions)
    print("prepare:", json.dumps(prepared.to_dict(), indent=2))

    executor = [sys.executable, str(HERE / "executor.py"), prepared.executor_prompt]
    subprocess.run(executor, check=True)

    result = memorize.commit(wiki, prepared.run_id)
    print("commit:", json.dumps(result.to_dict(), indent=2))
    log = ["git", "log", "--graph", "--format=%h %s%n%(trailers)"]
    print(subprocess.run(log, cwd=wiki.root, capture_output=True, text=True, check=True).stdout)
    for rel in result.created + result.updated:
        print(f"==> {rel}\n{(wiki.root / rel).read_text(encoding='utf-8')}")
    print(f"wiki: {wiki.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
