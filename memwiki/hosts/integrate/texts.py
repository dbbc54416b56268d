"""Host templates (templates/hosts/*), through the one loader (memwiki.templating)."""

from __future__ import annotations

import re

from ... import templating
from ...errors import InvalidInput
from ..executable import is_memwiki_command
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


def _plain(text: str) -> str:
    # Line endings and trailing blanks are an editor's, not a person's words.
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def is_instruction_block(body: str) -> bool:
    """True when body is the instruction block as some memwiki install wrote it.

    Every version so far wrote this template with only the memwiki command varying (the
    bare name before absolute paths), so any one command in all its places matches.
    """
    parts = _plain(template("instruction-block.md")).split("{{MEMWIKI}}")
    pattern = re.escape(parts[0]) + "".join(
        ("(?P<m>[^\n]+?)" if i == 0 else "(?P=m)") + re.escape(part)
        for i, part in enumerate(parts[1:])
    )
    match = re.fullmatch(pattern, _plain(body))
    return match is not None and (len(parts) == 1 or is_memwiki_command(match["m"]))


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
