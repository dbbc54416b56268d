"""One isolated world per test: a fresh HOME, a wiki in it, the fake model server, and the
client run headless in its own process group with a timeout (the group is killed after).

Nothing here touches the real HOME: every process gets HOME (and XDG dirs) in a temporary
directory, and `crontab` is replaced by a file-backed stand-in on PATH.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fake_model

RUN_TIMEOUT = float(os.environ.get("MEMWIKI_E2E_TIMEOUT", "120"))
MEMWIKI = Path(sys.executable).parent / "memwiki"
# PATH for the clients: the system's, without the virtualenv memwiki lives in, as a
# person's login shell would have it.
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

FAKE_CRONTAB = """#!/bin/sh
# crontab stand-in for tests: the table is a file in the sandbox's HOME.
f="$HOME/.crontab"
case "$1" in
  -l) [ -f "$f" ] && cat "$f" || { echo "no crontab for $USER" >&2; exit 1; } ;;
  -r) rm -f "$f" ;;
  -) cat > "$f" ;;
  *) cat "$1" > "$f" ;;
esac
"""


@dataclass
class Result:
    """A finished process: its exit code, output, and how long it took."""

    argv: list[str]
    rc: int
    out: str
    err: str
    seconds: float
    timed_out: bool = False

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.out)


@dataclass
class Sandbox:
    """An isolated HOME with a wiki, a fake model server and a log of its requests."""

    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.bin = self.root / "bin"
        for d in (self.home, self.bin, self.home / ".config", self.home / ".cache"):
            d.mkdir(parents=True, exist_ok=True)
        crontab = self.bin / "crontab"
        crontab.write_text(FAKE_CRONTAB)
        crontab.chmod(0o755)
        self.log = self.root / "requests.jsonl"
        self.script = self.root / "script.json"
        self.set_script([], "Done.")
        self.server, _ = fake_model.serve(self.log, self.script)
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.wiki = self.home / "memwiki"
        self.project = self.home / "proj"
        self.project.mkdir(exist_ok=True)

    def close(self) -> None:
        """Stop the fake model server."""
        self.server.shutdown()
        self.server.server_close()

    def set_script(self, commands: list[str], final: str = "Done.") -> None:
        """What the fake model does on the next requests."""
        self.script.write_text(json.dumps({"commands": commands, "final": final}))

    def requests(self) -> list[dict[str, Any]]:
        """Every request the fake model got so far."""
        return fake_model.logged(self.log)

    def env(self, path: list[str] | None = None, **extra: str) -> dict[str, str]:
        """The environment of a process in this sandbox."""
        env = {
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LOGNAME": os.environ.get("USER", "root"),
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "PATH": ":".join([str(self.bin), *(path or []), BASE_PATH]),
            "TMPDIR": str(self.root),
            "NO_COLOR": "1",
        }
        env.update(self.extra_env)
        env.update(extra)
        return env

    def run(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = RUN_TIMEOUT,
        stdin: str | None = None,
    ) -> Result:
        """Run argv in its own process group; on timeout or after exit, kill the group."""
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv,
            env=env or self.env(),
            cwd=str(cwd or self.home),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(proc.pid)
            out, err = proc.communicate(timeout=30)
        _killpg(proc.pid)
        return Result(argv, proc.returncode, out, err, time.monotonic() - t0, timed_out)

    def memwiki(self, *args: str, env: dict[str, str] | None = None, **kw: Any) -> Result:
        """Run this checkout's memwiki inside the sandbox."""
        return self.run([str(MEMWIKI), *args], env=env or self.env(), **kw)

    def snapshot(self) -> dict[str, bytes]:
        """Every file under HOME except the wiki and caches, by relative path, with its bytes."""
        out: dict[str, bytes] = {}
        for p in sorted(self.home.rglob("*")):
            rel = p.relative_to(self.home)
            if p.is_file() and not p.is_symlink() and rel.parts[0] not in ("memwiki", ".cache"):
                try:
                    out[str(rel)] = p.read_bytes()
                except OSError:
                    continue
        return out


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def request_text(body: Any) -> str:
    """All of a logged request body as one string (to look for the block or memory in)."""
    return json.dumps(body, ensure_ascii=False)
