"""The package layout is the architecture: these AST checks keep it so (docs/architecture.md).

Layers, bottom to top: core (errors, config, fsutil, owners, lock, markdown, recallfile, layout,
timestamps, process) < the wiki and its helpers < index/, embed/, git/ < memorize/ < hosts/ < cli/.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memwiki"

# Core modules: anything may use them; they use nothing above them.
CORE = {
    "memwiki",
    "memwiki.errors",
    "memwiki.config",
    "memwiki.fsutil",
    "memwiki.logfile",
    "memwiki.owners",
    "memwiki.lock",
    "memwiki.markdown",
    "memwiki.recallfile",
    "memwiki.layout",
    "memwiki.timestamps",
    "memwiki.process",
    "memwiki.urls",
}
LOW_LAYERS = ("memwiki.index", "memwiki.embed", "memwiki.git")
HIGH_LAYERS = ("memwiki.memorize", "memwiki.hosts", "memwiki.cli")
# The command line and `python -m memwiki`.
CLI = ("memwiki.cli", "memwiki.__main__")
# The composition roots: the only code that resolves configuration from the environment.
# cli/ is the command line (the prompt hook's entry point is `memwiki hook claude-code`,
# which hands its loader to hosts/integrate/prompt_hook.run_hook_process); wiki.py is the
# library's entry point for a caller that passes no Config (Wiki.open, Wiki.config).
CONFIG_LOADERS = ("memwiki.cli", "memwiki.wiki")


@dataclass
class Module:
    """One module of the package, as far as these checks need it."""

    name: str
    path: Path
    tree: ast.Module
    # Every memwiki module imported anywhere in the file, and those imported at module level
    # (outside functions and `if TYPE_CHECKING:`), which are the ones that can form cycles.
    imports: set[str] = field(default_factory=set)
    top_imports: set[str] = field(default_factory=set)
    externals: set[str] = field(default_factory=set)


def _name_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.name.split(".")
    if not _is_package(module.path):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, names: set[str]) -> str | None:
    """The longest prefix of a dotted name that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in names:
            return candidate
        parts.pop()
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk_imports(tree: ast.AST, top: bool):
    """(node, at_module_level) for every import statement."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, top
        elif (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            or isinstance(node, ast.If)
            and _is_type_checking(node)
        ):
            yield from _walk_imports(node, False)
        else:
            yield from _walk_imports(node, top)


def _load() -> dict[str, Module]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        modules[_name_of(path)] = Module(_name_of(path), path, tree)
    names = set(modules)
    for module in modules.values():
        for node, top in _walk_imports(module.tree, True):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(module, node)
                # `from . import x` imports the submodule x when there is one.
                targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
                targets = [t if _known(t, names) == t else base for t in targets]
            for target in targets:
                if target.split(".")[0] != "memwiki":
                    module.externals.add(target.split(".")[0])
                    continue
                found = _known(target, names)
                if found and found != module.name:
                    module.imports.add(found)
                    if top:
                        module.top_imports.add(found)
    return modules


MODULES = _load()


def _in(name: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_checks_see_the_whole_package():
    assert "memwiki.cli.app" in MODULES and "memwiki.wiki" in MODULES
    assert "memwiki.wiki" in MODULES["memwiki.cli.context"].imports


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _in(n, CORE)))
def test_core_imports_nothing_above_it(name):
    above = {m for m in MODULES[name].imports if not _in(m, CORE)}
    if name == "memwiki":
        above -= set(MODULES)  # the package only names its lazy exports
    assert not above, f"{name} (core) imports {sorted(above)}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _in(n, LOW_LAYERS)))
def test_index_embed_git_never_import_memorize_hosts_or_cli(name):
    bad = {m for m in MODULES[name].imports if _in(m, HIGH_LAYERS)}
    assert not bad, f"{name} imports {sorted(bad)}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _in(n, ("memwiki.hosts.mining",))))
def test_host_mining_never_imports_host_integration(name):
    """Mining reads agents' logs; integration patches agents' settings. Reading never needs
    to know how memwiki installs itself, so the dependency runs one way only."""
    bad = {m for m in MODULES[name].imports if _in(m, ("memwiki.hosts.integrate", "memwiki.cli"))}
    assert not bad, f"{name} imports {sorted(bad)}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not _in(n, HIGH_LAYERS + CLI)))
def test_the_library_never_imports_the_cli_or_the_hosts(name):
    bad = {m for m in MODULES[name].imports if _in(m, ("memwiki.cli", "memwiki.hosts"))}
    assert not bad, f"{name} imports {sorted(bad)}"


def test_only_the_cli_imports_typer():
    bad = {
        n: sorted(m.externals & {"typer", "click"})
        for n, m in MODULES.items()
        if not _in(n, CLI) and m.externals & {"typer", "click"}
    }
    assert not bad


def test_the_fast_retrieve_path_imports_no_typer(wiki, tmp_path):
    """memwiki retrieve runs cold before every answer: Typer costs ~90 ms, so it stays out."""
    (wiki.root / "memory" / "zebra.md").write_text(
        "---\nname: zebra\ndescription: zebra facts\n---\nstripes\n"
    )
    script = (
        "import sys\n"
        "from memwiki.cli import main\n"
        "for _ in range(2):  # the first run builds the index, the second is the hot path\n"
        f"    main(['retrieve', 'zebra', '--files', '--mode', 'bm25', '-w', {str(wiki.root)!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        env={**os.environ, "MEMWIKI_EMBED": "none"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["memory/zebra.md", "memory/zebra.md", "[]"]


def test_no_import_cycle_at_module_level():
    graph = {n: m.top_imports for n, m in MODULES.items()}
    # A package's __init__ importing its own submodules is how Python packages work;
    # a submodule importing its package back is the cycle that bites.
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, cycles


def _calls_config_load(module: Module) -> list[int]:
    """Lines where the module calls memwiki.config.load."""
    aliases, module_aliases = set(), set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("config"):
            for alias in node.names:
                if alias.name == "load":
                    aliases.add(alias.asname or "load")
        if isinstance(node, ast.ImportFrom) and node.names:
            for alias in node.names:
                if alias.name == "config" and (alias.asname or "config") != "config_":
                    module_aliases.add(alias.asname or "config")
    lines = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in aliases:
            lines.append(node.lineno)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "load"
            and isinstance(func.value, ast.Name)
            and func.value.id in module_aliases
        ):
            lines.append(node.lineno)
    return lines


def test_only_entry_points_call_config_load():
    bad = {
        n: _calls_config_load(m)
        for n, m in MODULES.items()
        if n != "memwiki.config" and not _in(n, CONFIG_LOADERS) and _calls_config_load(m)
    }
    assert not bad, f"config.load called outside the entry points: {bad}"


def test_only_config_reads_the_environment():
    bad = []
    for name, module in MODULES.items():
        if name == "memwiki.config":
            continue
        for node in ast.walk(module.tree):
            reads = (
                isinstance(node, ast.Attribute)
                and node.attr in ("environ", "getenv", "putenv")
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
            )
            imports = (
                isinstance(node, ast.ImportFrom)
                and node.module == "os"
                and any(a.name in ("environ", "getenv") for a in node.names)
            )
            if reads or imports:
                bad.append(f"{name}:{node.lineno}")
    assert not bad, bad


# namedtuple's public API is spelled with underscores.
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}


def _private_names_defined(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if n.startswith("_")}


def test_no_module_uses_another_modules_private_attributes():
    """obj._x is fine only where _x is defined (the class's own module)."""
    bad = []
    for name, module in MODULES.items():
        own = _private_names_defined(module.tree) | NAMEDTUPLE_API
        stdlib = {  # os._exit and friends are the standard library's documented API
            alias.asname or alias.name
            for node in ast.walk(module.tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if not alias.name.startswith("memwiki")
        }
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in own
                and not (
                    isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"} | stdlib
                )
            ):
                bad.append(f"{name}:{node.lineno} uses .{node.attr}")
    assert not bad, bad


def test_no_module_reaches_into_another_modules_private_names():
    bad = []
    for name, module in MODULES.items():
        module_names: set[str] = set()
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level or "memwiki" in (node.module or "")
            ):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        bad.append(f"{name}:{node.lineno} imports {alias.name}")
                    module_names.add(alias.asname or alias.name)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("memwiki"):
                        module_names.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in module_names
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                bad.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not bad, bad


def test_modules_stay_small():
    """Comments say why, modules stay under about 400 lines (COMMON.md): 450 is the hard stop."""
    big = {
        n: lines
        for n, m in MODULES.items()
        if (lines := len(m.path.read_text(encoding="utf-8").splitlines())) > 450
    }
    assert not big, big
