"""Job templates: markdown files under templates/memorize/, filled with string.Template.

Placeholders are ``$name`` (or ``${name}``); a literal dollar sign is written ``$$``.
Rendering is strict: a placeholder without a value is a bug and raises.
"""

from __future__ import annotations

from importlib.resources import files
from string import Template

from ..errors import StorageError

TEMPLATE_PACKAGE = "memwiki.templates"
TEMPLATE_DIR = "memorize"


def load(name: str) -> Template:
    """The template templates/memorize/<name>."""
    resource = files(TEMPLATE_PACKAGE) / TEMPLATE_DIR / name
    try:
        return Template(resource.read_text(encoding="utf-8"))
    except (FileNotFoundError, OSError) as exc:
        raise StorageError(f"memwiki template {TEMPLATE_DIR}/{name} is missing: {exc}") from None


def render(name: str, **values: object) -> str:
    """Render templates/memorize/<name> with every placeholder filled."""
    template = load(name)
    try:
        return template.substitute({k: str(v) for k, v in values.items()})
    except (KeyError, ValueError) as exc:
        raise StorageError(
            f"memwiki template {TEMPLATE_DIR}/{name}: bad placeholder {exc}"
        ) from None
