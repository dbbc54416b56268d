"""onnxruntime's telemetry stays off: no device id, no event queue, nothing to send.

onnxruntime 1.32 (Linux) starts Microsoft's 1DS telemetry at import: it writes a device id
and an sqlite queue of events (the process path, the OS) under
~/.cache/Microsoft/DeveloperTools/.onnxruntime/ for an events.data.microsoft.com collector.
memwiki promises no network and no files outside the wiki and its caches; memwiki.embed
sets ORT_DISABLE_TELEMETRY before onnxruntime is imported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memwiki.wiki import Wiki


def test_a_real_model_retrieve_leaves_no_onnxruntime_telemetry(tmp_path, run_memwiki, monkeypatch):
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)  # the child decides, not us
    wiki, _ = Wiki.init(tmp_path / "w")
    got = run_memwiki("--wiki", wiki.root, "add", "memory", "oncall", "-d", "Who is on call",
                      input="# Oncall\nKim is on call this week.\n")  # fmt: skip
    assert got.returncode == 0, got.stderr
    got = run_memwiki("--wiki", wiki.root, "retrieve", "who is on call", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["mode"] == "hybrid"  # the model ran
    for cache in {Path(os.environ["HOME"]) / ".cache", Path(os.environ["XDG_CACHE_HOME"])}:
        assert not (cache / "Microsoft").exists(), sorted(p.name for p in cache.iterdir())
