"""Network operations through the system `git` command: clone, fetch, push, ls-remote.

git is what a user's SSH and HTTPS set-up is configured for (~/.ssh/config, the agent,
`insteadOf`, credential helpers, CA settings, proxies); it prints the server's messages and
runs the remote's hooks. memwiki runs it so that it can never block an agent or a cron job:

- no prompts: GIT_TERMINAL_PROMPT=0, and SSH in BatchMode through GIT_SSH_COMMAND, but only
  when the user has set neither GIT_SSH_COMMAND, GIT_SSH nor core.sshCommand (theirs wins);
- no hang: http.lowSpeedLimit/lowSpeedTime (unless the user set them) and a watchdog that
  kills git (and its ssh) when it has printed nothing, progress included, for
  `git_timeout_s` seconds;
- the child dies with memwiki (Linux: PR_SET_PDEATHSIG=SIGTERM, which git handles by removing
  its own lock files), so a killed sync never leaves a fetch or push running behind it.

When no `git` is installed, remotes.py falls back to libgit2 (pygit2) with the
credentials in credentials.py and says what that cannot honour.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MemwikiError, StorageError
from .credentials import host_of, read_only_refusal, redact, transport

DEFAULT_TIMEOUT_S = 60.0
_LOW_SPEED_LIMIT = "1000"  # bytes/s: below this for lowSpeedTime seconds, git gives up
# The askpass dialog of some desktop set-ups would wait for a person too.
_QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GCM_INTERACTIVE": "never",
    "SSH_ASKPASS_REQUIRE": "never",
}
# An inline credential helper for MEMWIKI_GIT_TOKEN: the token stays in the environment,
# never on a command line; the user is the one in the URL, else GitHub's token login name.
_TOKEN_HELPER = (
    '!f() { test "$1" = get || exit 0; u=; while IFS== read -r k v; do '
    'test "$k" = username && u="$v"; done; echo "username=${u:-x-access-token}"; '
    'echo "password=$MEMWIKI_GIT_TOKEN"; }; f'
)


def find_git(config) -> str | None:
    """The `git` executable on the configured PATH, or None."""
    return shutil.which("git", path=config.host_env.get("PATH"))


def timeout_of(config) -> float:
    """Seconds without any output after which a network git command is killed."""
    try:
        value = float(config.get("git_timeout_s") or DEFAULT_TIMEOUT_S)
    except (KeyError, ValueError):
        value = DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


@dataclass
class GitRun:
    """What one git command printed: stdout, stderr lines, and the server's `remote:` lines."""

    returncode: int
    stdout: str
    stderr: list[str] = field(default_factory=list)
    token: bool = False  # MEMWIKI_GIT_TOKEN was offered to the server

    @property
    def remote_lines(self) -> list[str]:
        """The server's own messages (a hook's reason for a refusal, a forge's notice)."""
        out = []
        for line in self.stderr:
            if line.startswith("remote:"):
                text = line[len("remote:") :].strip()
                if text and not _PROGRESS.match(text):
                    out.append(text)
        return out


_PROGRESS = re.compile(
    r"^(Enumerating|Counting|Compressing|Total|Writing|Resolving|Receiving|Unpacking)\b"
    r"|^\s*\d+% \("
)


