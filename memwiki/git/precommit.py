"""pre-commit set-up of a wiki: the `.pre-commit-config.yaml` memwiki writes, and `pre-commit install`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StorageError

if TYPE_CHECKING:
    from ..wiki import Wiki

HOOK_IDS = ("memwiki-lint", "memwiki-reindex")
GET_PRE_COMMIT = "pip install pre-commit"
INSTALL_TIMEOUT_S = 120


@dataclass
class HookSetup:
    """What setting up the hooks of one wiki did."""

    wiki: str
    config: str
    config_written: bool
    installed: bool
    pre_commit: str | None
    message: str

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "wiki": self.wiki,
            "config": self.config,
            "config_written": self.config_written,
            "installed": self.installed,
            "pre_commit": self.pre_commit,
            "hooks": list(HOOK_IDS),
            "message": self.message,
        }


def _own_scripts() -> Path | None:
    """The folder of this memwiki's own executables (its venv's bin), if it has one there."""
    import sysconfig

    scripts = Path(sysconfig.get_path("scripts"))
    return scripts if (scripts / "memwiki").exists() else None


def find_pre_commit() -> str | None:
    """The `pre-commit` executable on PATH, or None."""
    return shutil.which("pre-commit")


def hook_env(env: dict[str, str]) -> dict[str, str]:
    """env with this memwiki's folder first on PATH: the hooks' `memwiki` is the one running.

    Bug it prevents: run by its full path (not on PATH), sync ran the hooks, which could not
    find `memwiki`, and reported every valid edit as refused by the lint hook.
    """
    scripts = _own_scripts()
    if scripts is None:
        return env
    path = env.get("PATH", os.defpath)
    return {**env, "PATH": os.pathsep.join([str(scripts), path])}


def run_install(wiki: Wiki, config_written: bool = False) -> HookSetup:
    """Run `pre-commit install` in the wiki; when pre-commit is missing, say how to get it."""
    from ..wiki import PRE_COMMIT_CONFIG

    exe = find_pre_commit()
    setup = HookSetup(str(wiki.root), PRE_COMMIT_CONFIG, config_written, False, exe, "")
    if exe is None:
        setup.message = (
            f"pre-commit is not installed, so the hooks are not active: run `{GET_PRE_COMMIT}`, "
            "then `memwiki hooks install`"
        )
        return setup
    try:
        done = subprocess.run(
            [exe, "install"],
            cwd=wiki.root,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=INSTALL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env=wiki.config.child_env,  # without a GIT_DIR naming another repository
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StorageError(f"`pre-commit install` could not run: {exc}") from None
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        last = output.splitlines()[-1] if output else f"exit code {done.returncode}"
        if "hooksPath" in output:
            last = _hooks_path_problem(wiki.root, wiki.config.child_env) or last
        raise StorageError(f"`pre-commit install` failed in {wiki.root}: {last}")
    setup.installed = True
    setup.message = output.splitlines()[-1] if output else "pre-commit installed"
    return setup


def _hooks_path_problem(root: Path, env: dict[str, str]) -> str | None:
    """Why pre-commit refused: where core.hooksPath is set and what that leaves, or None.

    pre-commit's own hint (`git config --unset-all core.hooksPath`) does nothing in the
    wiki when the setting is in ~/.gitconfig (husky and similar set it there), and with
    --global it would turn off the developer's hooks in every repository.
    """
    from .transport import git_config

    said = git_config("git", ["--show-origin", "--get", "core.hooksPath"], cwd=root, env=env)
    origin, _, value = said.strip().partition("\t")
    if not origin.startswith("file:"):
        return None
    where = Path(origin.removeprefix("file:"))
    if not where.is_absolute():
        where = Path(root) / where
    if where.resolve() == (Path(root) / ".git" / "config").resolve():
        return f"the wiki's core.hooksPath is {value}: `git -C {root} config --unset-all core.hooksPath`"
    return (
        f"core.hooksPath is {value} in {where}, so git runs only the hooks there and pre-commit "
        "will not install the wiki's: they stay off while it is set (memwiki's own commands "
        "still check what they write)"
    )


def is_memwikis_own(root: Path) -> bool:
    """True when the wiki's .pre-commit-config.yaml is exactly the one memwiki writes.

    Any other config (a team's own rules, or a teammate's push) can run any command on
    every commit once installed: only memwiki's own is installed without being asked.
    """
    from ..templating import load
    from ..wiki import PRE_COMMIT_CONFIG

    try:
        text = (Path(root) / PRE_COMMIT_CONFIG).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return text.replace("\r\n", "\n") == load("wiki/pre-commit-config.yaml")


def install(wiki: Wiki) -> HookSetup:
    """Complete the wiki's layout (its pre-commit config, committed) and run `pre-commit install`."""
    from ..wiki import PRE_COMMIT_CONFIG, Wiki

    had = (wiki.root / PRE_COMMIT_CONFIG).exists()
    # Wiki.init on an existing wiki writes and commits only the layout files that are
    # missing, leaving the person's uncommitted work alone.
    Wiki.init(wiki.root)
    return run_install(wiki, config_written=not had)


