"""URL helpers, and libgit2's credentials for when no `git` command is installed.

With git installed, network operations go through it (transport.py) and it uses the
user's own SSH and credential set-up; this module then only names transports and hosts
and redacts URLs. Without git, libgit2 (pygit2) does the transfer: SSH agent then the
default key files, or MEMWIKI_GIT_TOKEN over HTTPS.

libgit2 asks for credentials through a callback and asks again after each rejection, so
the callback hands out one candidate per call and, when none is left, raises a single
error naming everything it tried. libssh2 reads SSH_AUTH_SOCK from the process
environment itself; memwiki only reads it through the configuration to decide whether an
agent is worth offering and to say so in the error.
"""

from __future__ import annotations

import base64
import os
import pwd
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pygit2
from pygit2.enums import CredentialType

from ..errors import MemwikiError, StorageError
from ..urls import redact  # noqa: F401 (git/ prints URLs through it)

KEY_FILES = ("id_ed25519", "id_ecdsa", "id_rsa")
# libgit2 calls back after every rejection; a server that keeps asking must not loop us.
MAX_ATTEMPTS = 10
TOKEN_USER = "x-access-token"  # GitHub's name for token logins; GitLab and others accept any
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?[^/:\s]+:(?!//)")
_PUSH_RACE = ("fast-forward", "fastforward", "fetch first", "not present locally")
# What servers say when these credentials may read but not write: GitHub's read-only deploy
# key ("has been marked as read only") and "Permission to x.git denied to ada", GitLab's
# "not allowed to push", gitolite's "W any wiki ada DENIED by fallthru", a bare repository
# the SSH user cannot write ("insufficient permission for adding an object").
_READ_ONLY = re.compile(
    r"read[ -]only|not allowed to push|write access|insufficient permission|denied by fallthru"
    r"|permission to \S+ denied to",
    re.IGNORECASE,
)


class NoWriteAccess(StorageError):
    """A push refused because the credentials may read the repository but not write it."""


def read_only_refusal(said: str, url: str, who: str) -> NoWriteAccess | None:
    """The error for a push the server refused because `who` may only read, else None.

    Bug it prevents: a read-only deploy key's refusal ("The key you are authenticating
    with has been marked as read only") read as a failed login, and the error said to load
    another key into ssh-agent, though the same key had just fetched.
    """
    line = next((ln.strip() for ln in said.splitlines() if _READ_ONLY.search(ln)), None)
    if line is None:
        return None
    line = re.sub(r"^(?:remote|fatal|error|ERROR|FATAL):\s*", "", line)
    return NoWriteAccess(
        f"{host_of(url)} refused the push ({line}) though it let {who} fetch: that has no "
        "write access to the repository; ask for it or use one that has (nothing was lost: "
        "the next sync that may write pushes it)"
    )


def transport(url: str) -> str:
    """'ssh', 'https', 'http', 'git' or 'local' (file:// URLs and plain paths)."""
    if "://" in url:
        scheme = url.split("://", 1)[0].lower()
        if scheme in ("ssh", "git+ssh", "ssh+git"):
            return "ssh"
        return "local" if scheme == "file" else scheme
    if _SCP_LIKE.match(url) and not re.match(r"^[A-Za-z]:[\\/]", url):
        return "ssh"
    return "local"


def host_of(url: str) -> str:
    """The host part of a remote URL, for messages."""
    if "://" in url:
        return urlsplit(url).hostname or url
    m = _SCP_LIKE.match(url)
    return url[: m.end() - 1].rsplit("@", 1)[-1] if m else url


def local_user() -> str:
    """The login name of this process (from the password database, not the environment)."""
    return pwd.getpwuid(os.getuid()).pw_name


def key_is_encrypted(path: Path) -> bool:
    """True when an SSH private key file needs a passphrase (memwiki never prompts)."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    if "ENCRYPTED" in text:
        return True  # PEM: "Proc-Type: 4,ENCRYPTED" or "BEGIN ENCRYPTED PRIVATE KEY"
    m = re.search(r"-----BEGIN OPENSSH PRIVATE KEY-----(.*?)-----END", text, re.S)
    if not m:
        return False
    try:
        raw = base64.b64decode("".join(m.group(1).split()))
    except ValueError:
        return False
    # openssh-key-v1\0, then the cipher name as a length-prefixed string: "none" or a cipher.
    magic = b"openssh-key-v1\x00"
    if not raw.startswith(magic) or len(raw) < len(magic) + 4:
        return False
    size = int.from_bytes(raw[len(magic) : len(magic) + 4], "big")
    return raw[len(magic) + 4 : len(magic) + 4 + size] != b"none"


class Callbacks(pygit2.RemoteCallbacks):
    """pygit2 callbacks for one network operation on one remote URL."""

    def __init__(self, url: str, config):
        super().__init__()
        self.url = url
        self.kind = transport(url)
        self.config = config
        self.tried: list[str] = []
        self.notes: list[str] = []
        self.attempts = 0
        self.rejected: dict[str, str] = {}
        self.host_key_rejected = False
        self._candidates: Iterator | None = None

    # ------------------------------------------------------------ credentials

    def credentials(self, url, username_from_url, allowed_types):
        """Hand libgit2 the next candidate, or raise the one credentials error."""
        self.attempts += 1
        if self.attempts > MAX_ATTEMPTS:
            raise self.failure()
        if allowed_types & CredentialType.USERNAME and not username_from_url:
            return pygit2.Username(local_user())
        if self._candidates is None:
            user = username_from_url or local_user()
            if allowed_types & CredentialType.SSH_KEY:
                self._candidates = self._ssh(user)
            elif allowed_types & CredentialType.USERPASS_PLAINTEXT:
                self._candidates = self._https(username_from_url)
            else:
                self._candidates = iter(())
        for candidate in self._candidates:
            return candidate
        raise self.failure()

    def _ssh(self, user: str) -> Iterator:
        if self.config.host_env.get("SSH_AUTH_SOCK"):
            self.tried.append("ssh-agent")
            yield pygit2.KeypairFromAgent(user)
        else:
            self.notes.append("no ssh-agent: SSH_AUTH_SOCK is not set")
        found = False
        for name in KEY_FILES:
            path = self.config.home / ".ssh" / name
            if not path.is_file():
                continue
            found = True
            if key_is_encrypted(path):
                self.notes.append(
                    f"~/.ssh/{name} skipped (it has a passphrase: add it to ssh-agent)"
                )
                continue
            self.tried.append(f"~/.ssh/{name}")
            # No public key file: libssh2 derives it, and a stale .pub cannot mislead it.
            yield pygit2.Keypair(user, None, str(path), "")
        if not found:
            self.notes.append("no key file ~/.ssh/" + ", ".join(KEY_FILES))

    def _https(self, username: str | None) -> Iterator:
        token = self.config.git_token
        if token:
            self.tried.append("MEMWIKI_GIT_TOKEN")
            yield pygit2.UserPass(username or TOKEN_USER, token)
        else:
            self.notes.append("MEMWIKI_GIT_TOKEN is not set")

    def failure(self) -> StorageError:
        """The one-line error: what was tried and what to do."""
        host = host_of(self.url)
        how = "SSH" if self.kind == "ssh" else self.kind.upper()
        tried = ", ".join(self.tried) if self.tried else "nothing"
        extra = f" ({'; '.join(self.notes)})" if self.notes else ""
        if self.kind == "ssh":
            hint = (
                "load a key authorised on the server into ssh-agent or put it in ~/.ssh/id_ed25519"
            )
        else:
            hint = "set MEMWIKI_GIT_TOKEN to a token with access to the repository"
        return StorageError(
            f"cannot authenticate to {host} over {how}: tried {tried}{extra}; {hint}"
        )

    # ------------------------------------------------------------ host keys, push results

    def certificate_check(self, certificate, valid, host):
        """SSH: only hosts already in ~/.ssh/known_hosts; TLS: libgit2's own verdict."""
        if self.kind != "ssh":
            raise pygit2.Passthrough
        if not valid:
            # libgit2 would let an unknown host key through on Passthrough; memwiki must not.
            self.host_key_rejected = True
        return bool(valid)

    def push_update_reference(self, refname, message):
        """Record a ref the server refused (libgit2 does not raise for it)."""
        if message:
            self.rejected[refname] = message

    def push_raced(self) -> bool:
        """True when the server refused the push because the branch moved meanwhile."""
        return any(any(m in msg.lower() for m in _PUSH_RACE) for msg in self.rejected.values())

    # ------------------------------------------------------------ errors

    def error(self, exc: Exception, action: str) -> MemwikiError:
        """A libgit2 failure of a network operation as one clear memwiki error."""
        if isinstance(exc, MemwikiError):
            return exc
        text = str(exc)
        if self.host_key_rejected or (
            isinstance(exc, pygit2.CertificateError) and self.kind == "ssh"
        ):
            host = host_of(self.url)
            return StorageError(
                f"the SSH host key of {host} is unknown or has changed: connect once with "
                f"`ssh` to check it and record it in ~/.ssh/known_hosts, then try again"
            )
        if action == "push to":  # the fetch before it got in with the same credentials
            refused = read_only_refusal(text, self.url, "the same credentials")
            if refused is not None:
                return refused
        if isinstance(exc, pygit2.AuthError) or "authenticat" in text.lower():
            return self.failure()
        return StorageError(f"cannot {action} {redact(self.url)}: {text}")


def is_push_race(exc: Exception) -> bool:
    """True for libgit2's refusal to push over commits we have not fetched yet."""
    text = str(exc).lower()
    return any(m in text for m in _PUSH_RACE)
