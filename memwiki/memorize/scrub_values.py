"""What names and values say: is this field name about a secret, is this value code or random?

The judgement the class rules of scrub_rules make about every key/value pair they find.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import unquote

from .gitleaks import shannon

MARK = "[REDACTED:"

# ------------------------------------------------------------------ keys

_STRONG_LAST = {
    "password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "credential",
    "credentials", "privatekey", "secretkey", "accesskey", "authtoken", "pat", "passcode",
    "mnemonic", "pw", "pword",
    # "password" in the languages sessions are written in (German, Dutch, Portuguese …)
    "passwort", "kennwort", "wachtwoord", "senha", "contrasena", "contraseña", "haslo",
    "hasło", "salasana", "passord", "losenord", "lösenord", "adgangskode", "heslo",
    "jelszo", "jelszó", "sifre", "şifre", "пароль", "motdepasse",
}  # fmt: skip
# A compound spelling (PGPASSWORD, authtoken, dbpassword, 数据库密码) ends with one of these.
_STRONG_SUFFIX = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "secretkey", "passwort",
    "kennwort", "密码", "密碼", "口令", "密钥", "密鑰", "秘钥", "パスワード", "暗証番号",
    "비밀번호", "암호",
)  # fmt: skip
# `first_pass`, `test_pass`: a pass that is a step or a result, not a password (DB_PASS is)
_PASS_NOT_PASSWORD = {
    "first", "second", "third", "last", "next", "prev", "single", "multi", "one", "two",
    "render", "compile", "test", "tests", "lint", "check", "checks", "by", "boarding", "day",
    "hall", "season", "build", "ci", "should", "must", "did", "will", "can",
}  # fmt: skip
_KEY_QUALIFIERS = {
    "api", "access", "secret", "private", "signing", "encryption", "master", "license",
    "client", "session", "account", "service", "auth", "app", "webhook", "admin", "root",
    "consumer", "subscription", "storage", "shared", "hmac", "jwt", "sas", "deploy",
    "developer", "server", "write", "read", "management", "x",
}  # fmt: skip
# The value must also look random: these names hold secrets and ordinary words alike.
_WEAK_LAST = {
    "auth", "key", "session", "sessionid", "sid", "cookie", "sig", "signature", "salt",
    "hmac", "jwt", "bearer", "authorization", "otp", "totp", "seed", "mnemonic", "pass",
    "keydata", "dsn",
}  # fmt: skip
# Names whose values are never secrets, however random they look (ids, hashes, sizes…).
_NEVER_LAST = {
    "id", "ids", "uuid", "guid", "name", "names", "type", "types", "length", "len", "size",
    "count", "max", "min", "limit", "url", "uri", "urls", "endpoint", "host", "hostname",
    "path", "paths", "file", "files", "dir", "filename", "env", "field", "header", "prefix",
    "suffix", "format", "version", "expiry", "expires", "expiration", "ttl", "timeout",
    "hint", "label", "policy", "provider", "mode", "scheme", "scope", "scopes", "algorithm",
    "alg", "enabled", "required", "strength", "rules", "regex", "pattern", "hash", "digest",
    "checksum", "integrity", "sha", "sha1", "sha256", "sha512", "md5", "commit", "rev",
    "revision", "etag", "fingerprint", "ref", "kind", "usage", "method", "location", "arn",
    "region", "user", "username", "login", "email", "owner", "role", "store", "vault",
    "index", "sort", "order", "level", "color", "style", "class", "image",
    "digests", "hashes", "resolved", "tarball", "shasum", "lock", "keyid", "h1",
    "sha384", "sha224", "http", "https",
}  # fmt: skip
NEUTRAL, WEAK, STRONG, NEVER = 0, 1, 2, 3


def key_words(key: str) -> list[str]:
    """A field name split into lower-case words (apiKey -> api, key)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    # Letters of any script stay in their word: `Kennwort_für_DB`, `数据库密码`.
    return [w for w in re.split(r"[\W_]+", spaced.lower()) if w]


# Pure functions of one string, asked about the same keys and tokens over and over in a
# session (every `status: ok`); bounded so that a huge session cannot grow them unbounded.
@lru_cache(maxsize=65536)
def key_strength(key: str) -> int:
    """How much a field name says about its value: NEUTRAL, WEAK, STRONG or NEVER."""
    words = key_words(key)
    if not words:
        return NEUTRAL
    last, compact = words[-1], "".join(words)
    if last in _STRONG_LAST or compact.endswith(_STRONG_SUFFIX):
        return STRONG
    if last == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS:
        return STRONG
    if last == "pass" and len(words) > 1 and words[-2] not in _PASS_NOT_PASSWORD:
        return STRONG  # DB_PASS, SMTP_PASS, MAIL_PASS: a qualified pass is a password
    if compact in ("sessionid", "sessid", "phpsessid", "jsessionid", "connectsid", "sid"):
        return WEAK  # a session id is a bearer credential, unlike other ids
    if last == "data" and len(words) > 1 and words[-2] == "key":
        return WEAK  # kubeconfig client-key-data
    if last in _NEVER_LAST or compact.endswith(("hash", "id", "url", "name", "path")):
        return NEVER
    if last in _WEAK_LAST or any(w in _STRONG_LAST for w in words):
        return WEAK  # `secret_key_base`, `password_salt`: secret words not in last place
    return NEUTRAL


