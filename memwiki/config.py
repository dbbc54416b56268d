"""The one configuration loader: option > environment > config file > default.

No other module reads ``os.environ``; everything asks :func:`load`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InvalidInput
from .layout import LOGS, sidecar_for

# key -> (environment variable, default); the defaults that depend on $HOME are filled in load().
SETTINGS: dict[str, tuple[str, str | None]] = {
    "wiki": ("MEMWIKI_DIR", None),
    "embed": ("MEMWIKI_EMBED", "onnx"),
    "embed_model_dir": ("MEMWIKI_EMBED_MODEL_DIR", None),
    "git_token": ("MEMWIKI_GIT_TOKEN", None),
    "git_timeout_s": ("MEMWIKI_GIT_TIMEOUT_S", "60"),
    "bridging_run": ("MEMWIKI_BRIDGING_RUN", None),
    "hook_budget_ms": ("MEMWIKI_HOOK_BUDGET_MS", "1500"),
    # where prepared copies of the model live (embed/prepared.py); "off" keeps none
    "model_cache": ("MEMWIKI_MODEL_CACHE", None),
    # `KEY=slug, ...`: a directory prefix or a remote URL mapped to a project (memwiki/project.py)
    "projects": ("MEMWIKI_PROJECTS", None),
}

#: What the `embed` setting may be (memwiki/embed/__init__.py loads them).
EMBED_CHOICES = ("onnx", "ensemble", "hash", "none")

# Host variables memwiki reads but does not own (hosts.md): they live here so that the
# environment is still read in exactly one place.
HOST_ENV = (
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_SESSION_ID",
    "CODEX_HOME",
    "CURSOR_CONFIG_DIR",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_HOME",
    "OPENCLAW_CONFIG_PATH",
    "OPENCLAW_WORKSPACE_DIR",
    "OPENCLAW_PROFILE",
    "HERMES_HOME",
    "HERMES_SESSION_ID",
    "CURSOR_CONVERSATION_ID",
    "CODEX_THREAD_ID",
    "PATH",
    "HOME",
    "SSH_AUTH_SOCK",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "XDG_CACHE_HOME",
)


@dataclass(frozen=True)
class Setting:
    """One resolved setting and where its value came from."""

    key: str
    value: str | None
    source: str  # "option", "env:NAME", "file:PATH", "default"


@dataclass(frozen=True)
class Config:
    """Resolved configuration for one process."""

    settings: dict[str, Setting]
    config_file: Path
    host_env: dict[str, str] = field(default_factory=dict)
    home: Path = field(default_factory=Path.home)
    # The whole environment, for the child processes that must see the user's own set-up
    # (git and its ssh: agent, proxies, GIT_* settings); memwiki itself reads host_env only.
    child_env: dict[str, str] = field(default_factory=dict, repr=False)

    def get(self, key: str) -> str | None:
        """The resolved value of a setting."""
        return self.settings[key].value

    @property
    def wiki_path(self) -> Path:
        """Where the wiki lives ("~" is this configuration's HOME, not the process's)."""
        value = self.get("wiki") or str(self.home / "memwiki")
        if value == "~" or value.startswith("~/"):
            return self.home / value[2:]
        return Path(value).expanduser()

    @property
    def sidecar_path(self) -> Path:
        """<wiki>/.memwiki: the git-ignored folder of derived state (index, runs, logs); for
        a wiki this user can neither write nor read the index of, its own (sidecar_for)."""
        return sidecar_for(self.wiki_path, lambda: self.private_sidecars_dir)

    @property
    def logs_dir(self) -> Path:
        """<wiki>/.memwiki/logs."""
        return self.sidecar_path / LOGS

    @property
    def embed(self) -> str:
        """The embedder setting, normalised: "onnx", "ensemble", "hash" (the test embedder) or "none"."""
        return (self.get("embed") or "onnx").strip().lower()

    @property
    def embed_model_dir(self) -> Path | None:
        """A directory holding model.onnx and tokenizer.json to use instead of the bundled model."""
        value = self.get("embed_model_dir")
        return Path(value).expanduser() if value else None

    @property
    def model_cache_dir(self) -> Path | None:
        """Where prepared models are kept: model_cache, else $XDG_CACHE_HOME/memwiki/models; None if "off"."""
        value = (self.get("model_cache") or "").strip()
        if value.lower() in ("off", "none", "no", "false", "0"):
            return None
        if value:
            return self.home / value[2:] if value.startswith("~/") else Path(value)
        return self._user_cache / "models"

    @property
    def private_sidecars_dir(self) -> Path:
        """$XDG_CACHE_HOME/memwiki/sidecars: the indexes of wikis this user cannot write."""
        return self._user_cache / "sidecars"

    @property
    def _user_cache(self) -> Path:
        """$XDG_CACHE_HOME/memwiki (~/.cache/memwiki when it is not set)."""
        return Path(self.host_env.get("XDG_CACHE_HOME") or str(self.home / ".cache")) / "memwiki"

    @property
    def git_token(self) -> str | None:
        """The token for https remotes (MEMWIKI_GIT_TOKEN), if any."""
        return self.get("git_token") or None

    @property
    def bridging_run(self) -> bool:
        """True when the scheduled bridging wrapper started this process."""
        return (self.get("bridging_run") or "") not in ("", "0", "false", "no")

    @property
    def projects(self) -> str | None:
        """The `KEY=slug, ...` project map as written (memwiki.project.parse_map reads it)."""
        return self.get("projects")

    @property
    def hook_budget_s(self) -> float:
        """The prompt hook's time budget in seconds (a malformed value means the default)."""
        default = int(SETTINGS["hook_budget_ms"][1] or 0)
        try:
            return max(0.0, int(self.get("hook_budget_ms") or default) / 1000)
        except ValueError:
            return default / 1000


