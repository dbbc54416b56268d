"""Each real client, end to end: install, a real session, bridge, schedule, uninstall.

The tests of one host run in order on one sandbox (a class-scoped world), like a person
who installs memwiki, works a session, schedules mining and later uninstalls.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from . import capture, clients
from .conftest import note
from .harness import Sandbox, request_text
from .profiles import OPENCLAW_LONG_NOTE, PROFILES

LATEST = os.environ.get("LATEST") == "1"
HOSTS = [h for h in (os.environ.get("MEMWIKI_E2E_HOSTS") or ",".join(PROFILES)).split(",") if h]
USER_WORDS = "how do we rotate the staging api keys for the billing service?"
MEMORY_MARK = "vault rotate staging-billing"
MEMORY_BODY = (
    "Rotate the staging API keys of the billing service with "
    f"`{MEMORY_MARK}`; the old key stays valid for one hour.\n"
)
BLOCK_MARK = "Long-term memory (memwiki)"
TASK_MARK = "scheduled memorization job"
SUBAGENT_ASK = "where is the billing config kept?"
SUBAGENT_PROMPT = "Search the repository for the billing config file and report its path."
CAPTURE = os.environ.get("MEMWIKI_E2E_CAPTURE")


class World:
    """One host's sandbox, profile and what earlier steps left for later ones."""

    def __init__(self, root: Path, host: str):
        self.sb = Sandbox(root)
        self.client = clients.install(PROFILES[host].client_name, LATEST)
        self.p = PROFILES[host](self.sb, self.client)
        self.host = host
        for rel, text in self.p.user_files.items():
            path = self.sb.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.p.setup()
        self.before = {str(f): f.read_bytes() for f in self.p.watched_files() if f.exists()}
        self.exe = str(Path(self.sb.memwiki("--version").argv[0]))
        self.notes: dict[str, object] = {}


@pytest.fixture(scope="class", params=HOSTS)
def world(request, tmp_path_factory):
    w = World(tmp_path_factory.mktemp(request.param), request.param)
    r = w.sb.memwiki("init")
    assert r.rc == 0, r.err
    body = w.sb.root / "note.md"
    body.write_text(MEMORY_BODY)
    r = w.sb.memwiki(
        "add",
        "memory",
        "staging-key-rotation",
        "-d",
        "How to rotate staging API keys",
        "--body-file",
        str(body),
        "-t",
        "billing",
    )
    assert r.rc == 0, r.err
    assert w.sb.memwiki("reindex").rc == 0
    secs = w.client.install_seconds
    note(f"INST {secs:6.1f}s {w.host} {w.client.version} ({'cached' if not secs else 'installed'})")
    yield w
    w.sb.close()


def _tool_outputs(body: dict) -> list[str]:
    """Tool results in a logged request, as text."""
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            out.append(json.dumps(m.get("content")))
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.append(json.dumps(b.get("content")))
    for it in body.get("input") if isinstance(body.get("input"), list) else []:
        if isinstance(it, dict) and str(it.get("type", "")).endswith("call_output"):
            out.append(json.dumps(it.get("output")))
    return out


MODEL_PATHS = ("/messages", "/responses", "/chat/completions")


def _model_requests(sb: Sandbox, since: int) -> list[dict]:
    """Logged model calls (not the clients' probes such as /models or /api/show)."""
    return [
        r["body"]
        for r in sb.requests()[since:]
        if r["body"] and r["path"].split("?")[0].endswith(MODEL_PATHS)
    ]