# ---------------------------------------------------------------- values

# Type names and empty values as code spells them (case-sensitive, so a password that
# happens to be "OPTIONAL" is still caught).
CODE_WORDS = {
    "None", "null", "nil", "NULL", "true", "false", "True", "False", "str", "string",
    "String", "bytes", "int", "bool", "number", "boolean", "any", "Any", "undefined",
    "SecretStr", "object", "Object", "char", "float", "double", "long", "unknown", "void",
    "required", "optional", "Optional", "hidden", "redacted", "masked", "omitted", "secret",
    "password", "token", "empty", "unset", "none", "yes", "no", "on", "off", "env",
    "include", "same-origin", "omit", "read", "write", "read-all", "write-all", "function",
    "new", "await", "async", "lambda", "this", "self", "require", "import", "typeof", "def",
    "return", "yield", "class", "static", "const", "let", "var", "final",
}  # fmt: skip
_PLACEHOLDER = re.compile(
    r"^(?:\$.*|%[A-Za-z_(][^%]*%?s?|<[^>]*>|\{\{.*\}\}|\{[A-Za-z_][\w.]*\}|[*xX.•#_-]+"
    r"|(?i:(?:your|my|the|some|enter|insert|replace|put|example|sample|dummy|fake|placeholder"
    r"|test|foo|bar|todo|fixme|xxx)(?:[_\-. ][a-z\-. _]*)?)|(?i:[a-z_\- ]*[_\- ]here)|.*(?:\.\.\.|…))$"
)
_DOTTED = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$")
_CALLISH = re.compile(r"^[A-Za-z_$][\w$.:]*[()\[\]<]")
_SECRETISH = re.compile(r"(?i)pass|pwd|token|secret|key|cred|auth")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIGIT = re.compile(r"[0-9]")


def is_placeholder(value: str) -> bool:
    """`$VAR`, `<password>`, `****`, `your_token_here`: a stand-in, not a secret."""
    v = value.strip()
    # no length floor: `postgres://app:pw@db` holds a password, however short
    return not v or v.startswith(MARK) or bool(_PLACEHOLDER.match(v))


def value_is_code(value: str, bare: bool, typed: bool = False, literal: bool = False) -> bool:
    """True for values that are code about a secret rather than one.

    bare: unquoted. literal: unquoted where code cannot name a variable without a `$`
    (`KEY=value` in a shell or an .env file, a command's argument): a word there is text.
    """
    v = value.strip()
    if not v or v.startswith(MARK) or v in CODE_WORDS or _PLACEHOLDER.match(v):
        return True
    if len(v) < 3 and (v.isdigit() or (bare and not literal)):
        # A secret however short where the context says so (quoted, `KEY=v`, `-pPW`), but
        # `password=pw` is more often a call's argument than a two-letter password, and one
        # or two digits a switch or a count (`REQUIRE_PASSWORD=1`).
        return True
    if re.fullmatch(r"[~.]?/[\w./-]*|#[0-9a-fA-F]{3,8}", v):
        return True  # a path (`PWD=/home/dana`) or a colour (`Token: '#000080'`)
    if not bare:
        return False  # a quoted literal is data, whatever its characters
    if v[0] in "{[(|&*!@<>`" or _CALLISH.match(v) or "${" in v or "$(" in v:
        return True  # a literal, a call, a subscript, a YAML tag or block, a template
    if _DOTTED.match(v) and not any(looks_random(seg, 10) for seg in v.split(".")):
        return True  # `password=cfg.password`, `token: process.env.TOKEN`
    if _IDENT.match(v) and _SECRETISH.search(v) and not literal and not _DIGIT.search(v):
        return True  # `token = auth_token`; `password: Password1` is a password
    # `password: Password` (an annotation) — only after a colon, never in `X=Value`
    return typed and bool(re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:\[.*)?", v))


_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^A-Za-z\d]+")
_UUID = re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_HASH_PREFIX = re.compile(r"(?i)^(?:sha\d*|md5|h1|blake\d*b?|xxh\d*|crc32|git|v\d+)[:-]")


