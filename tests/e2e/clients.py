"""Install the real agent clients, pinned by templates/hosts/client-versions.toml, into a cache outside the repo.

Each client lands in its own folder named by version, so installs are cached per machine
and two versions never mix. Only the npm registry and PyPI are used, via their ordinary
clients (npm, pip).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSIONS = HERE.parents[1] / "templates" / "hosts" / "client-versions.toml"
# The user's own home, read at import: every test then runs with a private HOME
# (tests/conftest.py), under which neither the cache nor pyenv's interpreters are found.
# Bug it prevents: on an empty cache the first client installed inside a test (hermes, from
# test_homes) failed with "python3.12 not found".
REAL_HOME = Path.home()
CACHE = Path(os.environ.get("MEMWIKI_E2E_CACHE", REAL_HOME / ".cache" / "memwiki-e2e"))
INSTALL_TIMEOUT = 900


@dataclass
class Client:
    """One installed client: how to run it, and the time its install took (0 when cached)."""

    name: str
    version: str
    argv: list[str]
    env_path: list[str]
    install_seconds: float


def pins() -> dict:
    """The pinned versions file, parsed."""
    return tomllib.loads(VERSIONS.read_text(encoding="utf-8"))


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, check=True, timeout=INSTALL_TIMEOUT, capture_output=True, text=True, **kw
    )


def newest_npm(package: str, major: str | None = None) -> str:
    """The newest version of an npm package (within a major, if given)."""
    if major is None:
        return _run(["npm", "view", package, "version"]).stdout.strip()
    out = json.loads(_run(["npm", "view", f"{package}@{major}", "version", "--json"]).stdout)
    return out[-1] if isinstance(out, list) else out


def newest_pypi(package: str) -> str:
    """The newest version of a PyPI package, as pip sees it."""
    out = _run([sys.executable, "-m", "pip", "index", "versions", package]).stdout
    for line in out.splitlines():
        if line.startswith(package):
            return line.split("(", 1)[1].split(")", 1)[0]
    raise RuntimeError(f"no version of {package} found")


def _npm_install(package: str, version: str, dest: Path, node_bin: Path | None = None) -> float:
    if (dest / ".done").exists():
        return 0.0
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    t0 = time.monotonic()
    env = dict(os.environ)
    if node_bin is not None:  # install scripts check the Node version they run under
        env["PATH"] = f"{node_bin}:{env.get('PATH', '')}"
        env["npm_config_nodedir"] = str(node_bin.parent)
    argv = ["npm", "install", "--prefix", str(dest), "--no-audit", "--no-fund"]
    _run([*argv, f"{package}@{version}"], env=env)
    (dest / ".done").write_text(version)
    return time.monotonic() - t0


def find_python(minor: str) -> str:
    """A python<minor> interpreter: on PATH, in pyenv, or via uv."""
    found = shutil.which(f"python{minor}")
    if found and subprocess.run([found, "-V"], capture_output=True, timeout=30).returncode == 0:
        return found
    pyenv = REAL_HOME / ".pyenv" / "versions"
    for d in sorted(pyenv.glob(f"{minor}.*"), reverse=True):
        exe = d / "bin" / f"python{minor}"
        if exe.exists():
            return str(exe)
    raise RuntimeError(f"python{minor} not found (install it with pyenv or uv)")


def _pip_install(package: str, version: str, python: str, dest: Path) -> float:
    if (dest / ".done").exists():
        return 0.0
    shutil.rmtree(dest, ignore_errors=True)
    t0 = time.monotonic()
    _run([find_python(python), "-m", "venv", str(dest)])
    env = dict(os.environ, PIP_CONSTRAINT="")  # the machine's constraints pin 3.11-era deps
    _run([str(dest / "bin" / "pip"), "install", "--quiet", f"{package}=={version}"], env=env)
    (dest / ".done").write_text(version)
    return time.monotonic() - t0


def install(name: str, latest: bool = False) -> Client:
    """Install one client (cached) and say how to run it."""
    pin = pins()[name]
    pkg = pin["package"]
    if pin["registry"] == "npm":
        version = newest_npm(pkg) if latest else pin["version"]
        dest = CACHE / f"{name}-{version}"
        secs, node_bin = 0.0, None
        if "node_package" in pin:
            nv = newest_npm(pin["node_package"], "24") if latest else pin["node_version"]
            ndest = CACHE / f"node-{nv}"
            secs += _npm_install(pin["node_package"], nv, ndest)
            node_bin = ndest / "node_modules" / pin["node_package"] / "bin"
        secs += _npm_install(pkg, version, dest, node_bin)
        bins = json.loads((dest / "node_modules" / pkg / "package.json").read_text())["bin"]
        rel = bins if isinstance(bins, str) else next(iter(bins.values()))
        entry = dest / "node_modules" / pkg / rel
        path = [str(dest / "node_modules" / ".bin")]
        argv = [str(entry)]
        if node_bin is not None:
            argv = [str(node_bin / "node"), str(entry)]
            path.insert(0, str(node_bin))
        return Client(name, version, argv, path, secs)
    version = newest_pypi(pkg) if latest else pin["version"]
    dest = CACHE / f"{name}-{version}"
    secs = _pip_install(pkg, version, pin["python"], dest)
    return Client(name, version, [str(dest / "bin" / "hermes")], [str(dest / "bin")], secs)


if __name__ == "__main__":
    latest = os.environ.get("LATEST") == "1"
    for n in sys.argv[1:] or list(pins()):
        c = install(n, latest)
        print(f"{c.name} {c.version}: install {c.install_seconds:.0f}s -> {' '.join(c.argv)}")
