"""The one template loader: every text under templates/ (package data `memwiki.templates`).

One placeholder syntax everywhere: ``{{name}}`` (letters, digits, underscores). Rendering is
strict: a placeholder without a value is a bug and raises. Everything else, ``$`` and single
braces included, is literal, so shell scripts and JSON examples need no escaping.
"""

from __future__ import annotations

import re

from .errors import InvalidInput, StorageError

PACKAGE = "memwiki.templates"
PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")


def load(name: str) -> str:
    """The text of templates/<name> (e.g. "memorize/executor.md")."""
    from importlib.resources import files

    resource = files(PACKAGE).joinpath(*name.split("/"))
    try:
        return resource.read_text(encoding="utf-8")
    except OSError:
        raise StorageError(f"memwiki template {name} is missing from the installation") from None


def fill(text: str, **values: object) -> str:
    """Replace every {{name}} in text with str(values[name]); a missing value raises."""

    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise InvalidInput(f"template placeholder {{{{{key}}}}} has no value")
        return str(values[key])

    return PLACEHOLDER.sub(sub, text)


def render(name: str, **values: object) -> str:
    """templates/<name> with every placeholder filled."""
    return fill(load(name), **values)
