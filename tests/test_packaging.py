"""What `pip install .` ships: every folder of the package, and the data the code reads.

Bug it prevents: memwiki/recallfile/ was missing from pyproject's package list, so a
wheel (what `pip install .` and PyPI install) failed on every command with an
ImportError, while the editable install of `make demo` and the test suite hid it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]


def _folders(top: Path, prefix: str) -> set[str]:
    """Dotted names of top and every folder below it (caches left out)."""
    found = {prefix}
    for path in top.rglob("*"):
        if path.is_dir() and "__pycache__" not in path.parts:
            found.add(".".join([prefix, *path.relative_to(top).parts]))
    return found


def test_every_folder_of_the_package_and_the_templates_is_shipped():
    listed = set(_config()["packages"])
    wanted = _folders(ROOT / "memwiki", "memwiki") | _folders(
        ROOT / "templates", "memwiki.templates"
    )
    assert wanted - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - wanted == set(), "these are listed but do not exist"


def test_every_data_folder_ships_its_files():
    """A folder without Python modules needs package-data, or the wheel has it empty."""
    data = _config()["package-data"]
    for name in _config()["packages"]:
        folder = ROOT / "templates" if name == "memwiki.templates" else None
        if name.startswith("memwiki.templates."):
            folder = ROOT / "templates" / name.split(".")[-1]
        elif folder is None:
            folder = ROOT.joinpath(*name.split("."))
        files = [p for p in folder.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")]
        if files and not any(p.name == "py.typed" for p in files):
            assert name in data, f"{name} holds {files[0].name} but has no package-data"


def test_the_version_is_written_once():
    """Bug: pyproject.toml and memwiki/__init__.py each held "0.1.0"; a wheel built with
    one bumped installed as 0.1.0+bump1 (pip, pipx list) while `memwiki --version` said
    0.1.0. The distribution's version is now read from memwiki.__version__."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project.get("dynamic", [])
    assert _config()["dynamic"]["version"] == {"attr": "memwiki.__version__"}