@pytest.mark.usefixtures("world")
class TestHost:
    def test_1_install_block_reaches_model(self, world: World):
        sb, p = world.sb, world.p
        r = sb.memwiki("install", "--host", world.host)
        assert r.rc == 0, r.err
        mark = len(sb.requests())
        retrieve = f"{shlex.quote(world.exe)} retrieve 'rotate staging api keys billing'"
        sb.set_script([retrieve], "Use vault.")
        run = p.run(USER_WORDS)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        bodies = _model_requests(sb, mark)
        assert bodies, "the client sent no request to the fake model"
        text = request_text(bodies[0])
        assert BLOCK_MARK in text, "the managed block did not reach the model"
        assert f"{world.exe} retrieve" in text, "the block does not name memwiki's absolute path"
        outputs = [o for b in bodies for o in _tool_outputs(b)]
        assert any(MEMORY_MARK in o for o in outputs), f"retrieve in a tool shell failed: {outputs}"
        world.notes["first_request"] = bodies[0]

    def test_2_hook_injects_memory(self, world: World):
        if world.host == "claude-code":
            first = world.notes["first_request"]
            assert MEMORY_MARK in request_text(first), "the hook's memory did not reach the model"
        world.p.extra_session()

    def test_3_bridge_prepare_offers_user_words(self, world: World):
        sb = world.sb
        r = sb.memwiki("bridge", "prepare", "--host", world.host, "--json")
        assert r.rc == 0, (r.rc, r.err)
        out = r.json()
        assert not out["nothing_new"], out
        paths = [t[k] for t in out["transcripts"] for k in ("full", "messages") if k in t]
        texts = {t: Path(t).read_text() for t in paths if Path(t).is_file()}
        assert any(USER_WORDS in t for t in texts.values()), texts
        if world.host == "openclaw":  # stored compressed: read, not lost
            assert any(OPENCLAW_LONG_NOTE.strip() in t for t in texts.values()), texts
        for path, t in texts.items():
            assert BLOCK_MARK not in t, f"injected block mined as conversation in {path}"
        conv = [t for p_, t in texts.items() if p_.endswith("-messages.md")]
        assert conv
        for t in conv:
            assert MEMORY_MARK not in t.split(USER_WORDS, 1)[0], "injected memory mined"
            assert SUBAGENT_PROMPT not in t, "a subagent's prompt was mined as the user's words"
            assert "Global rules" not in t, "the global AGENTS.md was mined as the user's words"
        world.notes["prepare"] = out
        _capture(world)

    def test_4_schedule_runs_to_completion_without_mining_itself(self, world: World):
        sb, p = world.sb, world.p
        r = sb.memwiki("schedule", "--host", world.host, "--install", env=p.env())
        assert r.rc == 0, r.err
        cron = (sb.home / ".crontab").read_text()
        assert f"memwiki:bridge:{world.host}" in cron
        wrapper = Path(re.search(r"/bin/sh (\S+)", cron).group(1))
        prompt = (wrapper.parent / f"{world.host}.prompt.md").read_text()
        cmds = re.findall(r"`([^`]*bridge (?:prepare|commit) --host \S+ --json)`", prompt)
        assert len(cmds) == 2 and cmds[0].startswith("/"), prompt
        sb.set_script(cmds, "Memorized.")
        world.notes["wrapper"] = wrapper
        before = p.sessions()
        mark = len(sb.requests())
        run = _cron_run(world, wrapper)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        outputs = [o for b in _model_requests(sb, mark) for o in _tool_outputs(b)]
        (sb.root / "schedule-tool-outputs.json").write_text(json.dumps(outputs, indent=1))
        flat = [o.replace("\\", "") for o in outputs]
        assert len([o for o in flat if '"host"' in o]) >= 2, outputs
        assert any('"cursor_advanced": true' in o for o in flat), outputs
        assert not any("command not found" in o or "not found" in o for o in outputs), outputs
        assert p.sessions() == before + 1
        # The scheduled session is claimed: a prepare by hand never offers it.
        again = sb.memwiki("bridge", "prepare", "--host", world.host, "--json")
        assert again.rc == 0, again.err
        for t in again.json()["transcripts"]:
            for v in (t.get("full"), t.get("messages")):
                if v and Path(v).is_file():
                    assert TASK_MARK not in Path(v).read_text(), "the scheduled run mined itself"
        world.notes["after_schedule"] = again.json()

    def test_5_two_scheduled_runs_are_two_sessions(self, world: World):
        sb, p = world.sb, world.p
        wrapper = world.notes["wrapper"]
        prep = world.notes.get("after_schedule") or {}
        if prep.get("run_id"):
            sb.memwiki("memorize", "discard", prep["run_id"])
        sb.set_script([], "Nothing to do.")
        before = p.sessions()
        sizes = []
        for _ in range(2):
            mark = len(sb.requests())
            run = _cron_run(world, wrapper)
            assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
            bodies = _model_requests(sb, mark)
            assert bodies
            sizes.append(len(request_text(bodies[0])))
        assert p.sessions() == before + 2
        # The second run does not resend the first one's history to the model.
        assert abs(sizes[1] - sizes[0]) < 2000, sizes

    def test_6_uninstall_restores_every_file(self, world: World):
        sb = world.sb
        r = sb.memwiki("uninstall", "--host", world.host)
        assert r.rc == 0, r.err
        after = {str(f): f.read_bytes() for f in world.p.watched_files() if f.exists()}
        assert after == world.before
        wrapper = world.notes.get("wrapper")
        assert wrapper is None or not wrapper.exists()


def _capture(world: World) -> None:
    dest = Path(CAPTURE or world.sb.root / "capture") / f"{world.host}-{world.client.version}"
    capture.copy_tree(world.sb.home, dest, world.sb.home, world.p.store_globs)


def _cron_run(world: World, wrapper: Path):
    """The wrapper as cron starts it: /bin/sh, a minimal PATH, the client's own settings."""
    env = world.p.env()
    cron_env = {k: v for k, v in env.items() if k not in ("PATH", "SHELL")}
    cron_env.update(PATH=f"{world.sb.bin}:/usr/bin:/bin", SHELL="/bin/sh")
    return world.sb.run(["/bin/sh", str(wrapper)], env=cron_env, cwd=world.sb.home, timeout=180)


def test_codex_sandbox_flags_as_the_schedule_needs(tmp_path_factory):
    """Why the schedule runs Codex with danger-full-access: the facts, on the real client."""
    if "codex" not in HOSTS:
        pytest.skip("codex not selected")
    import subprocess

    w = World(tmp_path_factory.mktemp("codex-sandbox"), "codex")
    try:
        subprocess.run(["git", "init", "-q", str(w.sb.project)], check=True, timeout=60)
        got = {}
        for mode in ("workspace-write", "danger-full-access"):
            probe = w.sb.project / ".git" / "refs" / "heads" / f"probe-{mode}"
            w.sb.set_script([f"mkdir {probe} && echo MKDIR-OK"], "done")
            argv = [*w.client.argv, "exec", "--skip-git-repo-check", "--sandbox", mode, "go"]
            run = w.sb.run(argv, env=w.p.env(), cwd=w.sb.project)
            assert run.rc == 0, run.err[-2000:]
            got[mode] = probe.is_dir()
        assert got == {"workspace-write": False, "danger-full-access": True}  # .git read-only
        gone = w.sb.run([*w.client.argv, "exec", "--full-auto", "go"], env=w.p.env())
        assert gone.rc != 0 and "full-auto" in gone.err  # the flag no longer exists
    finally:
        w.sb.close()
