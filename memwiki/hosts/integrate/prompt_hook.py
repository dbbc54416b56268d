"""`memwiki hook claude-code`: add retrieved memory to a prompt, within a budget, failing open."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ...config import Config
from ...errors import MemwikiError
from ...layout import is_wiki
from ...timestamps import now_iso

EVENT = "UserPromptSubmit"
# Larger additional context is cut to a preview by Claude Code (hosts.md §8: 10k chars arrived).
MAX_CONTEXT_CHARS = 9500
# The retrieval thread's name, so run_hook_process can tell that one outlived its budget.
WORKER_NAME = "memwiki-hook-retrieve"
CUT_NOTE = "\n[memwiki: cut to fit; run `memwiki retrieve` for the rest]"
# The hook's query is the prompt's first and last QUERY_END_CHARS characters. BM25's time
# grows with the query's distinct words: a 100 KB pasted log took 1.5 s on a 2,000-file
# wiki (the whole budget), 4,000 characters about 60 ms; and a question usually stands
# before or after what was pasted.
QUERY_END_CHARS = 2000


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
        from ...logfile import append_line  # bounded: a year of prompts fills no disk

        append_line(Path(log_path), f"{stamp} hook claude-code: {reason} ({elapsed} ms)")
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
    if isinstance(exc, ImportError) and exc.name:
        # A module name is no prompt text, and it says what the installation lacks.
        return f"retrieve failed: {type(exc).__name__} ({exc.name[:100]}): reinstall memwiki"
    return f"retrieve failed: {type(exc).__name__}"


def clip(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """text cut at a line boundary so that it fits the hook output limit."""
    if len(text) <= limit:
        return text
    room = limit - len(CUT_NOTE)
    cut = text.rfind("\n", 0, room)
    return text[: cut if cut > 0 else room] + CUT_NOTE


def hook_query(prompt: str, ends: int = QUERY_END_CHARS) -> str:
    """The prompt as the hook searches for it: whole, or its first and last `ends` characters."""
    if len(prompt) <= 2 * ends:
        return prompt
    # Cut at whitespace, so that no half word becomes a query term.
    head = prompt[:ends].rsplit(None, 1)[0]
    tail = prompt[-ends:].split(None, 1)[-1]
    return f"{head} {tail}"


def hook_output(context: str, ascii_only: bool = False) -> str:
    """The stdout that adds context to this turn (hookSpecificOutput.additionalContext);
    ascii_only escapes every other character, for a stdout that is not UTF-8."""
    out = {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": context}}
    return json.dumps(out, ensure_ascii=ascii_only)


# Writing the answer and leaving the process take this long on a loaded machine; the
# retrieval's own deadline leaves a little more for fusion, sections and JSON.
EXIT_MARGIN_S = 0.06
ANSWER_MARGIN_S = 0.15


def run_claude_code_hook(
    stdin_text: str,
    config: Config,
    retrieve_fn: Callable[[str, str | None], str],
    budget_s: float,
    log_path: Path | None,
    started: float | None = None,
) -> tuple[int, str]:
    """(exit code, stdout) for one UserPromptSubmit call; every failure is exit 0, no output.

    The budget counts from `started` (the process start, when the caller knows it).
    retrieve_fn(prompt, cwd) gets the payload's `cwd` (None when absent), so the memory
    follows the project the session works in. It runs in a daemon thread: when the budget
    runs out the hook answers without it, and the caller should exit promptly (a daemon
    thread does not hold the process).
    """
    started = time.monotonic() if started is None else started
    try:
        payload = json.loads(stdin_text)
    except (ValueError, TypeError):
        return _fail(log_path, "malformed input: not JSON", started)
    if not isinstance(payload, dict):
        return _fail(log_path, "malformed input: not a JSON object", started)
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return _fail(log_path, "malformed input: no prompt", started)
    from ...recallfile import mend_surrogates

    clean = mend_surrogates(prompt)
    if clean != prompt:  # it would reach stdout in the answer, which UTF-8 cannot encode
        _log(log_path, "malformed input: unpaired surrogate in the prompt, replaced", started)
        prompt = clean
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
    worker.join(max(0.0, started + budget_s - EXIT_MARGIN_S - time.monotonic()))
    if worker.is_alive():
        return _fail(log_path, f"timeout after {int(budget_s * 1000)} ms budget", started)
    if "error" in box:
        return _fail(log_path, _describe(box["error"]), started)  # type: ignore[arg-type]
    result = box.get("result")
    if not isinstance(result, str):
        return _fail(log_path, f"retrieve returned {type(result).__name__}, not text", started)
    if not result.strip():
        return 0, ""
    from ...process import writes_utf8

    # Under a Latin-1 locale a note in Chinese could not be written: the prompt lost its memory.
    return 0, hook_output(clip(result), ascii_only=not writes_utf8(sys.stdout))


def _index_work_left(sidecar: Path, status: dict) -> bool:
    """Whether the retrieval that ran out of time was doing index work (or had no index)."""
    if status.get("needs_build") or status.get("stage") == "updating":
        return True
    return not (sidecar / "index" / "state.pkl").exists()


def start_background_reindex(wiki_root: Path, sidecar: Path | None = None) -> bool:
    """Build the index in one detached, lock-guarded process, so that a later prompt has it.

    The hook itself must leave within its budget, and leaving kills its own build half-way;
    without this a wiki whose first build takes longer than the budget never gets an index.
    """
    from ...index import background

    return background.start(wiki_root, sidecar or Path(wiki_root) / ".memwiki")


def retrieve_for(
    config: Config, deadline: float | None = None, status: dict | None = None
) -> Callable[[str, str | None], str]:
    """The hook's retrieval: the configured wiki's markdown block, or "" when nothing matched.

    Progressive: BM25 at once, vectors only if ready by deadline, missing vectors left to
    one background build (index/progressive.py).
    """

    def retrieve(prompt: str, cwd: str | None = None) -> str:
        from ...project import parse_map, scope, working_directory
        from ...wiki import Wiki

        wiki = Wiki.open(config.wiki_path, config)
        # The payload's cwd is the session's project; the hook's own cwd is only a fallback.
        mapping = parse_map(config.projects)
        project = scope("auto", cwd or working_directory(), mapping, config.home, wiki.root)
        result = wiki.retrieve(
            hook_query(prompt),
            notify=lambda _msg: None,
            project=project,
            deadline=deadline,
            background=True,
            status=status,
            defer=True,
        )
        if status is not None:  # an edit the answer laid over: written once it is out
            status["write_later"] = result.write_later
        return result.to_markdown() if result.results else ""

    return retrieve


def run_hook_process(load_config: Callable[[], Config], started: float | None = None) -> None:
    """The whole `memwiki hook claude-code` process: stdin to stdout, then leave safely.

    load_config is the entry point's loader: it runs inside the fail-open guard, so a
    broken config file also lets the prompt through. The budget counts from `started`
    (the process start, from the entry point). This function may end the process itself
    (os._exit) when a worker thread outlived the budget or stdout is gone.
    """
    import os
    import sys

    started = time.monotonic() if started is None else started
    out = ""
    cfg = None
    log = None
    status: dict = {}
    try:
        stdin_text = sys.stdin.buffer.read().decode("utf-8", "replace")
        cfg = load_config()
        budget = cfg.hook_budget_s
        # Without a wiki there is no .memwiki/ to log into, and none is created for a log
        # (nor in a code repository that the configuration names by mistake).
        log = hook_log_path(cfg) if is_wiki(cfg.wiki_path) else None
        retrieve_fn = retrieve_for(cfg, started + budget - ANSWER_MARGIN_S, status)
        _, out = run_claude_code_hook(stdin_text, cfg, retrieve_fn, budget, log, started)
    except BaseException as exc:  # the prompt must reach the model whatever happens here
        _log(log, f"internal error: {type(exc).__name__}", started)
        out = ""
    try:
        if out:
            sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except OSError:
        # Nobody reads our answer any more; exiting now keeps Python's final flush of the
        # broken pipe from turning exit 0 into 120.
        os._exit(0)
    except Exception as exc:  # an answer stdout cannot encode: nothing of it was written
        _log(log, f"answer not written: {type(exc).__name__}", started)
    if any(t.name == WORKER_NAME and t.is_alive() for t in threading.enumerate()):
        # Past its budget even for BM25. Only when that was index work (a first build, a
        # repair, many changed files) is it finished in the background; a retrieval that
        # was merely slow on a busy machine leaves nothing to do. Then leave at once: a
        # retrieval inside native code (onnxruntime) can abort the interpreter's shutdown.
        try:
            if cfg is not None and is_wiki(cfg.wiki_path):  # noqa: SIM102
                # the wiki's own sidecar, or this user's index of a wiki it cannot write
                sidecar = cfg.sidecar_path
                if _index_work_left(sidecar, status):
                    start_background_reindex(cfg.wiki_path, sidecar)
        except BaseException:  # failing open matters more than the background build
            pass
        sys.stderr.flush()
        os._exit(0)
    write_later = status.get("write_later")
    if write_later is not None:  # the answer is out: the edit it read is written now (by
        # the background reindex while a vector thread still runs); failing open: a write
        # that cannot start is found again by the next command
        with contextlib.suppress(BaseException):
            write_later()
    from ...index.progressive import VECTOR_THREAD

    if any(t.name == VECTOR_THREAD and t.is_alive() for t in threading.enumerate()):
        os._exit(0)
