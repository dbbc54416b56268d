"""Run ids, run directories and the small JSON state file each run keeps.

Layout of one run (everything under the git-ignored sidecar)::

    <wiki>/.memwiki/runs/<run-id>/
        run.json          this module's state file, written atomically
        workspace/        git worktree of the wiki on branch memwiki/run/<run-id>
        transcripts/      NN-messages.md and NN-full.jsonl per session
        jobs/             NN-memory.md ..., then NN-skill.md ...
        EXECUTOR.md       the executor prompt
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import timestamps
from ..errors import InvalidInput, NotFound, StorageError
from ..fsutil import atomic_write_text

RUNS_DIR = "runs"
STATE_FILE = "run.json"
WORKSPACE = "workspace"
BRANCH_PREFIX = "memwiki/run/"
# The commit trailer naming a run's sessions (commit.py writes it, prepare reads it back).
SESSIONS_TRAILER = "Memwiki-Sessions: "
STATE_FORMAT = 1

RUN_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")

# Internal phases, in order. `status` maps them to the public states
# prepared / edited / committed / incomplete.
PREPARING = "preparing"  # prepare started; never finished if still here
PREPARED = "prepared"  # workspace ready for the executor
COMMITTING = "committing"  # run commit made on the branch, merge not yet recorded
MERGING = "merging"  # merge commit made, wiki not yet moved to it
COMMITTED = "committed"  # merged into the wiki; workspace and branch removed


now_iso = timestamps.now_iso


def new_run_id() -> str:
    """A fresh run id: UTC time plus random hex, sortable and safe as a path and a ref."""
    return f"{timestamps.now_compact()}-{secrets.token_hex(3)}"


def check_run_id(run_id: str) -> str:
    """Return run_id if it is a plain run id; refuse anything with path syntax."""
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput("run id is missing")
    if any(ch in run_id for ch in "/\\\x00") or run_id.startswith(".") or ".." in run_id:
        raise InvalidInput(f"refused run id {run_id!r}: run ids are names, not paths")
    if not RUN_ID_RE.match(run_id):
        raise InvalidInput(
            f"refused run id {run_id!r}: use lowercase letters, digits and hyphens (at most 64)"
        )
    return run_id


def runs_root(sidecar: Path) -> Path:
    """<wiki>/.memwiki/runs."""
    return Path(sidecar) / RUNS_DIR


def run_dir(sidecar: Path, run_id: str) -> Path:
    """The directory of one run, refusing ids that would land outside .memwiki/runs/."""
    check_run_id(run_id)
    root = runs_root(sidecar)
    candidate = root / run_id
    resolved_root = root.resolve()
    if candidate.is_symlink() or candidate.resolve().parent != resolved_root:
        raise InvalidInput(f"refused run id {run_id!r}: it does not lead into {root}")
    return candidate


def branch_name(run_id: str) -> str:
    """The run's git branch."""
    return BRANCH_PREFIX + check_run_id(run_id)


@dataclass
class RunState:
    """What run.json records about one run."""

    run_id: str
    phase: str
    created: str
    updated: str
    base_commit: str | None = None
    sessions: list[dict[str, Any]] = field(default_factory=list)
    transcripts: list[dict[str, str | None]] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    executor_prompt: str | None = None
    redactions: dict[str, int] = field(default_factory=dict)
    run_commit: str | None = None
    merge_commit: str | None = None
    created_files: list[str] = field(default_factory=list)
    updated_files: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    format: int = STATE_FORMAT

    @property
    def branch(self) -> str:
        """The run's git branch."""
        return branch_name(self.run_id)

    @property
    def source_ids(self) -> list[str]:
        """The session ids this run learns from, in order."""
        return [s["source_id"] for s in self.sessions]


PHASES = (PREPARING, PREPARED, COMMITTING, MERGING, COMMITTED)


class DamagedRun(StorageError):
    """run.json cannot be read as a run's state (the run can only be discarded)."""

    def __init__(self, path: Path, why: str):
        self.why = why
        super().__init__(
            f"{path}: {why}; the run can only be discarded "
            f"(`memwiki memorize discard {path.parent.name}`)"
        )


def load_state(directory: Path) -> RunState | None:
    """Read run.json; None when it is missing (a prepare killed before its first write).

    A file that is not a run's state (truncated, not JSON, another shape, a field of the
    wrong type, an unknown phase) is DamagedRun: it used to end status, commit and discard
    with an internal error, or a commit of an unknown phase ran anyway.
    """
    path = Path(directory) / STATE_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DamagedRun(path, f"unreadable run state: {exc}") from None
    problem = _shape_problem(raw)
    if problem is not None:
        raise DamagedRun(path, f"damaged run state: {problem}")
    known = set(RunState.__dataclass_fields__)
    try:
        return RunState(**{k: v for k, v in raw.items() if k in known})
    except TypeError as exc:
        raise DamagedRun(path, f"incomplete run state: {exc}") from None


def _shape_problem(raw: object) -> str | None:
    """What makes raw not a run's state, or None."""
    if not isinstance(raw, dict):
        return f"a JSON {type(raw).__name__}, not an object"
    if raw.get("phase") not in PHASES:
        return f"unknown phase {raw.get('phase')!r}"
    kinds = {"list": list, "dict": dict, "int": int}
    for name, f in RunState.__dataclass_fields__.items():
        value = raw.get(name)
        if value is None:
            continue
        outer, _, inner = str(f.type).partition("[")  # annotations are strings here
        if not isinstance(value, kinds.get(outer, str)):
            return f"{name!r} is a JSON {type(value).__name__}"
        if isinstance(value, list):  # and each item: list[str] or list[dict[...]]
            item = kinds.get(inner.split("[")[0].rstrip("]"), str)
            if not all(isinstance(v, item) for v in value):
                return f"an item of {name!r} is not a JSON {'object' if item is dict else 'string'}"
    return None


def save_state(directory: Path, state: RunState) -> None:
    """Write run.json atomically, so a killed process leaves the old or the new state."""
    state.updated = now_iso()
    text = json.dumps(asdict(state), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_text(Path(directory) / STATE_FILE, text)


def require_run_dir(sidecar: Path, run_id: str) -> Path:
    """The run's directory, or NotFound."""
    directory = run_dir(sidecar, run_id)
    if not directory.is_dir():
        raise NotFound(f"no memorize run {run_id!r} (see `memwiki memorize status`)")
    return directory