def git_config(
    git: str,
    args: list[str],
    cwd: Path | None = None,
    env: dict | None = None,
    git_dir: str | None = None,
) -> str:
    """What `git config ARGS` prints, as the git command reads the settings (with the
    includes libgit2 skips); "" when nothing matches or git cannot say. git_dir: that
    repository's, never one a GIT_DIR in the environment names."""
    where = [f"--git-dir={git_dir}"] if git_dir else []
    try:
        done = subprocess.run(
            [git, *where, "config", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def git_config_values(git: str, pattern: str, **where) -> dict[str, str]:
    """{lower-cased key: value} of the settings matching pattern (git_config's where); the
    last value wins, as in git."""
    found = {}
    for line in git_config(git, ["--get-regexp", pattern], **where).splitlines():
        key, _, value = line.partition(" ")
        found[key.lower()] = value
    return found


def _command(git: str, args: list[str], config, cwd: Path | None) -> tuple[list[str], dict]:
    """The full command line and environment for one network git command."""
    # The user's own environment is passed through untouched: it carries their SSH agent,
    # proxies and GIT_* settings, which is the reason to run git at all. memwiki itself only
    # reads the variables config.py names.
    env = {**config.child_env, **_QUIET_ENV}
    if "HOME" in config.host_env:
        env["HOME"] = config.host_env["HOME"]
    token = config.get("git_token")
    if token:
        env["MEMWIKI_GIT_TOKEN"] = token
    # The user's settings memwiki would otherwise supply.
    user = git_config_values(
        git, r"^(core\.sshcommand|http\.lowspeedlimit|http\.lowspeedtime)$", cwd=cwd, env=env
    )
    timeout = int(max(1, round(timeout_of(config))))
    pre: list[str] = []
    if not any(config.host_env.get(v) for v in ("GIT_SSH_COMMAND", "GIT_SSH")) and (
        "core.sshcommand" not in user
    ):
        env["GIT_SSH_COMMAND"] = f"ssh -o BatchMode=yes -o ConnectTimeout={timeout}"
    if "http.lowspeedtime" not in user and "http.lowspeedlimit" not in user:
        pre += [
            "-c",
            f"http.lowSpeedLimit={_LOW_SPEED_LIMIT}",
            "-c",
            f"http.lowSpeedTime={timeout}",
        ]
    if token:
        # The token replaces the user's helpers: it is what they asked memwiki to use.
        pre += ["-c", "credential.helper=", "-c", f"credential.helper={_TOKEN_HELPER}"]
    return [git, *pre, *args], env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def run_git(args: list[str], config, cwd: Path | None = None) -> GitRun:
    """Run one network git command; kill it when it prints nothing for the timeout."""
    git = find_git(config)
    if git is None:
        raise StorageError("the git command is not installed")
    argv, env = _command(git, args, config, cwd)
    limit = timeout_of(config)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its ssh child is killed with it
            preexec_fn=_die_with_parent,
        )
    except OSError as exc:
        raise StorageError(f"cannot run git: {exc}") from None
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    last = time.monotonic()
    stalled = interrupted = False
    try:
        while sel.get_map():
            events = sel.select(timeout=min(1.0, limit))
            for key, _ in events:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                last = time.monotonic()
            if time.monotonic() - last > limit:
                stalled = True
                break
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        sel.close()
        if stalled:
            _kill(proc)
        elif interrupted:
            _interrupt(proc)
        try:
            proc.wait(timeout=limit + 5)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    lines = [ln.strip() for ln in re.split(r"[\r\n]+", err.decode("utf-8", "replace"))]
    result = GitRun(proc.returncode, out.decode("utf-8", "replace"), [ln for ln in lines if ln])
    result.token = "MEMWIKI_GIT_TOKEN" in env
    if stalled:
        raise NetworkTimeout(limit)
    return result


def _interrupt(proc: subprocess.Popen) -> None:
    """Ctrl-C passed on to git, which runs in a session of its own and so never saw it.

    Without it memwiki waited for a slow fetch or push to end (up to the timeout) before
    it said "interrupted". SIGINT, as a terminal sends it, lets git remove its lock files.
    """
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=3)
    except (OSError, subprocess.TimeoutExpired):
        _kill(proc)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=3)
    except (OSError, subprocess.TimeoutExpired):
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)


class NetworkTimeout(StorageError):
    """git printed nothing for the configured time."""

    def __init__(self, seconds: float):
        super().__init__(f"no answer for {seconds:g} s")
        self.seconds = seconds


# ---------------------------------------------------------------- errors

