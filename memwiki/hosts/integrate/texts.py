"""Host templates (templates/hosts/*), loaded as package data and rendered."""

from __future__ import annotations

import re
from importlib.resources import files

from ...errors import InvalidInput, NotFound
from ..mining.base import HOSTS

_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


def template(name: str) -> str:
    """The text of templates/hosts/<name>."""
    resource = files("memwiki.templates").joinpath("hosts", name)
    try:
        return resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"template hosts/{name} is missing from the installation") from None


def render(text: str, **values: str) -> str:
    """Replace every {{NAME}} with values[NAME]; an unknown placeholder is an error."""

    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise InvalidInput(f"template placeholder {{{{{key}}}}} has no value")
        return values[key]

    return _PLACEHOLDER.sub(sub, text)


def instruction_block(memwiki: str = "memwiki") -> str:
    """The body of the managed block planted in instruction files (memwiki: how to call it)."""
    return render(template("instruction-block.md"), MEMWIKI=memwiki)


def task_prompt(host: str, memwiki: str = "memwiki") -> str:
    """The prompt a scheduled headless agent follows (`memwiki docs task --host H`)."""
    _check(host)
    return render(template("task-prompt.md"), HOST=host, MEMWIKI=memwiki)


def install_guide(host: str) -> str:
    """The install guide for one host (the same text as its section of docs/hosts.md)."""
    _check(host)
    return template(f"guide-{host}.md")


def _check(host: str) -> None:
    if host not in HOSTS:
        raise InvalidInput(f"unknown host {host!r} (known: {', '.join(HOSTS)})")