#: Read by OpenBLAS (numpy's BLAS) when numpy is imported.
BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """Give numpy's BLAS one thread in this process, unless the user chose a number.

    Called by the command line before anything imports numpy. A memwiki process does one
    matrix-vector product per query; a second BLAS thread halves it on an idle machine
    but, on a busy one or beside the freshness scan's child (index/forkscan.py), waits
    for a core and spins, and its pool costs start-up: cold retrieves measured 0.55
    instead of 0.67 s at 50,000 files and 0.18 instead of 0.26 s at 2,000 (load 2,
    docs/retrieval.md). One thread also makes the vector scores independent of the core
    count (a threaded product sums in a different order).
    """
    os.environ.setdefault(BLAS_THREADS, "1")


def config_file_path(environ: dict[str, str]) -> Path:
    """~/.config/memwiki/config.toml, honouring XDG_CONFIG_HOME."""
    base = environ.get("XDG_CONFIG_HOME") or str(
        Path(environ.get("HOME") or Path.home()) / ".config"
    )
    return Path(base) / "memwiki" / "config.toml"


def _quote_hint(text: str, exc: Exception) -> str:
    """What to write instead, when the bad line is a setting whose text is not quoted."""
    import re  # only for a broken file: the config is read by every cold `retrieve`

    # tomllib's message says where (Python 3.11-3.13 have no lineno attribute)
    at = re.search(r"\(at line (\d+), column \d+\)", str(exc))
    lines = text.splitlines()
    if at is None or not 0 < int(at.group(1)) <= len(lines):
        return ""
    # `wiki = ~/notes`: text where TOML wants a value, which quotes would make a string
    bare = re.fullmatch(
        r"\s*([A-Za-z_]\w*)\s*=\s*([^\s\"'\[{#][^#]*?)\s*(?:#.*)?", lines[int(at.group(1)) - 1]
    )
    if bare is None or bare.group(1) not in SETTINGS or bare.group(1) in _NUMBERS:
        return ""  # a number setting's mistake is not a missing quote
    key, value = bare.groups()
    value = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'; text goes in quotes: {key} = "{value}"'


def _read_file(path: Path) -> dict[str, object]:
    if not path.is_file():
        return {}
    import tomllib  # only when there is a file: `retrieve` runs cold many times a day

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: invalid config file: {exc}{_quote_hint(text, exc)}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: invalid config file: {exc}") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read config file: {exc.strerror}") from None
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:  # a misspelt key would otherwise be ignored without a word
        raise InvalidInput(
            f"{path}: invalid config file: unknown setting {unknown[0]!r} "
            f"(known: {', '.join(SETTINGS)})"
        )
    for key, value in data.items():
        # str() of a table, a list or a number would become a nonsense path or value.
        numeric = key in _NUMBERS and isinstance(value, int | float) and not isinstance(value, bool)
        if not isinstance(value, str) and not numeric:
            kind = "a number" if key in _NUMBERS else "a string"
            raise InvalidInput(f"{path}: invalid config file: {key!r} must be {kind}")
    return data


