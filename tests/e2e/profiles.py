"""How to point each real client at the fake model and run it headless, one class per host."""

from __future__ import annotations

import json
from pathlib import Path

from .clients import Client
from .harness import Result, Sandbox


class Profile:
    """One host: its memwiki name, its client, and how to configure and run it."""

    host = ""
    client_name = ""
    # Files in HOME the user already had before memwiki: uninstall must give them back as is.
    user_files: dict[str, str] = {}

    def __init__(self, sb: Sandbox, client: Client):
        self.sb = sb
        self.client = client

    def setup(self) -> None:
        """Write the client's own config so it talks to the fake model."""

    def env(self) -> dict[str, str]:
        """The environment a client run gets (its PATH first)."""
        return self.sb.env(self.client.env_path)

    def argv(self, prompt: str) -> list[str]:
        """The headless one-shot command line for a prompt."""
        raise NotImplementedError

    def run(self, prompt: str, cwd: Path | None = None) -> Result:
        """Run one headless session on a prompt."""
        return self.sb.run(self.argv(prompt), env=self.env(), cwd=cwd or self.sb.project)

    def sessions(self) -> int:
        """How many sessions the client has stored (from its own files, not memwiki's reader)."""
        raise NotImplementedError

    # Globs (under HOME) of the client's session store, kept as fixtures by capture.py.
    store_globs: tuple[str, ...] = ()

    def watched_files(self) -> list[Path]:
        """Files memwiki install/schedule may change (compared byte for byte after uninstall)."""
        return [self.sb.home / rel for rel in self.user_files] + [self.sb.home / ".crontab"]

    def extra_session(self) -> None:
        """A host-specific second session (subagent, resume, ...) the bridge must get right."""


HOOK_BUDGET_MS = "8000"


class ClaudeCode(Profile):
    host = "claude-code"
    client_name = "claude-code"
    user_files = {
        ".claude/CLAUDE.md": "# My rules\n\nAlways answer in English.\n",
        ".claude/settings.json": json.dumps(
            {
                "permissions": {"allow": ["Bash(ls:*)"]},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
            },
            indent=2,
        )
        + "\n",
    }

    def env(self) -> dict[str, str]:
        return self.sb.env(
            self.client.env_path,
            ANTHROPIC_BASE_URL=self.sb.base_url,
            ANTHROPIC_API_KEY="dummy",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            # The suite checks that the hook's memory arrives, not how fast (tests/bench has
            # the hook's latency): on a loaded 2-core machine the default budget can pass.
            MEMWIKI_HOOK_BUDGET_MS=HOOK_BUDGET_MS,
        )

    store_globs = (".claude/projects/**/*.jsonl", ".claude/projects/**/*.meta.json")

    def argv(self, prompt: str) -> list[str]:
        return [*self.client.argv, "-p", prompt, "--allowedTools", "Bash"]

    def extra_session(self) -> None:
        # A session with a subagent: its prompt comes from the parent agent, not the person.
        from .test_hosts import SUBAGENT_ASK, SUBAGENT_PROMPT

        agent = {"description": "find config", "prompt": SUBAGENT_PROMPT}
        step = {"tool": "Agent", "when": SUBAGENT_ASK, "input": agent}
        self.sb.set_script([step], "The billing config is in config/billing.yml.")
        run = self.run(SUBAGENT_ASK)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])
        subs = list((self.sb.home / ".claude" / "projects").glob("*/*/subagents/agent-*.jsonl"))
        assert subs, "the client wrote no subagent transcript"

    def sessions(self) -> int:
        return len(list((self.sb.home / ".claude" / "projects").glob("*/*.jsonl")))


CODEX_CONFIG = """model = "fake-model"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
"""
CODEX_GLOBAL_RULES = "# Global rules\n\nKeep answers short.\n"
CODEX_RESUME_ASK = "and what about the production keys?"


