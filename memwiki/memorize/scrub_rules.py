"""Secret classes the provider rules cannot know: where a value sits says it is a secret.

Key/value assignments (env, shell, JSON, YAML, INI, XML, connection strings), CLI
password flags, credentials in URLs, netrc/pgpass/htpasswd lines, private key blocks in
every framing, and high-entropy values in assignment positions. Each rule also knows
what code about a secret looks like (`password: str`, `token = os.getenv(...)`), so that
code, hashes, ids and prose survive.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator

from . import scan
from .scrub_values import (
    NEUTRAL,
    NEVER,
    STRONG,
    WEAK,
    assignment_secret,
    hex_key,
    is_placeholder,
    key_strength,
    looks_random,
    passwordish,
    value_is_code,
)

Span = tuple[int, int, str]

# ---------------------------------------------------------------- rules

_VALUE = (
    r"(?P<val>\"(?:[^\"\\\n]|\\[^\"\n])*\"|\\\"(?:[^\"\\\n]|\\(?!\"))*\\\"|'[^'\n]*'"
    r"|`[^`\n]*`|<[^<>\n]*>|[^\s\"'`,;]+)"
)
# Possessive `*+`: what follows the key (a quote, a blank, `:`/`=`/`?`) or a blank (a value)
# is never a character of it, so giving some back could not match; without `+` the
# engine tried, once a character, on every word of the text.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<q>\\?[\"']?)(?P<key>[$@]?[A-Za-z_][A-Za-z0-9_.\-]*+)(?P=q)"
    r"(?P<sep>[ \t]*+(?::=|=>|\?=|=|:)[ \t]*+)" + _VALUE
)
_XML = re.compile(
    r"(?i)<(?P<key>[\w.:-]*(?:password|passwd|secret|token|api[-_]?key|apikey|passphrase"
    r"|access[-_]?key|secret[-_]?key|private[-_]?key))>\s*(?P<val>[^<\s][^<]{0,1000}?)\s*</(?P=key)>"
)


def _unquote(val: str) -> tuple[int, int, bool]:
    """(offset, length) of the value inside its quotes, and whether it was bare."""
    for q in ('\\"', '"', "'", "`"):
        if len(val) >= 2 * len(q) and val.startswith(q) and val.endswith(q):
            return len(q), len(val) - 2 * len(q), False
    inner = val.rstrip(")]}>:;")  # `login(username: str, password: str):` the '):' is code
    return 0, len(inner), True


# The shortest value (quotes included) assignment_secret can call a secret, by key strength:
# a random value needs 20 characters under a neutral name, 10 under a weak one, and
# nothing is one under a NEVER name. Most `key: value` pairs stop here, before the rest.
_SHORTEST = {NEUTRAL: 20, WEAK: 10, STRONG: 0, NEVER: 1 << 30}


_SHELL_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def _assignments(text: str) -> Iterator[Span]:
    pos = 0
    while (m := _ASSIGNMENT.search(text, pos)) is not None:
        # A value that is no secret may hold the next pair (`format=csv&token=…`,
        # `$env:API_TOKEN = …`): search again from inside it, not after it.
        pos = m.start("val")
        val, strength = m.group("val"), key_strength(m.group("key"))
        if len(val) < _SHORTEST[strength]:
            continue  # what assignment_secret would say: no value this short can be one
        if val.startswith("//") or (m.group("key")[0] == "$" and "=" not in m.group("sep")):
            continue  # `https://…` is a URL and `$PWD:/app` an expansion, not assignments
        off, n, bare = _unquote(val)
        start = m.start("val") + off
        value = text[start : start + n]
        typed = m.group("sep").strip() == ":"
        # `PGPASSWORD=pw psql`, `export DB_PASS=x9`: shell and .env, where a value is text
        literal = m.group("sep") == "=" and _SHELL_NAME.fullmatch(m.group("key")) is not None
        after = text[m.end() : m.end() + 3]
        if assignment_secret(m.group("key"), value, bare, after, typed, literal):
            yield start, start + n, "secret-assignment"
            pos = m.end()
    for m in _XML.finditer(text):
        if not value_is_code(m.group("val"), False):
            yield m.start("val"), m.end("val"), "secret-assignment"


_PEM = (
    r"-{3,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{3,5}"
    r"(?:[\s\S]{0,20000}?-{3,5} ?END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{3,5}"
    # unterminated (a truncated paste): the header lines and the base64 body, with real
    # or JSON-escaped (\n, \\n) line breaks
    r"|(?:(?:[ \t]*(?:\r?\n|(?:\\{1,2}r)?\\{1,2}n)|[ \t]+)[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z\-]+:[^\n\\]*))*)"
)
_CMD_FLAGS = (
    # command, the flag that takes the password (value attached or after a space), keywords
    (r"sshpass", r"-p\s*", ("sshpass",)),
    (r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm(?:\s+registry)?)\s+login", r"-p\s+",
     ("login",)),
    (r"mongo(?:sh|dump|restore|import|export|stat|top)?", r"-p\s+", ("mongo",)),
    (r"redis-cli", r"-a\s+", ("redis-cli",)),
    (r"(?:sqlcmd|bcp)", r"-P\s+", ("sqlcmd", "bcp")),
    (r"ldap\w+", r"-w\s+", ("ldap",)),
    (r"(?:zip|unzip)", r"-P\s+", ("zip",)),
    (r"(?:7z|7za|rar|unrar)", r"-p", ("7z", "rar")),
    (r"(?:mysql\w*|mariadb\w*)", r"-p", ("mysql", "mariadb")),
    (r"(?:htpasswd)", r"-b\w*\s+\S+\s+\S+\s+", ("htpasswd",)),
    (r"(?:smbclient|rpcclient|net\s+rpc)", r"-U\s*\S+?%", ("smbclient", "rpc")),
    (r"(?:az\s+login|az\s+ad\s+sp)", r"-p\s+", ("az ",)),
    (r"net\s+use", r"/user:\S+\s+", ("net ",)),
)  # fmt: skip
_FLAG_VALUE = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'][^\s\"']*)"
# `-(?<![\w-]-)` is `(?<![\w-])-` spelled so that the pattern starts with a literal, which
# the regex engine searches for by skipping to each `-` (13x on this rule, same matches).
_LONG_FLAG = (
    r"(?i:-(?<![\w-]-)-?(?:[a-z0-9]+[-_])*(?:password|passwd|pass|passphrase|token|secret|"
    r"api-?key|apikey|access-?key|secret-?key|auth-?token|storepass|keypass|pwd|"
    r"client-secret|sas))(?:=|[ \t]+)" + _FLAG_VALUE
)
_FLAG_PROSE = re.compile(r"(?i)^(?:flag|option|argument|parameter|is|or|and|to|the|with|for|of)$")


# A command's --help: `-p, --password TEXT    Password for …` (a placeholder name, then the
# column of the description) or `--password  prompt for a password` (the description
# itself, two blanks after the flag, where a command line has one).
_HELP_METAVAR = re.compile(r"[A-Z][A-Z_]*[ \t]{2,}\S")
_HELP_TEXT = re.compile(r"[ \t]{2}[a-z][a-z-]* [a-z]")


def _in_help(text: str, start: int) -> bool:
    """The flag's value at start is --help's placeholder name or description."""
    return bool(_HELP_METAVAR.match(text, start) or _HELP_TEXT.match(text, max(0, start - 2)))


def _flag_value_ok(value: str, m: re.Match[str] | None = None) -> bool:
    v = value.strip("\"'")
    if v.startswith("-") or value_is_code(v, value[:1] not in "\"'") or _FLAG_PROSE.match(v):
        return False
    if m is not None and v == value and _in_help(m.string, m.end() - len(v)):
        return False
    return not (re.fullmatch(r"[~.]?/[\w./-]*|[\w-]+\.(?:txt|pem|key|json|env|file)", v))


def _command_value_ok(value: str, m: re.Match[str] | None = None) -> bool:
    """The value of a command's own password flag (`mysql -pPW`, `sshpass -p PW`)."""
    v = value.strip("\"'")
    if len(v) >= 3:
        return _flag_value_ok(value, m)
    # The flag says what follows is a password, however short; not a stand-in (`x`, `*`),
    # a digit or two, punctuation (`mysql -p: prompts`) or a word of prose (`-p is`).
    if v.startswith("-") or not re.search("[A-Za-z0-9]", v) or _FLAG_PROSE.match(v):
        return False
    return not value_is_code(v, False)


