"""OpenClaw's workspace, where the agent reads AGENTS.md, as openclaw.json sets it.

Followed from OpenClaw 2026.9.6's own resolution (agent-scope-config resolveAgentWorkspaceDir,
workspace-default-path, config/paths): the default agent's `workspace` entry, else
`agents.defaults.workspace`, else OPENCLAW_WORKSPACE_DIR, else <state dir>/workspace, where a
named OPENCLAW_PROFILE makes the last one ~/.openclaw-<profile>/workspace. The file is JSON5
(comments, trailing commas, unquoted keys), read here without a JSON5 library.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import InvalidInput
from .base import env_path

CONFIG_NAME = "openclaw.json"
IMPLICIT_AGENT = "main"  # the one agent of a config without a roster, and the schedule's
_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.I)  # OpenClaw's isValidProfileName
_TOKEN = re.compile(
    r"""(?P<skip>\s+|//[^\n]*|/\*.*?\*/)
    |(?P<dq>"(?:[^"\\]|\\.)*")
    |(?P<sq>'(?:[^'\\]|\\.)*')
    |(?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
    |(?P<word>[-+]?[A-Za-z_$][\w$]*)
    |(?P<punct>[{}\[\]:,])""",
    re.S | re.X,
)


def openclaw_home(config: Config) -> Path:
    """OPENCLAW_HOME, else HOME: what OpenClaw calls home (home-dir resolveEffectiveHomeDir)."""
    return env_path(config, "OPENCLAW_HOME") or config.home


def user_path(config: Config, name: str) -> Path | None:
    """A path variable as OpenClaw reads it: a leading ~ is OpenClaw's home, not HOME."""
    value = (config.host_env.get(name) or "").strip()
    if value == "~" or value.startswith("~/"):
        return openclaw_home(config) / value[2:]
    return Path(value) if value else None


def profile_name(name: str) -> bool:
    """True for a name OpenClaw takes as a profile (isValidProfileName); "default" is none."""
    return bool(_PROFILE_NAME.fullmatch(name)) and name.lower() != "default"


def config_path(config: Config, state: Path) -> Path:
    """OPENCLAW_CONFIG_PATH, else openclaw.json in the state directory."""
    return user_path(config, "OPENCLAW_CONFIG_PATH") or state / CONFIG_NAME


def json5_loads(text: str) -> Any:
    """The value of a JSON5 text (ValueError when it is not JSON5)."""
    out: list[str] = []
    pos = 0
    text = text.lstrip("\ufeff")
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"unexpected {text[pos]!r} at offset {pos}")
        pos = m.end()
        kind, tok = m.lastgroup, m.group()
        if kind == "skip":
            continue
        if kind == "sq":
            inner = tok[1:-1].replace("\\'", "'").replace('"', '\\"')
            tok = json.dumps(json.loads(f'"{inner}"'))
        elif kind == "num":
            tok = tok.lstrip("+")
            sign = "-" if tok.startswith("-") else ""
            body = tok.lstrip("-")
            if body[:2].lower() == "0x":
                tok = sign + str(int(body, 16))
            else:
                tok = sign + ("0" + body if body.startswith(".") else body)
                tok = tok + "0" if tok.endswith(".") else tok
        elif kind == "word":
            nxt = _TOKEN.match(text, pos)
            while nxt is not None and nxt.lastgroup == "skip":
                nxt = _TOKEN.match(text, nxt.end())
            if nxt is not None and nxt.group() == ":":
                tok = json.dumps(tok)  # an unquoted key
            elif tok.lstrip("+") not in ("true", "false", "null", "Infinity", "-Infinity", "NaN"):
                raise ValueError(f"unexpected word {tok!r}")
            tok = tok.lstrip("+")
        elif tok in "}]" and out and out[-1] == ",":
            out.pop()  # a trailing comma
        out.append(tok)
    return json.loads("".join(out))


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read it ({exc}); pass --path") from None
    try:
        data = json5_loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InvalidInput(f"{path}: not valid JSON5 ({exc}); pass --path") from None
    return data if isinstance(data, dict) else {}


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _roster(agents: dict[str, Any]) -> list[tuple[str, dict[str, Any]]] | None:
    """(id, entry) for each configured agent (agents.entries, or the older agents.list)."""
    entries, listed = agents.get("entries"), agents.get("list")
    if entries is not None:
        items = entries.items() if isinstance(entries, dict) else []
        return [(str(k), v) for k, v in items if isinstance(v, dict)]
    if listed is not None:
        items = listed if isinstance(listed, list) else []
        return [(str(e.get("id", "")), e) for e in items if isinstance(e, dict)]
    return None


