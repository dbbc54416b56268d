"""Writing RecallFiles: render new ones, and edit an existing frontmatter in place.

A rewrite keeps every byte it does not have to change: unknown frontmatter keys stay
exactly as the person (or Obsidian) wrote them, the body is never reflowed, and a UTF-8
byte-order mark stays. Only the blocks of known keys whose values changed are re-rendered.
"""

from __future__ import annotations

from .. import markdown
from ..timestamps import ISO_Z
from .model import KNOWN_KEYS, LONE_SURROGATE, InvalidRecallFile, RecallFile, jsonable, timestamp


def _unicode_ok(value) -> bool:
    # PyYAML writes \x85, \u2028 and \u2029 raw when allow_unicode is on, and reading them
    # back turns them into line breaks; such values are written with escapes instead.
    if isinstance(value, str):
        return not any(c in value for c in "\x85\u2028\u2029")
    if isinstance(value, dict):
        return all(_unicode_ok(k) and _unicode_ok(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_unicode_ok(v) for v in value)
    return True


def _render_value(key: str, value) -> str:
    import yaml

    if key in ("created", "updated") and isinstance(value, str) and ISO_Z.match(value):
        return f"{key}: {value}\n"
    unicode = _unicode_ok(value)
    if isinstance(value, list):
        # Obsidian-style inline list: tags: [release, billing]
        inline = yaml.safe_dump(value, default_flow_style=True, allow_unicode=unicode, width=10**6)
        return f"{key}: {inline.strip()}\n"
    return yaml.safe_dump({key: value}, allow_unicode=unicode, sort_keys=False, width=10**6)


def _as_block_list(key: str, value, old_text: str) -> str | None:
    """key's new list in the block style its old block has (`key:`, then `  - item` lines),
    or None when the old block is not one.

    Obsidian's Properties editor writes lists that way; written back inline, every `add`
    flipped the style and the next edit in Obsidian flipped it back: two noisy diffs.
    """
    import re

    import yaml

    head, _, rest = old_text.partition("\n")
    item = re.match(r"( *)- ", rest)
    if not isinstance(value, list) or not value or item is None:
        return None
    if head.split(":", 1)[1].strip().split("#", 1)[0].strip():
        return None  # a value on the key's own line: not a block list
    dumped = yaml.safe_dump(value, default_flow_style=False, allow_unicode=_unicode_ok(value))
    indent = item.group(1)
    return f"{key}:\n" + "".join(f"{indent}{line}\n" for line in dumped.splitlines())


def _known_values(rf: RecallFile) -> dict:
    values: dict[str, str | list[str]] = {"name": rf.name, "description": rf.description}
    if rf.tags:
        values["tags"] = list(rf.tags)
    if rf.created:
        values["created"] = rf.created
    if rf.updated:
        values["updated"] = rf.updated
    if rf.sources:
        values["sources"] = list(rf.sources)
    return values


def render(rf: RecallFile) -> str:
    """Render a RecallFile to text, editing the original frontmatter in place when there is one."""
    known = _known_values(rf)
    if rf.raw_frontmatter is None:
        fm = "".join(_render_value(k, v) for k, v in known.items())
        if rf.extra:
            import yaml

            extra = jsonable(rf.extra)
            fm += yaml.safe_dump(
                extra, allow_unicode=_unicode_ok(extra), sort_keys=False, width=10**6
            )
        fm = markdown.with_newline(fm, rf.newline)
    else:
        fm = _edit_frontmatter(rf.raw_frontmatter, known, rf.newline)
    # Every line written here takes the file's own line ending: a CRLF file stays CRLF.
    return f"{rf.bom}---{rf.newline}{fm}---{rf.newline}{rf.body}"


def _edit_frontmatter(raw: str, known: dict, newline: str) -> str:
    """raw with the known keys' blocks re-rendered where their values changed (in newline)."""
    from .parse import load_frontmatter

    try:
        old = load_frontmatter(raw, "") or {}
    except InvalidRecallFile:
        old = {}
    if not isinstance(old, dict):
        old = {}
    out: list[str] = []
    seen: set[str] = set()
    for key, text in markdown.key_blocks(raw):
        if key in KNOWN_KEYS:
            seen.add(key)
            if key not in known:
                continue  # the caller cleared it
            old_value = old.get(key)
            if key in ("created", "updated"):
                old_value = timestamp(old_value)
            elif key in ("tags", "sources") and isinstance(old_value, list):
                old_value = [str(v) for v in old_value]
            elif key == "description" and isinstance(old_value, str):
                old_value = old_value.strip()
            if old_value == known[key]:
                out.append(text)
            else:
                new = _as_block_list(key, known[key], text) or _render_value(key, known[key])
                out.append(markdown.with_newline(new, newline))
        else:
            out.append(text)
    if out and not out[-1].endswith("\n"):
        out[-1] += newline
    out.extend(
        markdown.with_newline(_render_value(k, v), newline)
        for k, v in known.items()
        if k not in seen
    )
    return "".join(out)


def check_rendered(text: str, track: str, stem: str) -> None:
    """Refuse (InvalidInput), before anything is written, a text the wiki could not read back
    as the file track/stem.md.

    Bugs it prevents: a lone surrogate (JSON "\\ud800", or invalid UTF-8 in argv) failed
    half-way through a multi-file `put`, leaving the files before it written, or was
    committed and broke `list` and `retrieve` for good; a NUL byte made a file that lint
    and `show` refused after `put` had committed it.
    """
    from ..errors import InvalidInput
    from .parse import parse

    where = f"{track}/{stem}"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{where}: not UTF-8 text (a lone surrogate)") from None
    try:
        back = parse(data, track, stem, f"{where}.md")
    except InvalidRecallFile as exc:
        raise InvalidInput(f"{where}: {exc.problems[0].message}") from None
    # YAML writes a lone surrogate as an escape ("\\uD800") and reads it back as one.
    if any(LONE_SURROGATE.search(v) for v in (back.description, *back.tags, *back.sources)):
        raise InvalidInput(f"{where}: not UTF-8 text (a lone surrogate)")