def _wordy(value: str) -> float:
    """Share of characters in pronounceable pieces (4+ letters of one case, like words)."""
    good = 0
    for m in _PIECE.finditer(value):
        low = m.group().lower()
        vowel = re.search("[aeiouy]", low)
        if len(low) < 4 or not low.isalpha() or not vowel or re.search(r"[^aeiouy]{5}", low):
            continue
        if m.group().isupper():
            # SCREAMING_CASE words stand between separators; in a random draw capitals
            # run into digits and lower case
            edges = value[m.start() - 1 : m.start()] + value[m.end() : m.end() + 1]
            if re.search(r"[A-Za-z0-9]", edges):
                continue
        good += len(low)
    return good / max(1, len(value))


def _sequential(value: str) -> bool:
    """An alphabet or a counting run (`0123456789abcdef…`), not a random draw."""
    run = 1
    for a, b in zip(value, value[1:], strict=False):
        run = run + 1 if ord(b) == ord(a) + 1 else 1
        if run >= 6:
            return True
    return False


@lru_cache(maxsize=65536)
def looks_random(value: str, min_len: int = 20) -> bool:
    """True for token-like values (keys, passwords, base64) rather than ids, hashes and words."""
    v = unquote(value.strip()) if "%" in value else value.strip()
    if len(v) < min_len or len(v) > 4096 or re.search(r"[\s()\[\]{}<>,;:'\"\\|*]", v):
        return False  # too short, or code, prose, a regex, a literal
    if _sequential(v):
        return False
    if _UUID.match(v) or re.fullmatch(r"[0-9a-fA-F\-]+", v) or v.isdigit():
        return False  # git SHAs, digests, UUIDs, numbers
    if _HASH_PREFIX.match(v) or v.startswith("data:") or "://" in v:
        return False  # sha256:…, sha512-… (lockfiles), h1:… (go.sum), data: URIs, URLs
    if re.fullmatch(r"[\w.@~-]*(?:/[\w.@~-]+)+/?", v) and not any(
        looks_random(seg, 16) for seg in v.split("/")
    ):
        return False  # a path
    classes = sum(bool(re.search(rx, v)) for rx in ("[a-z]", "[A-Z]", "[0-9]", "[^A-Za-z0-9]"))
    if classes < 2 or _wordy(v) >= 0.4:
        return False
    return shannon(v) >= min(4.0, max(2.5, len(v).bit_length() - 1.6))


_KINDS = tuple(re.compile(rx) for rx in ("[a-z]", "[A-Z]", "[0-9]", "[^A-Za-z0-9]"))


@lru_cache(maxsize=65536)
def passwordish(value: str) -> bool:
    """Mixes letters with digits, symbols or capitals, as passwords must."""
    # asked of every word after `token`, `key` … in prose: compiled once, and cached
    kinds = sum(rx.search(value) is not None for rx in _KINDS)
    digit = any(c.isdigit() for c in value) and not value.isdigit()
    return kinds >= 3 or (digit and len(value) >= 8)


def hex_key(value: str) -> bool:
    """32+ hex digits under a secret-ish name: key material (neutral names keep SHAs)."""
    return bool(re.fullmatch(r"[0-9a-fA-F]{32,}", value)) and not value.isdigit()


def _prose_word(value: str, after: str) -> bool:
    """`Password: required to log in` — a lower-case word followed by more words."""
    return bool(re.fullmatch(r"[a-z][a-z-]{0,30}", value)) and bool(re.match(r"[ \t]+\w", after))


# A PIN is digits only, which no other rule calls a secret; a lock's code is one too.
_PIN_DIGITS = re.compile(r"[0-9]{4,10}")
_CODE_OF = {
    "pin", "door", "gate", "alarm", "lock", "safe", "keypad", "garage", "entry", "unlock",
    "access", "security",
}  # fmt: skip


def pin_key(key: str) -> bool:
    """`pin`, `PIN_CODE`, `doorCode`: a field whose digits are a PIN or a lock's code."""
    words = key_words(key)
    if not words:
        return False
    if words[-1] in ("pin", "pincode"):
        return True
    return len(words) > 1 and words[-1] in ("code", "number") and words[-2] in _CODE_OF


def is_pin(value: str) -> bool:
    """4 to 10 digits, as a PIN or a door code is written."""
    return _PIN_DIGITS.fullmatch(value) is not None


def assignment_secret(
    key: str, value: str, bare: bool, after: str = "", typed: bool = False, literal: bool = False
) -> bool:
    """Is value, assigned to key, a secret? (typed: after a colon; literal: see value_is_code)"""
    if MARK in value:
        return False
    strength = key_strength(key)
    if strength == NEUTRAL and is_pin(value) and pin_key(key):
        return True
    if strength == STRONG:
        code = value_is_code(value, bare, typed, literal)
        return not code and not (bare and not literal and _prose_word(value, after))
    if strength == WEAK:
        if value_is_code(value, bare, typed, literal):
            return False
        return looks_random(value, 10) or hex_key(value)
    return strength == NEUTRAL and looks_random(value, 20)