_AUTH = (
    "permission denied (publickey",
    "permission denied, please try again",
    "authentication failed",
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "invalid username or password",
    "http basic: access denied",
    "the requested url returned error: 401",
    "the requested url returned error: 403",
)
_HOST_KEY = ("host key verification failed", "remote host identification has changed")


# What git adds after the real reason of a failed connection, whatever the reason was.
_GENERIC = (
    "could not read from remote repository",
    "please make sure you have the correct access rights",
    "and the repository exists",
)


def _reason(run: GitRun) -> str:
    """The line that says why: ssh's "Connection refused", git's "does not appear to be a
    git repository", rather than the generic "Could not read from remote repository" that
    follows them (which was all the error used to say)."""
    lines = [
        ln
        for ln in run.stderr
        if not _PROGRESS.match(ln)
        and not ln.startswith("remote:")
        and not any(g in ln.lower() for g in _GENERIC)
    ]
    for line in lines:
        if line.startswith(("fatal:", "error:", "ssh:")):
            return line.split(":", 1)[1].strip() if not line.startswith("ssh:") else line
    if lines:
        return lines[-1]
    for line in reversed(run.stderr):
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return f"git exited with code {run.returncode}"


def hook_said(run: GitRun) -> str:
    """What a git hook printed before git's own "failed to push some refs" (its last line)."""
    said = [
        ln.strip()
        for ln in run.stderr
        if ln.strip()
        and not _PROGRESS.match(ln)
        and not ln.startswith(("remote:", "To "))
        and "failed to push some refs" not in ln
    ]
    return said[-1] if said else f"exit code {run.returncode}"


def explain(
    run: GitRun | None, url: str, action: str, exc: Exception | None = None
) -> MemwikiError:
    """One clear error line for a failed network git command."""
    host = host_of(url)
    if isinstance(exc, NetworkTimeout):
        return StorageError(
            f"cannot {action} {redact(url)}: {host} sent nothing for {exc.seconds:g} s "
            "(set git_timeout_s / MEMWIKI_GIT_TIMEOUT_S to wait longer)"
        )
    assert run is not None
    text = "\n".join(run.stderr).lower()
    kind = transport(url)
    if any(m in text for m in _HOST_KEY):
        return StorageError(
            f"the SSH host key of {host} is unknown or has changed: connect once with "
            "`ssh` to check it and record it in ~/.ssh/known_hosts, then try again"
        )
    if action == "push to" and "returned error: 403" in text:
        # The fetch before it got in with the same credentials: they are right, and the
        # account may read only. "Check the token" sent people after the wrong problem.
        who = "MEMWIKI_GIT_TOKEN" if run.token else "your credentials"
        return StorageError(
            f"{host} refused the push (HTTP 403) though it let {who} fetch: that account has "
            "no write access to the repository; ask for it (nothing was lost: the next sync "
            "that may write pushes it)"
        )
    if action == "push to":  # the fetch before it got in with the same credentials
        refused = read_only_refusal("\n".join(run.stderr), url, "the same credentials")
        if refused is not None:
            return refused
    if any(m in text for m in _AUTH):
        how = "SSH" if kind == "ssh" else kind.upper()
        said = next(ln for ln in run.stderr if any(m in ln.lower() for m in _AUTH))
        said = said.split(":", 1)[1].strip() if said.startswith(("fatal:", "remote:")) else said
        if kind == "ssh":
            hint = "load a key the server accepts into ssh-agent or name it in ~/.ssh/config"
        elif run.token:
            hint = "the server refused MEMWIKI_GIT_TOKEN: check the token and its access"
        else:
            hint = "configure a git credential helper or set MEMWIKI_GIT_TOKEN"
        return StorageError(f"cannot authenticate to {host} over {how} ({said}): {hint}")
    remote = run.remote_lines
    detail = _reason(run)
    if remote:
        detail = "remote: " + " / ".join(remote) + f" ({detail})"
    return StorageError(f"cannot {action} {redact(url)}: {detail}")
