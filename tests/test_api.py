"""The Python API as docs/library.md documents it: every exported name, every signature.

Each entry of docs/library.md, a bullet starting with a code span, is compared with
inspect.signature of the real object (annotations as the source spells them), so the
page cannot drift from the code; every public method, property and field of an exported
class must have an entry, and every exception's base and exit code are checked.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memwiki

LIBRARY = Path(__file__).resolve().parents[1] / "docs" / "library.md"
ENTRY = re.compile(r"^- `([A-Za-z_][\w.]*)((?:\([^`]*\)(?: -> [^`]+)?)|(?:: [^`]+))?`", re.M)
EXCEPTION_ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` \| (\d+) \|", re.M)
# Built by load_config, never by hand: its fields are the loader's business, its
# settings are read through the documented properties.
FIELDS_NOT_DOCUMENTED = {"Config"}


def _params(signature: inspect.Signature, owner: type | None) -> str:
    out, star = [], False
    fields = {f.name: f for f in dataclasses.fields(owner)} if _is_dataclass(owner) else {}
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {p.annotation}"
        if p.default is not p.empty:
            factory = getattr(fields.get(p.name), "default_factory", dataclasses.MISSING)
            default = p.default if factory is dataclasses.MISSING else factory()
            text += f" = {default!r}"
        out.append(text)
    return ", ".join(out)


def _is_dataclass(owner) -> bool:
    return owner is not None and dataclasses.is_dataclass(owner)


def _callable_form(label: str, obj, owner: type | None) -> str:
    """label(params) -> return; a constructor without its `-> None`, a method without self."""
    signature = inspect.signature(obj)
    if inspect.isfunction(obj) and next(iter(signature.parameters), "") in ("self", "cls"):
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    back = signature.return_annotation
    back = "" if back is signature.empty or owner is not None else f" -> {back}"
    return f"{label}({_params(signature, owner)}){back}"


def documented_form(dotted: str) -> str:
    """How docs/library.md must spell the entry of a public name, read from the code."""
    head, _, member = dotted.partition(".")
    obj = getattr(memwiki, head)
    if not member:
        if inspect.isclass(obj):
            return _callable_form(head, obj, obj)
        return _callable_form(head, obj, None)
    annotated = {
        k: v for c in reversed(obj.__mro__) for k, v in vars(c).get("__annotations__", {}).items()
    }
    if member in annotated:  # an attribute, or a dataclass field
        return f"{dotted}: {annotated[member]}"
    raw = inspect.getattr_static(obj, member)
    if isinstance(raw, property):
        return f"{dotted}: {inspect.signature(raw.fget).return_annotation}"
    if isinstance(raw, classmethod | staticmethod) or inspect.isfunction(raw):
        return _callable_form(dotted, raw.__func__ if isinstance(raw, classmethod) else raw, None)
    raise AssertionError(f"{dotted}: not a method, property or annotated attribute")


def public_members(cls: type) -> list[str]:
    """What a caller may use of cls: its public methods, properties, annotated attributes
    and (unless its constructor is documented instead) its dataclass fields."""
    names = [n for n, v in vars(cls).items() if not n.startswith("_") and (
        inspect.isfunction(v) or isinstance(v, property | classmethod | staticmethod)
    )]  # fmt: skip
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    names += [n for n in vars(cls).get("__annotations__", {}) if n not in fields]
    return names


def _entries() -> dict[str, str]:
    text = LIBRARY.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for match in ENTRY.finditer(text):
        name = match.group(1)
        assert name not in found, f"docs/library.md lists {name} twice"
        found[name] = name + (match.group(2) or "")
    return found


def test_the_exports_are_what_all_says_and_each_is_importable():
    assert memwiki.__all__ == ["__version__", *sorted(memwiki._EXPORTS)]
    for name in memwiki.__all__:
        assert getattr(memwiki, name) is not None
        assert name in dir(memwiki)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        memwiki.Nothing  # noqa: B018


def test_a_bare_import_stays_cheap_and_from_imports_work():
    """`import memwiki` runs before every cold `memwiki retrieve`: it imports no other
    memwiki module and not typing (~10 ms); `from memwiki import X` imports X's module."""
    code = (
        "import sys\n"
        "import memwiki\n"
        "print(sorted(m for m in sys.modules if m.startswith('memwiki')), 'typing' in sys.modules)\n"
        "from memwiki import StateError, MemwikiError\n"
        "print(issubclass(StateError, MemwikiError), 'memwiki.wiki' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['memwiki'] False", "True False"]


def test_every_documented_signature_is_the_real_one():
    entries = _entries()
    assert len(entries) > 40
    wrong = {
        name: (shown, documented_form(name))
        for name, shown in entries.items()
        if shown != documented_form(name)
    }
    assert not wrong, "docs/library.md differs from the code (shown, real):\n" + "\n".join(
        f"{s}\n{r}\n" for s, r in wrong.values()
    )


def test_every_public_name_and_member_is_documented():
    entries = _entries()
    missing = []
    for name in memwiki.__all__[1:]:
        obj = getattr(memwiki, name)
        if inspect.isclass(obj) and issubclass(obj, Exception):
            continue  # in the exceptions table
        if name not in entries and name not in FIELDS_NOT_DOCUMENTED:
            missing.append(name)
        if inspect.isclass(obj):
            missing += [f"{name}.{m}" for m in public_members(obj) if f"{name}.{m}" not in entries]
    assert not missing, f"not in docs/library.md: {missing}"


def test_the_exceptions_table_gives_each_base_and_exit_code():
    rows = {m.group(1): (m.group(2), int(m.group(3))) for m in EXCEPTION_ROW.finditer(
        LIBRARY.read_text(encoding="utf-8")
    )}  # fmt: skip
    exceptions = {
        n for n in memwiki.__all__[1:]
        if inspect.isclass(getattr(memwiki, n)) and issubclass(getattr(memwiki, n), Exception)
    }  # fmt: skip
    assert set(rows) == exceptions
    for name, (base, code) in rows.items():
        cls = getattr(memwiki, name)
        assert cls.__bases__[0].__name__ == base, name
        assert cls.exit_code == code, name