# Settings that are numbers: (the smallest value allowed, whether it must be whole).
_NUMBERS = {"git_timeout_s": (0.001, False), "hook_budget_ms": (0, True)}


def _check(setting: Setting) -> None:
    """Refuse a value memwiki would otherwise ignore without a word (a typo in `embed`
    silently meant BM25-only retrieval; a budget of "abc" the default)."""
    value = setting.value
    if value is None or setting.source == "default":
        return
    where = setting.source.replace("env:", "").replace("file:", "") or "option"
    if setting.key == "embed" and value.strip().lower() not in EMBED_CHOICES:
        raise InvalidInput(
            f"{where}: embed must be one of {', '.join(EMBED_CHOICES)}, not {value!r}"
        )
    if setting.key in _NUMBERS:
        low, whole = _NUMBERS[setting.key]
        try:
            number = int(value) if whole else float(value)
        except ValueError:
            number = None
        if number is None or number < low:
            kind = "a whole number" if whole else "a number"
            raise InvalidInput(
                f"{where}: {setting.key} must be {kind} of at least {low:g}, not {value!r}"
            )


# What tells a git command which repository it is in (git sets them for its hooks; a
# dotfiles set-up may export GIT_DIR): never passed on. Bug it prevents: run from a code
# repository's git hook, or under GIT_DIR=~/.dotfiles, sync's `git fetch`/`git push`
# worked on that repository ("'origin' does not appear to be a git repository", or its
# own origin), `pre-commit install` installed there, clone refused the GIT_WORK_TREE.
GIT_REPOSITORY_ENV = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_PREFIX",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_NAMESPACE",
        "GIT_SHALLOW_FILE",
        "GIT_GRAFT_FILE",
    }
)


def repository_free_env() -> dict[str, str]:
    """This process's environment without the variables that name a git repository."""
    return {k: v for k, v in os.environ.items() if k not in GIT_REPOSITORY_ENV}


def load(
    options: dict[str, str | None] | None = None, environ: dict[str, str] | None = None
) -> Config:
    """Resolve every setting from options, the environment, the config file and defaults."""
    options = options or {}
    env = dict(os.environ if environ is None else environ)
    home = Path(env.get("HOME") or Path.home())
    cfg_path = config_file_path(env)
    file_values = _read_file(cfg_path)
    settings: dict[str, Setting] = {}
    for key, (var, default) in SETTINGS.items():
        if options.get(key) is not None:
            settings[key] = Setting(key, str(options[key]), "option")
        elif env.get(var):
            settings[key] = Setting(key, env[var], f"env:{var}")
        elif key in file_values:
            settings[key] = Setting(key, str(file_values[key]), f"file:{cfg_path}")
        else:
            value = str(home / "memwiki") if key == "wiki" else default
            settings[key] = Setting(key, value, "default")
        _check(settings[key])
    host_env = {k: env[k] for k in HOST_ENV if k in env}
    child_env = {k: v for k, v in env.items() if k not in GIT_REPOSITORY_ENV}
    return Config(
        settings=settings, config_file=cfg_path, host_env=host_env, home=home, child_env=child_env
    )


def turn_off_onnxruntime_telemetry() -> None:
    """Set ORT_DISABLE_TELEMETRY for onnxruntime, unless the environment already says (here:
    the one module that touches the environment; memwiki.embed calls it, see why there)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def write_file_setting(config: Config, key: str, value: str) -> Path:
    """Set one key in the user's config file (used by `memwiki clone`)."""
    path = config.config_file
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    lines = [ln for ln in lines if ln.split("=", 1)[0].strip() != key]
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    lines.insert(0, f'{key} = "{escaped}"')
    path.parent.mkdir(parents=True, exist_ok=True)
    from .fsutil import atomic_write_text

    atomic_write_text(path, "\n".join(lines) + "\n")
    return path