Check = Callable[[str, re.Match[str]], bool]


class Rule:
    """A rule; its regex is compiled the first time a text may hold a match (keywords)."""

    __slots__ = ("source", "kind", "group", "ok", "keys", "runs", "_pattern")

    def __init__(
        self,
        source: str,
        kind: str,
        group: int = 0,  # the group holding the secret; 0 = the first group that matched
        ok: Check | None = None,  # a last look at the value (and the match)
        keys: tuple[str, ...] = (),  # lower-case words one of which must be in the text
        runs: scan.Runs | None = None,  # where the fast path tries a rule without keywords
    ):
        self.source, self.kind, self.group, self.ok, self.keys = source, kind, group, ok, keys
        self.runs = runs
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex."""
        if self._pattern is None:
            self._pattern = re.compile(self.source)
        return self._pattern


_rx = Rule


def _pem_b64_private(value: str, m: re.Match[str] | None = None) -> bool:
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in raw


_PASSWORD_WORD = re.compile(r"(?i)pass(?:word|wd|phrase|code)|pwd")
_LETTER_AND_DIGIT = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9])")
# what a password is hashed or encoded with: `the password is sha256 of …`
_ALGORITHM = re.compile(r"(?i)(?:sha|md|crc|blake|argon|pbkdf|aes|rsa|ed|utf|base|rot|v)-?\d+\w*")


# "is" in the languages the password rule reads (`Die PIN ist 4821`, `le code PIN est 4821`)
_PIN_VERBS = r"is|was|will be|ist|lautet|war|est|es|era|é|är|er|jest|je"


def _prose_password(value: str, m: re.Match[str]) -> bool:
    """`the token is Zx9!kLm2`; after `password` itself a digit among letters is enough."""
    if passwordish(value):
        return True
    # `the password is hunter2`: a word with a digit is a password there, where after
    # `token` or `key` it is as often a name (`the key is sha256`, `token of v1beta1`)
    if not _PASSWORD_WORD.match(m.group(0)) or _ALGORITHM.fullmatch(value):
        return False
    return bool(_LETTER_AND_DIGIT.match(value))


def _basic_credentials(value: str, m: re.Match[str] | None = None) -> bool:
    """HTTP Basic credentials: base64 of `user:password`."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw


