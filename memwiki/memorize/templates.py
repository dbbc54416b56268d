"""Job templates: the files under templates/memorize/, through the one loader (memwiki.templating)."""

from __future__ import annotations

from .. import templating

TEMPLATE_DIR = "memorize"


def load(name: str) -> str:
    """The text of templates/memorize/<name>."""
    return templating.load(f"{TEMPLATE_DIR}/{name}")


def render(name: str, **values: object) -> str:
    """Render templates/memorize/<name> with every {{placeholder}} filled."""
    return templating.render(f"{TEMPLATE_DIR}/{name}", **values)
