"""Host templates (templates/hosts/*), through the one loader (memwiki.templating)."""

from __future__ import annotations

from ... import templating
from ...errors import InvalidInput
from ..mining.base import HOSTS


def template(name: str) -> str:
    """The text of templates/hosts/<name>."""
    return templating.load(f"hosts/{name}")


def render(text: str, **values: str) -> str:
    """Replace every {{NAME}} with values[NAME]; an unknown placeholder is an error."""
    return templating.fill(text, **values)


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