# "password" in other languages, for the prose rule (keys are judged by scrub_values).
_PASSWORD_KEYS = (
    "passwort", "kennwort", "mot de passe", "contraseña", "contrasena", "senha", "wachtwoord",
    "hasło", "haslo", "lösenord", "losenord", "salasana", "passord", "adgangskode", "heslo",
    "jelszó", "şifre", "sifre", "пароль", "口令", "密码", "密碼", "パスワード", "暗証番号",
    "비밀번호", "암호",
)  # fmt: skip
_PASSWORD_WORDS = "|".join(re.escape(k) for k in _PASSWORD_KEYS)

# Multi-line blocks: run on the whole text, never on a window that could cut one.
_BLOCK_RULES = [
    _rx(_PEM, "private-key", 0, None, ("private key",)),
    _rx(r"PuTTY-User-Key-File-\d+:[^\n]*(?:\r?\n[^\n]*){0,40}?Private-MAC: *[0-9a-fA-F]+",
        "private-key", 0, None, ("putty",)),
    _rx(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}", "private-key", 0, _pem_b64_private,
        ("ls0tls1crudjti",)),
    _rx(r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}", "private-key", 0, None, ("age-secret-key",)),
]  # fmt: skip
_CLASS_RULES = [
    _rx(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\"'<>]*:([^\s@/\"'<>]+)@", "url-password", 1,
        lambda v, m: not is_placeholder(v), ("://",)),
    _rx(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://([A-Za-z0-9_\-]{20,})@", "url-password", 1,
        lambda v, m: looks_random(v, 20) or hex_key(v), ("://",)),
    # webhook URLs carry their secret in the path (Discord, Teams, generic `/hooks/…`)
    _rx(r"https?://[^\s\"'<>]*?(?i:webhook|hooks?)[^\s\"'<>]*?/([A-Za-z0-9_\-]{20,})", "url-secret",
        1, lambda v, m: looks_random(v, 20) or hex_key(v), ("hook",)),
    _rx(r"(?i:\bbearer)\s+(?=[A-Za-z0-9._~+/\-]*[0-9])([A-Za-z0-9._~+/\-]{16,}=*)",
        "bearer-token", 1, None, ("bearer",)),
    _rx(r"(?i:\b(?:proxy-)?authorization)[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z][\w-]*\s+)?"
        r"([A-Za-z0-9._~+/=:\-]{8,})", "auth-header", 1,
        lambda v, m: not value_is_code(v, False) and v.lower() not in ("bearer", "basic"),
        ("authorization",)),
    # `Basic` credentials shorter than the rule above takes: base64 of `user:password`
    _rx(r"(?i:\b(?:proxy-)?authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)\s+"
        r"([A-Za-z0-9+/]{4,}={0,2})(?![\w+/=])", "auth-header", 1, _basic_credentials,
        ("authorization",)),
    _rx(r"(?<![\w-])(?:-u|--user|--proxy-user|--basic-auth)(?:=|[ \t]+)[\"']?[^\s\"':]+:"
        r"([^\s\"']+)", "cli-password", 1,
        lambda v, m: not v.isdigit() and not value_is_code(v, False),
        ("-u", "-user", "--basic-auth")),
    *(
        _rx(rf"\b{cmd}\b[^\n|;&]*?(?<=\s){flag}{_FLAG_VALUE}", "cli-password", 1,
            _command_value_ok, keys)
        for cmd, flag, keys in _CMD_FLAGS
    ),
    _rx(r"(?<![\w-])-pass(?:in|out)?\s+pass:(\S+)", "cli-password", 1, None, ("-pass",)),
    _rx(_LONG_FLAG, "secret-flag", 1, _flag_value_ok,
        ("pass", "token", "secret", "key", "pwd", "sas")),
    _rx(r"(?im)\b(?:login|user)\s+\S+\s+password\s+(\S+)|^\s*password\s+(\S+)\s*$", "netrc",
        0, None, ("password",)),
    _rx(r"(?m)^[^:\s#]+:(?:\d+|\*):[^:\s]+:[^:\s]+:([^\s:]{3,})[ \t]*$", "pgpass", 1),
    _rx(r"\$(?:2[abxy]?|1|5|6|apr1|y|argon2i?d?)\$[^\s:\"',;]{20,}", "password-hash", 0, None,
        ("$",)),
    _rx(r"(?i)\b(?:identified\s+(?:with\s+\w+\s+)?by|password)\s+'([^'\n]+)'",
        "sql-password", 1, lambda v, m: not value_is_code(v, False), ("identified", "password")),
    # `the password is Hunter2!` in prose: only values that look like passwords
    _rx(r"(?i:\b(?:password|passphrase|passwd|pwd|passcode|pin|token|secret|api[ _-]?key)"
        r"\s+(?:(?:is|was|will be|of)\s+)?)[`'\"]?([^\s`'\"]{6,})", "secret-in-prose", 1,
        lambda v, m: _prose_password(v.rstrip(".,;:!?)"), m) and not value_is_code(v, True),
        ("pass", "pwd", "pin", "token", "secret", "key")),
    # PINs and a lock's codes: digits only, which no rule above calls a secret; 4 to 10 of
    # them right after the word (`PIN 3 of the header`, `error code 1603` stay). A lower
    # case `pin` is as often the verb (`pin 2024 as the base year`): only with `is`, `:`…
    # Quotes may be escaped: JSON carried inside a JSON string.
    _rx(r"(?:(?:(?i:\b(?:pin[ -]?(?:code|number)|pass[ -]?code|(?:door|gate|alarm|lock|safe"
        r"|keypad|garage|entry|unlock|access|security)[ -]?code))|\bPIN)\\?[\"']?"
        r"(?:\s*[:=]\s*|\s+(?:(?i:" + _PIN_VERBS + r")\s*:?\s+)?)"
        r"|(?i:\bpin)\\?[\"']?(?:\s*[:=]\s*|\s+(?i:" + _PIN_VERBS + r")\s*:?\s+))"
        r"\\?[`'\"]?([0-9]{4,10})(?![\w-]|[.,:/][0-9])", "pin", 1, None, ("pin", "code")),
    # the same in other languages: `Das Passwort ist …`, `密码是…`, `пароль: …`
    _rx(r"(?i:" + _PASSWORD_WORDS + r")(?:\s*[:：=]\s*|\s+(?:ist|lautet|war|est|es|era|é|är|er"
        r"|is|jest|je)\s*[:：]?\s+|\s*(?:是|为|為|は|는|은|이)\s*)[`'\"「“]?"
        r"([^\s`'\"」”，。、；]{6,})", "secret-in-prose", 1,
        lambda v, m: passwordish(v.rstrip(".,;:!?)")) and not value_is_code(v, True),
        _PASSWORD_KEYS),
    # env lists: `- name: DB_PASSWORD` followed by `value: …` (Kubernetes, ECS, Compose)
    _rx(r"(?i:\bname)[\"']?\s*[:=]\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*,?\s*\n?\s*(?:-\s*)?"
        r"(?i:[\"']?value)[\"']?\s*[:=]\s*[\"']?([^\s\"']{3,})", "secret-assignment", 2,
        lambda v, m: key_strength(m.group(1)) == STRONG and not value_is_code(v, False),
        ("value",)),
    # prefix + random body: whsec_…, sk_live_…, dop_v1_…, the shape most providers use
    _rx(r"\b(?!(?i:sha|md|h|utf|crc)\d)[A-Za-z]{2,12}\d{0,2}(?:_[A-Za-z0-9]{1,8}){0,2}[_-]"
        r"([A-Za-z0-9_-]{24,})\b",
        "prefixed-token", 0,
        lambda v, m: looks_random(v, 20) and _random_part(v) and not _named_not_secret(m),
        # all of it is [A-Za-z0-9_-], 27 characters at least, from a word boundary: the
        # start of such a run or just after a `-` in it (scrub_speed.py: 3x on this rule)
        runs=scan.Runs(re.compile(r"[A-Za-z0-9_-]{27,}"), "-")),
]  # fmt: skip


