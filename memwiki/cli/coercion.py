"""Option values converted without pydantic: the plain str, int, Path and list[str] values.

Typer (0.2x) converts every non-flag value, a None default included, through a pydantic
TypeAdapter it builds on first use; importing pydantic and building the adapters cost every
Typer command, `--help` too, about 70 ms (`memwiki list --help` took 167 ms, 88 ms without;
min of 15 cold processes on the 2-core development machine). Before a command
parses, `fill` puts a plain converter into the lazily-filled slot Typer keeps on each
parameter (its own cache, `_runtime_param`: the one private name of Typer memwiki relies
on; a Typer without it is left alone). The converter answers only what is unambiguous: a
value it is unsure of (a number written "007", a path that cannot be read, any constraint,
any other type) is handed to Typer's own converter, so results and error messages stay
Typer's; tests/test_cli_startup.py holds the two to the same answers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# Typer's per-parameter cache of its converter: None until the first value is converted.
SLOT = "_runtime_param"
_NO_SLOT = object()
_UNSURE = object()
# Whole numbers pydantic reads as int(text) for certain; any other spelling is Typer's.
_PLAIN_INT = re.compile(r"0|-?[1-9][0-9]{0,17}")


def fill(params: list) -> None:
    """Give each Typer parameter that has not converted a value yet the plain converter."""
    for param in params:
        if getattr(param, SLOT, _NO_SLOT) is None and hasattr(param, "type_descriptor"):
            setattr(param, SLOT, Plain(param.type_descriptor))


class Plain:
    """Typer's converter interface (coerce) for plainly valid values; Typer's own for the rest."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """The value as Typer would convert it (None and the empty multi-value as Typer does)."""
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        done = _plain(self.descriptor, value, multi)
        if done is not _UNSURE:
            return done
        setattr(param, SLOT, None)  # Typer builds its own converter in the slot and uses it
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def _plain(descriptor: Any, value: Any, multi: bool) -> Any:
    info = descriptor.parameter_info
    if getattr(info, "parser", None) is not None or descriptor.file_annotation is not None:
        return _UNSURE
    annotation = descriptor.annotation
    if multi:
        plain = annotation == list[str] and isinstance(value, (list, tuple))
        if plain and all(type(item) is str for item in value):
            return list(value)
        return _UNSURE
    if annotation is str:
        return value if type(value) is str else _UNSURE
    if annotation is int:
        if info.min is not None or info.max is not None or info.clamp:
            return _UNSURE
        if type(value) is int:
            return value
        if type(value) is str and _PLAIN_INT.fullmatch(value):
            return int(value)
        return _UNSURE
    if annotation is Path:
        return _plain_path(info, value)
    return _UNSURE


def _plain_path(info: Any, value: Any) -> Any:
    """Path(value) where Typer's default path checks pass (it may not exist; if it does, readable)."""
    defaults = (
        not info.exists
        and info.file_okay
        and info.dir_okay
        and not info.writable
        and not info.resolve_path
        and not info.allow_dash
        and info.path_type is None
    )
    if not defaults or not (isinstance(value, Path) or (type(value) is str and value)):
        return _UNSURE
    path = value if isinstance(value, Path) else Path(value)
    try:
        os.stat(path)
    except OSError:
        return path
    except ValueError:  # a NUL in the name
        return _UNSURE
    if info.readable and not os.access(path, os.R_OK):
        return _UNSURE
    return path
