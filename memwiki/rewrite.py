"""A RecallFile merged over the file on disk, as `save`, `put` and `add` write it.

What a rewrite keeps of the file already there: its frontmatter text (keys edited in
place), its byte-order mark and line ending, its `created` stamp, and its `updated` stamp
when nothing else changed (rewriting identical content makes no commit).
"""

from __future__ import annotations

from pathlib import Path

from . import markdown
from . import recallfile as rfmod
from .errors import InvalidInput, StorageError, check_type
from .recallfile import RecallFile


def merged(path: Path, rf: RecallFile) -> tuple[str, bool]:
    """(the text to write at path, whether it creates the file); rf is validated first."""
    if not isinstance(rf.description, str) or not rf.description.strip():
        raise InvalidInput(f"{rf.track}/{rf.name}: description is missing")
    if not rfmod.is_one_line(rf.description):
        raise InvalidInput(f"{rf.track}/{rf.name}: description must be one line")
    _check_types(rf)
    rf.description = rf.description.strip()
    existing = None
    if path.exists():
        try:
            existing = rfmod.read(path, rf.track)
        except rfmod.InvalidRecallFile:
            existing = None  # rewritten whole: the caller supplied a complete file
        except OSError as exc:
            raise StorageError(f"{rf.track}/{rf.name}.md: cannot read: {exc.strerror}") from None
    if existing is not None and rf.raw_frontmatter is None:
        rf.raw_frontmatter = existing.raw_frontmatter
        rf.bom = existing.bom  # a byte-order mark the file had stays
        rf.newline = existing.newline  # and so does its line ending
        rf.extra = {**existing.extra, **rf.extra}
    if existing is not None and rf.body != existing.body:
        # A new body is written in the file's line ending; a kept one keeps its bytes.
        rf.body = markdown.with_newline(rf.body, existing.newline)
    # One clock reading: a new file's 'created' and 'updated' must be equal.
    now = rfmod.now_iso()
    rf.created = rf.created or (existing.created if existing else None) or now
    if existing is not None:
        # Compare with the stamp the file already has, so that rewriting identical
        # content neither bumps 'updated' nor makes a commit.
        rf.updated = existing.updated
    text = rfmod.render(rf)
    if existing is not None and text == rfmod.render(existing):
        return text, False  # unchanged: leave 'updated' alone
    rf.updated = now
    text = rfmod.render(rf)
    rfmod.check_rendered(text, rf.track, path.stem)  # whatever is written must read back
    return text, existing is None and not path.exists()


def _check_types(rf: RecallFile) -> None:
    """A library caller's fields of the wrong type are InvalidInput, before anything is written.

    Bug it prevents: RecallFile(tags="release") was written as `tags: [r, e, l, e, a, s, e]`
    and body=5 as the text "5"; commit_results' payloads were checked, RecallFiles were not.
    """
    where = f"{rf.track}/{rf.name}"
    check_type(f"{where}: body", rf.body, (str,), "a string")
    for key in ("tags", "sources"):
        value = getattr(rf, key)
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(f"{where}: {key} must be a list of strings")
    check_type(f"{where}: extra", rf.extra, (dict,), "a dict")