class Codex(Profile):
    host = "codex"
    client_name = "codex"
    # A global AGENTS.md of the user's own: Codex injects it into the session as a user item.
    user_files = {".codex/AGENTS.md": CODEX_GLOBAL_RULES}
    store_globs = (".codex/sessions/**/*.jsonl",)

    def setup(self) -> None:
        config = self.sb.home / ".codex" / "config.toml"
        config.write_text(CODEX_CONFIG.format(base_url=self.sb.base_url))

    def env(self) -> dict[str, str]:
        return self.sb.env(self.client.env_path, FAKE_API_KEY="dummy")

    def argv(self, prompt: str) -> list[str]:
        return [
            *self.client.argv,
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            prompt,
        ]

    def extra_session(self) -> None:
        # A resumed session after AGENTS.md changed: Codex re-injects it in its "These
        # AGENTS.md instructions replace all previously provided" form.
        agents = self.sb.home / ".codex" / "AGENTS.md"
        saved = agents.read_bytes()
        agents.write_bytes(saved + b"\nAlso: name the files you touch.\n")
        self.sb.set_script([], "Same procedure.")
        argv = [*self.client.argv, "exec", "--skip-git-repo-check", "resume", "--last"]
        try:
            run = self.sb.run([*argv, CODEX_RESUME_ASK], env=self.env(), cwd=self.sb.project)
        finally:
            agents.write_bytes(saved)
        assert run.rc == 0, (run.out[-2000:], run.err[-2000:])

    def sessions(self) -> int:
        return len(list((self.sb.home / ".codex" / "sessions").rglob("rollout-*.jsonl")))


HERMES_CONFIG = """model:
  provider: custom
  default: fake-model
  base_url: {base_url}/v1
  api_key: dummy
"""


class Hermes(Profile):
    host = "hermes"
    client_name = "hermes"
    user_files = {".hermes/SOUL.md": "You are Hermes. Be precise.\n"}
    store_globs = (".hermes/state.db",)

    def setup(self) -> None:
        config = self.sb.home / ".hermes" / "config.yaml"
        config.write_text(HERMES_CONFIG.format(base_url=self.sb.base_url))

    def env(self) -> dict[str, str]:
        return self.sb.env(self.client.env_path, OPENAI_API_KEY="dummy")

    def argv(self, prompt: str) -> list[str]:
        return [*self.client.argv, "-z", prompt]

    def sessions(self) -> int:
        import sqlite3

        db = self.sb.home / ".hermes" / "state.db"
        if not db.exists():
            return 0
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]


def openclaw_config(base_url: str) -> str:
    """openclaw.json: one custom provider speaking Chat Completions to the fake model."""
    model = {
        "id": "fake-model",
        "name": "Fake",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 120000,
        "maxTokens": 8192,
    }
    provider = {
        "baseUrl": f"{base_url}/v1",
        "apiKey": "dummy",
        "api": "openai-completions",
        "models": [model],
    }
    return json.dumps(
        {
            "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
            "models": {"mode": "merge", "providers": {"fake": provider}},
        },
        indent=2,
    )


# Events of about 1 KB and more are stored zstd-compressed (event_zstd, event_json NULL).
OPENCLAW_LONG_NOTE = "Note for later: " + "the billing service rotates its keys weekly. " * 35


class OpenClaw(Profile):
    host = "openclaw"
    client_name = "openclaw"
    user_files = {".openclaw/workspace/AGENTS.md": "# Workspace rules\n\nBe careful.\n"}
    store_globs = (".openclaw/agents/*/agent/openclaw-agent.sqlite",)

    def setup(self) -> None:
        (self.sb.home / ".openclaw" / "openclaw.json").write_text(openclaw_config(self.sb.base_url))

    def argv(self, prompt: str) -> list[str]:
        return [*self.client.argv, "agent", "--local", "--agent", "main", "--message", prompt]

    def extra_session(self) -> None:
        self.sb.set_script([], "Noted.")
        run = self.run(OPENCLAW_LONG_NOTE)
        assert run.rc == 0 and not run.timed_out, (run.out[-2000:], run.err[-2000:])

    def sessions(self) -> int:
        import sqlite3

        total = 0
        for db in (self.sb.home / ".openclaw" / "agents").glob("*/agent/openclaw-agent.sqlite"):
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                q = "SELECT COUNT(DISTINCT session_id) FROM transcript_events"
                total += conn.execute(q).fetchone()[0]
        return total


PROFILES = {p.host: p for p in (ClaudeCode, Codex, Hermes, OpenClaw)}