# ---------------------------------------------------------------- hooks as sync's checks

HOOK_RUN_TIMEOUT_S = 120
MAX_SINGLE_RUNS = 20  # files checked one by one after a refused batch


def _installed_hook(root: Path) -> str | None:
    """The wiki's git pre-commit hook script when it is pre-commit's (`pre-commit install`)."""
    hook = Path(root) / ".git" / "hooks" / "pre-commit"
    try:
        script = hook.read_text(encoding="utf-8", errors="replace") if hook.is_file() else ""
    except OSError:
        return None
    return script if "pre-commit" in script else None


_INSTALL_PYTHON = re.compile(r"^INSTALL_PYTHON=(.+)$", re.MULTILINE)


def hook_command(root: Path) -> list[str] | None:
    """How `git commit` would run pre-commit in this wiki (the installed hook's own Python
    first, as its script does, then pre-commit on PATH), or None when it would not."""
    script = _installed_hook(root)
    if script is None:
        return None
    found = _INSTALL_PYTHON.search(script)
    python = found.group(1).strip().strip("'\"") if found else ""
    if python and os.access(python, os.X_OK):
        return [python, "-m", "pre_commit"]
    exe = find_pre_commit()
    return [exe] if exe else None


def _run_hooks(cmd: list[str], root: Path, paths: list[str], env: dict) -> tuple[bool, str]:
    env_skip = {"SKIP": "memwiki-reindex"}  # a rebuild of the cache is not a check
    try:
        done = subprocess.run(
            [*cmd, "run", "--hook-stage", "pre-commit", "--files", *paths],
            cwd=root,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=HOOK_RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env={**env, **env_skip},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"pre-commit could not run: {exc}"
    lines = [ln.strip() for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    failed = [ln for ln in lines if ln.endswith("Failed")]
    # A hook that could not start (pre-commit's own "Executable `x` not found") says so
    # before any line of the hook's output; that line is the reason, not the first "a: b".
    broken = [ln for ln in lines if ln.startswith("Executable `") or "not found" in ln]
    detail = next((ln for ln in lines if ":" in ln and not ln.startswith("-")), "")
    if broken:
        detail = broken[0]
    reason = (failed[0].split(".")[0].strip() if failed else "a hook failed") + (
        f": {detail}" if detail else ""
    )
    return done.returncode == 0, reason


def refused_by_hooks(root: Path, paths: list[str], env: dict[str, str]) -> list[dict]:
    """The paths the wiki's installed pre-commit hooks refuse, each with why ([] if none).

    env is the environment pre-commit runs in (the configuration's child_env).
    """
    cmd = hook_command(Path(root))
    present = [p for p in paths if (Path(root) / p).is_file()]
    if not present or cmd is None:
        return []
    env = hook_env(env)
    ok, reason = _run_hooks(cmd, Path(root), present, env)
    if ok:
        return []
    refused = []
    for n, path in enumerate(present):
        if n >= MAX_SINGLE_RUNS:
            refused.append({"path": path, "problem": f"pre-commit refused the batch ({reason})"})
            continue
        ok, why = _run_hooks(cmd, Path(root), [path], env)
        if not ok:
            refused.append({"path": path, "problem": f"pre-commit hooks refused it ({why})"})
    return refused