def _random_part(value: str) -> bool:
    """One `_`/`-` separated part is itself random: not ids like `bridge-20261201-15247`."""
    return any(looks_random(part, 12) for part in re.split("[_-]", value))


_KEY_BEFORE = re.compile(r"[\"']?([A-Za-z_][\w.-]*)[\"']?\s*[:=]\s*[\"']?$")


def _named_not_secret(m: re.Match[str]) -> bool:
    """The value of a field whose name says it is no secret (`"sourceHash": "…"`)."""
    key = _KEY_BEFORE.search(m.string, max(0, m.start() - 80), m.start())
    return key is not None and key_strength(key.group(1)) == NEVER


def _run(
    rules: scan.ByKeyword[Rule], text: str, low: str, present: set[str] | None
) -> Iterator[Span]:
    ascii_low = scan.literal_low(text, low) if low else None
    for rule in rules.select(present):
        pattern, group, ok = rule.pattern, rule.group, rule.ok  # compiled here, if ever
        for m in scan.keyed(pattern, rule.keys, text, low, present, ascii_low, rule.runs):
            g = group or next((i for i in range(1, pattern.groups + 1) if m.group(i)), 0)
            value = m.group(g)
            if value and (ok is None or ok(value, m)):
                yield m.start(g), m.end(g), rule.kind


RULES = (*_BLOCK_RULES, *_CLASS_RULES)  # every rule of this module, for scrub_build
KEYWORDS = {k for rule in RULES for k in rule.keys}
BLOCK_KEYWORDS = frozenset(k for rule in _BLOCK_RULES for k in rule.keys)
_BLOCKS = scan.ByKeyword(_BLOCK_RULES, lambda rule: rule.keys)
_CLASSES = scan.ByKeyword(_CLASS_RULES, lambda rule: rule.keys)


def find_blocks(text: str, present: set[str] | None = None) -> list[Span]:
    """(start, end, kind) of every private key block in text (run on the whole text).

    present: the keywords in text, for the fast path (see gitleaks.find).
    """
    return list(_run(_BLOCKS, text, text.lower() if present is None else "", present))


def find(text: str, low: str | None = None, present: set[str] | None = None) -> list[Span]:
    """(start, end, kind) of every secret the line-sized class rules find in text."""
    low = text.lower() if low is None and present is None else low
    out = list(_run(_CLASSES, text, low or "", present))
    out.extend(_assignments(text))
    return out
