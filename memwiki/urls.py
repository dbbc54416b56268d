"""URLs as memwiki prints them: never with a password or token in them.

One rule for every message, `remote show`, `config show` and `doctor`: over http(s) the
whole user part goes (`https://<token>@github.com/...` and `https://<token>:x-oauth-basic@`
carry the token as the user name); over other schemes a password goes and the user name
stays (ssh's `git@` says nothing secret). Bug it prevents: two redactors printed the same
URL in two shapes, and the one for remotes printed `https://TOKEN:x-oauth-basic@` as
`https://TOKEN:***@`.
"""

from __future__ import annotations

import re

# scheme://userinfo@ anywhere in a text; userinfo stops at the first @, / or space. A
# string, compiled (and cached by re) at the first redaction: the prompt hook imports this
# module and almost never redacts.
_USERINFO = r"\b([A-Za-z][A-Za-z0-9+.-]*)://([^/@\s:]*)(:[^/@\s]*)?@"


def _one(match: re.Match) -> str:
    scheme, user, password = match.group(1), match.group(2), match.group(3)
    if scheme.lower() in ("http", "https") and (user or password):
        return f"{scheme}://***@"
    if password is not None:
        return f"{scheme}://{user}:***@"
    return match.group(0)


def redact(text: str) -> str:
    """text (a URL, or a message holding URLs) with their credentials written as ***."""
    return re.sub(_USERINFO, _one, text) if "://" in text else text