def _agent_id(value: str) -> str:
    # OpenClaw's normalizeAgentId, enough to compare ids: trimmed, lower case.
    return value.strip().lower() or IMPLICIT_AGENT


def _home_path(config: Config, value: str, label: str) -> Path:
    """A configured path as OpenClaw resolves it: ~ is OPENCLAW_HOME, else HOME."""
    if "${" in value:  # OpenClaw fills it in from its own environment
        raise InvalidInput(f"{label}: workspace {value!r} names a variable; pass --path")
    if value == "~" or value.startswith("~/"):
        return openclaw_home(config) / value[2:]
    path = Path(value)
    if not path.is_absolute():  # OpenClaw resolves it against its own working directory
        raise InvalidInput(f"{label}: workspace {value!r} is not an absolute path; pass --path")
    return path


def default_workspace(config: Config, state: Path) -> Path:
    """The workspace of a default agent openclaw.json gives none (workspace-default-path)."""
    explicit = env_path(config, "OPENCLAW_WORKSPACE_DIR")
    if explicit:
        return explicit
    profile = (config.host_env.get("OPENCLAW_PROFILE") or "").strip()
    # OPENCLAW_STATE_DIR wins over the profile; so does `openclaw --profile`, which sets it.
    # An exported OPENCLAW_PROFILE alone leaves state and openclaw.json in ~/.openclaw but
    # moves this workspace (OpenClaw 2026.9.6, seen in a real run).
    if env_path(config, "OPENCLAW_STATE_DIR") or profile.lower() in ("", "default"):
        return state / "workspace"
    if not _PROFILE_NAME.fullmatch(profile):  # OpenClaw stops on it too
        raise InvalidInput(f"OPENCLAW_PROFILE {profile!r} is not a profile name; pass --path")
    return openclaw_home(config) / f".openclaw-{profile}" / "workspace"


def workspace(config: Config, state: Path) -> Path:
    """The default agent's workspace directory, as OpenClaw resolves it."""
    source = config_path(config, state)
    cfg = _read(source)
    agents = _obj(cfg.get("agents"))
    if "$include" in cfg or "$include" in agents:
        raise InvalidInput(f"{source}: agents come from an $include; pass --path")
    defaults = _obj(agents.get("defaults"))
    shared = defaults.get("workspace")
    shared = shared.strip() if isinstance(shared, str) else ""
    roster = _roster(agents)
    owner, entry = IMPLICIT_AGENT, _obj(None)
    if roster:
        marked = [(i, e) for i, e in roster if e.get("default") is True]
        if agents.get("ownership") == "explicit" or len(marked) != 1:
            marked = []
        sole = roster if len(roster) == 1 else []
        chosen = marked or sole
        mains = [(i, e) for i, e in roster if _agent_id(i) == IMPLICIT_AGENT]
        if not chosen and not mains:
            raise InvalidInput(
                f"{source}: several agents and no default one; pass --path with the "
                "AGENTS.md of the agent's workspace"
            )
        owner, entry = (chosen or mains)[0]
        owns_default = bool(chosen)
    else:
        owns_default = True
    own = entry.get("workspace")
    if isinstance(own, str) and own.strip():
        return _home_path(config, own.strip(), str(source))
    if owns_default:
        if shared:
            return _home_path(config, shared, str(source))
        return default_workspace(config, state)
    # Other agents of a fleet get a directory of their own.
    if shared:
        return _home_path(config, shared, str(source)) / _agent_id(owner)
    return state / f"workspace-{_agent_id(owner)}"
