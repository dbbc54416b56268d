"""Secret scrubbing: every secret-looking span becomes ``[REDACTED:<kind>]``.

Transcripts are scrubbed in memory, before anything reaches the disk (DESIGN §8.6).
The patterns favour recall on well-known token shapes and stay conservative on
free text, so git SHAs, UUIDs and ordinary code survive.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

MARK = "[REDACTED:"


def marker(kind: str) -> str:
    """The replacement text for one secret of the given kind."""
    return f"{MARK}{kind}]"


# (kind, pattern, group holding the secret; 0 = the whole match). Order matters: the
# specific shapes run before the generic key/value rules so the reported kind is precise.
_TOKEN_PATTERNS: list[tuple[str, str, int]] = [
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # unterminated (a truncated paste): eat the header lines and the base64 body
        r"|(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z\-]+:[^\n]*))*)",
        0,
    ),
    ("anthropic-api-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
    ("openai-api-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", 0),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    ("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", 0),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", 0),
    ("groq-api-key", r"\bgsk_[A-Za-z0-9]{40,}", 0),
    ("xai-api-key", r"\bxai-[A-Za-z0-9]{40,}", 0),
    ("replicate-token", r"\br8_[A-Za-z0-9]{30,}", 0),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", 0),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", 0),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b", 0),
    (
        "aws-secret-key",
        r"(?i:aws[A-Za-z0-9_ .\-]{0,24}?(?:secret|sak)[A-Za-z0-9_ .\-]{0,24}?)"
        r"[\"']?\s*(?::=|=>|=|:)\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
    ),
    ("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b", 0),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}", 0),
    ("gitlab-token", r"\bgl(?:pat|ptt|dt|rt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_\-]{20,}", 0),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", 0),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9]+/[A-Za-z0-9]+/[A-Za-z0-9]+",
        0,
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", 0),
    # a digit is required so that prose such as "bearer tokenization" survives
    ("bearer-token", r"(?i:\bbearer)\s+(?=[A-Za-z0-9._~+/\-]*[0-9])([A-Za-z0-9._~+/\-]{16,}=*)", 1),
    (
        "basic-auth",
        r"(?i:authorization[\"']?\s*[:=]\s*[\"']?basic)\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        1,
    ),
    ("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\"'<>]+:([^\s@/\"'<>]+)@", 1),
    (
        "secret-flag",
        r"(?<![A-Za-z0-9_\-])(?i:--?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret))"
        r"(?:=|[ \t]+)([\"'][^\"'\n]+[\"']|[^\s\"'-][^\s\"']*)",
        1,
    ),
]
_COMPILED = [(kind, re.compile(rx), group) for kind, rx, group in _TOKEN_PATTERNS]

# A key/value pair: KEY=value, KEY: value, "key": "value", export KEY=value.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]*)(?P=q)"
    r"(?P<sep>[ \t]*(?::=|=>|=|:)[ \t]*)"
    r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|<[^<>\n]*>|[^\s\"',;]+)"
)

_SECRET_WORDS = {
    "secret",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "token",
    "apikey",
    "credential",
    "credentials",
    "privatekey",
}
_KEY_QUALIFIERS = {
    "api",
    "access",
    "secret",
    "private",
    "signing",
    "encryption",
    "master",
    "license",
    "client",
    "session",
    "account",
    "service",
}
# Values that are names of things rather than secrets: types and empty values, as code
# spells them (case-sensitive, so a password that happens to be "OPTIONAL" is still caught).
CODE_WORDS = set(
    [
        "None",
        "null",
        "nil",
        "NULL",
        "true",
        "false",
        "True",
        "False",
        "str",
        "string",
        "bytes",
        "int",
        "bool",
        "number",
        "boolean",
        "any",
        "undefined",
        "SecretStr",
    ]
)
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|<[^>]*>|\{\{.*\}\}|[*xX.]+)$"
)


def _key_words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[\s_.\-]+", spaced.lower()) if w]


def key_looks_secret(key: str) -> bool:
    """True when a field name says its value is a secret (API_KEY, db_password, apiKey…)."""
    words = _key_words(key)
    if not words:
        return False
    last = words[-1]
    if last in _SECRET_WORDS:
        return True
    return last == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS


def value_looks_secret(value: str) -> bool:
    """False for placeholders, type names, code calls and values already redacted."""
    inner = value.strip().strip("\"'").strip()
    if len(inner) < 3 or inner.startswith(MARK) or inner in CODE_WORDS:
        return False
    if _PLACEHOLDER.match(inner):
        return False
    # `token = os.getenv("X")` or `password: str | None` is code about a secret, not one.
    return not ("(" in inner or "[" in inner or inner.startswith(("{", "|")))


def _sub_group(
    pattern: re.Pattern[str], group: int, kind: str, text: str, counts: Counter[str]
) -> str:
    def repl(m: re.Match[str]) -> str:
        secret = m.group(group)
        if secret.startswith(MARK):
            return m.group(0)
        counts[kind] += 1
        start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
        whole = m.group(0)
        return whole[:start] + marker(kind) + whole[end:]

    return pattern.sub(repl, text)


def _sub_assignments(text: str, counts: Counter[str]) -> str:
    def repl(m: re.Match[str]) -> str:
        val = m.group("val")
        if not key_looks_secret(m.group("key")) or not value_looks_secret(val):
            return m.group(0)
        counts["secret-assignment"] += 1
        quote = val[0] if val[:1] in ("'", '"') and len(val) > 1 else ""
        new_val = f"{quote}{marker('secret-assignment')}{quote}"
        return m.group(0)[: m.start("val") - m.start(0)] + new_val

    return _ASSIGNMENT.sub(repl, text)


def _one_pass(text: str, counts: Counter[str]) -> str:
    for kind, pattern, group in _COMPILED:
        text = _sub_group(pattern, group, kind, text, counts)
    return _sub_assignments(text, counts)


def scrub_text(text: str, counts: Counter[str] | None = None) -> str:
    """Redact every secret in text; add one count per redaction to counts."""
    counts = counts if counts is not None else Counter()
    # One rule's replacement can expose another's match; repeat until nothing changes
    # so that scrubbing scrubbed text is always a no-op.
    for _ in range(4):
        new = _one_pass(text, counts)
        if new == text:
            break
        text = new
    return text


def scrub_value(value: Any, counts: Counter[str] | None = None) -> Any:
    """Scrub every string inside a JSON value, recursively, keys included."""
    counts = counts if counts is not None else Counter()
    walk: Callable[[Any], Any]

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return scrub_text(v, counts)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            out: dict[str, Any] = {}
            for k, x in v.items():
                value = walk(x)
                # {"password": "hunter2"}: the secret-ness lives in the key, not the string.
                if (
                    isinstance(value, str)
                    and MARK not in value
                    and key_looks_secret(k)
                    and value_looks_secret(value)
                ):
                    counts["secret-assignment"] += 1
                    value = marker("secret-assignment")
                out[scrub_text(k, counts) if isinstance(k, str) else k] = value
            return out
        return v

    return walk(value)
