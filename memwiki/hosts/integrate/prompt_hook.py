"""`memwiki hook claude-code`: add retrieved memory to a prompt, within a budget, failing open."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ...config import Config
from ...errors import MemwikiError
from ...timestamps import now_iso

EVENT = "UserPromptSubmit"
# Larger additional context is cut to a preview by Claude Code (hosts.md §8: 10k chars arrived).
MAX_CONTEXT_CHARS = 9500
# The retrieval thread's name, so run_hook_process can tell that one outlived its budget.
WORKER_NAME = "memwiki-hook-retrieve"
CUT_NOTE = "\n[memwiki: cut to fit; run `memwiki retrieve` for the rest]"


def hook_log_path(config: Config) -> Path:
    """<wiki>/.memwiki/logs/hook.log."""
    return config.logs_dir / "hook.log"


def _log(log_path: Path | None, reason: str, started: float) -> None:
    # One line, no prompt or memory text: only what went wrong and how long it took.
    if log_path is None:
        return
    stamp = now_iso()
    elapsed = int((time.monotonic() - started) * 1000)
    try:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} hook claude-code: {reason} ({elapsed} ms)\n")
    except OSError:
        pass  # failing open includes an unwritable log


def _fail(log_path: Path | None, reason: str, started: float) -> tuple[int, str]:
    _log(log_path, reason, started)
    return 0, ""


def _describe(exc: BaseException) -> str:
    # memwiki's own messages are one line and name no content; other exceptions may carry
    # arbitrary text (the prompt), so only their type is logged.
    if isinstance(exc, MemwikiError):
        return f"retrieve failed: {exc.message.splitlines()[0][:200]}"
    return f"retrieve failed: {type(exc).__name__}"


def clip(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """text cut at a line boundary so that it fits the hook output limit."""
    if len(text) <= limit:
        return text
    room = limit - len(CUT_NOTE)
    cut = text.rfind("\n", 0, room)
    return text[: cut if cut > 0 else room] + CUT_NOTE


def hook_output(context: str) -> str:
    """The stdout that adds context to this turn (hookSpecificOutput.additionalContext)."""
    out = {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": context}}
    return json.dumps(out, ensure_ascii=False)


def run_claude_code_hook(
    stdin_text: str,
    config: Config,
    retrieve_fn: Callable[[str, str | None], str],
    budget_s: float,
    log_path: Path | None,
) -> tuple[int, str]:
    """(exit code, stdout) for one UserPromptSubmit call; every failure is exit 0, no output.

    retrieve_fn(prompt, cwd) gets the payload's `cwd` (None when absent), so the memory
    follows the project the session works in. It runs in a daemon thread: when the budget runs out the hook answers without
    it, and the caller should exit promptly (a daemon thread does not hold the process).
    """
    started = time.monotonic()
    try:
        payload = json.loads(stdin_text)
    except (ValueError, TypeError):
        return _fail(log_path, "malformed input: not JSON", started)
    if not isinstance(payload, dict):
        return _fail(log_path, "malformed input: not a JSON object", started)
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return _fail(log_path, "malformed input: no prompt", started)
    if config.bridging_run:
        return 0, ""  # the scheduled memorize run works from its job files, not from memory
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["result"] = retrieve_fn(prompt, cwd or None)
        except BaseException as exc:  # fail open on anything the retrieval raises
            box["error"] = exc

    worker = threading.Thread(target=work, name=WORKER_NAME, daemon=True)
    worker.start()
    worker.join(max(0.0, budget_s))
    if worker.is_alive():
        return _fail(log_path, f"timeout after {int(budget_s * 1000)} ms budget", started)
    if "error" in box:
        return _fail(log_path, _describe(box["error"]), started)  # type: ignore[arg-type]
    result = box.get("result")
    if not isinstance(result, str):
        return _fail(log_path, f"retrieve returned {type(result).__name__}, not text", started)
    if not result.strip():
        return 0, ""
    return 0, hook_output(clip(result))


def start_background_reindex(wiki_root: Path) -> None:
    """After a timed-out hook, build the index in a detached process so the next prompt has one.

    The hook itself must leave within its budget, and leaving kills its own build half-way;
    without this a wiki whose first build takes longer than the budget never gets an index.
    The lock may still be held by this very hook's worker thread, so the new process
    simply waits for it (index updates take the lock blocking); a second one started by a
    concurrent hook finds nothing left to do.
    """
    import subprocess
    import sys

    subprocess.Popen(
        [sys.executable, "-m", "memwiki", "--wiki", str(wiki_root), "reindex"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the hook and is not killed with it
    )


def retrieve_for(config: Config) -> Callable[[str, str | None], str]:
    """The hook's retrieval: the configured wiki's markdown block, or "" when nothing matched."""

    def retrieve(prompt: str, cwd: str | None = None) -> str:
        import os

        from ...project import parse_map, scope
        from ...wiki import Wiki

        wiki = Wiki.open(config.wiki_path, config)
        # The payload's cwd is the session's project; the hook's own cwd is only a fallback.
        mapping = parse_map(config.projects)
        project = scope("auto", cwd or os.getcwd(), mapping, config.home, wiki.root)
        result = wiki.retrieve(prompt, notify=lambda _msg: None, project=project)
        return result.to_markdown() if result.results else ""

    return retrieve


def run_hook_process(load_config: Callable[[], Config]) -> None:
    """The whole `memwiki hook claude-code` process: stdin to stdout, then leave safely.

    load_config is the entry point's loader: it runs inside the fail-open guard, so a
    broken config file also lets the prompt through. This function may end the process
    itself (os._exit) when a worker thread outlived the budget or stdout is gone.
    """
    import os
    import sys

    out = ""
    cfg = None
    try:
        stdin_text = sys.stdin.buffer.read().decode("utf-8", "replace")
        cfg = load_config()
        # Without a wiki there is no .memwiki/ to log into, and none is created for a log.
        log = hook_log_path(cfg) if (cfg.wiki_path / ".git").exists() else None
        _, out = run_claude_code_hook(stdin_text, cfg, retrieve_for(cfg), cfg.hook_budget_s, log)
    except BaseException:  # the prompt must reach the model whatever happens here
        out = ""
    try:
        if out:
            sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except OSError:
        # Nobody reads our answer any more; exiting now keeps Python's final flush of the
        # broken pipe from turning exit 0 into 120.
        os._exit(0)
    if any(t.name == WORKER_NAME and t.is_alive() for t in threading.enumerate()):
        # Past its budget: usually a first index build. Finish it in the background, then
        # leave at once: a retrieval inside native code (onnxruntime) can abort the
        # interpreter's shutdown with exit 134.
        try:
            if cfg is not None and (cfg.wiki_path / ".git").exists():
                start_background_reindex(cfg.wiki_path)
        except BaseException:  # failing open matters more than the background build
            pass
        sys.stderr.flush()
        os._exit(0)
