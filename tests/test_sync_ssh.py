"""Sync against real servers on loopback: sshd (agent, key file, wrong key) and smart HTTP.

The SSH tests here exercise the fallback for machines without the `git` command: memwiki
then transfers through libgit2, which reads $HOME/.ssh (the tests run it with a PATH that
has no git). With git installed, network operations go through it: those tests, with a
~/.ssh/config alias and a dedicated user, are in test_sync_transport.py.

The sshd runs as this test's own user with keys generated into tmp_path; the HTTP server
wraps `git http-backend` behind Basic authentication. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SSHD = shutil.which("sshd") or next(
    (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.access(p, os.X_OK)), None
)
TOOLS = {name: shutil.which(name) for name in ("ssh-keygen", "ssh-agent", "ssh-add", "git")}
USER = pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture
def no_git(tmp_path) -> dict[str, str]:
    """The environment of a machine without the git command (memwiki falls back to libgit2)."""
    empty = tmp_path / "no-git-bin"
    empty.mkdir()
    return {"PATH": str(empty)}


def gitcli(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not start listening on {port}")


def keygen(path: Path) -> Path:
    subprocess.run(
        [TOOLS["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-C", "memwiki-test", "-f", path],
        check=True,
    )
    return path


class Server:
    """A running sshd on loopback that accepts one user key."""

    def __init__(self, root: Path, port: int, host_pub: str, user_key: Path, wrong_key: Path):
        self.root, self.port, self.host_pub = root, port, host_pub
        self.user_key, self.wrong_key = user_key, wrong_key

    def url(self, repo: Path) -> str:
        return f"ssh://{USER}@127.0.0.1:{self.port}{repo}"

    def client_home(self, home: Path, key: Path | None) -> None:
        """known_hosts with this server (libgit2 reads $HOME/.ssh), and maybe a key file."""
        ssh = home / ".ssh"
        ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {self.host_pub}\n")
        (ssh / "id_ed25519").unlink(missing_ok=True)
        if key is not None:
            shutil.copy(key, ssh / "id_ed25519")
            (ssh / "id_ed25519").chmod(0o600)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory) -> Iterator[Server]:
    """Start sshd on 127.0.0.1:<free port>; skip only when OpenSSH is not installed."""
    missing = [n for n in ("ssh-keygen", "ssh-agent", "ssh-add") if not TOOLS[n]]
    if SSHD is None or missing:
        pytest.skip(
            "OpenSSH server/client not installed (sshd, ssh-keygen, ssh-agent, ssh-add): "
            "apt-get install openssh-server openssh-client"
        )
    root = tmp_path_factory.mktemp("sshd")
    host_key = keygen(root / "host_key")
    user_key = keygen(root / "user_key")
    wrong_key = keygen(root / "wrong_key")
    shutil.copy(root / "user_key.pub", root / "authorized_keys")
    port = free_port()
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
        "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        f"PubkeyAuthentication yes\nAllowUsers {USER}\nPermitRootLogin prohibit-password\n"
        "UsePAM no\nLogLevel ERROR\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", root / "sshd_config"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc, "sshd")
        host_pub = " ".join((root / "host_key.pub").read_text().split()[:2])
        yield Server(root, port, host_pub, user_key, wrong_key)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def agent(tmp_path, sshd) -> Iterator[str]:
    """An ssh-agent holding the authorised key; yields its socket path."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        [TOOLS["ssh-agent"], "-D", "-a", sock], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run([TOOLS["ssh-add"], "-q", sshd.user_key], env=env, check=True)
        yield str(sock)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def recall(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Notes about {name}\n---\n{body}"


def setup_pair(tmp_path: Path, run_memwiki) -> tuple[Path, Path]:
    """A bare repository and a wiki with one RecallFile to push."""
    remote = tmp_path / "remote.git"
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    wiki = tmp_path / "wiki"
    assert run_memwiki("init", wiki).returncode == 0
    (wiki / "memory/ssh.md").write_text(recall("ssh", "Pushed over SSH.\n"))
    return remote, wiki


def test_sync_over_ssh_with_a_key_in_an_agent(
    tmp_path, sshd, agent, run_memwiki, isolated_env, no_git
):
    sshd.client_home(isolated_env, key=None)  # no key file: only the agent can succeed
    remote, wiki = setup_pair(tmp_path, run_memwiki)
    assert run_memwiki("--wiki", wiki, "remote", "add", sshd.url(remote)).returncode == 0
    agent_env = {"SSH_AUTH_SOCK": agent, **no_git}
    done = run_memwiki("--wiki", wiki, "sync", "--json", env=agent_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pushed"] is True
    assert gitcli(remote, "rev-parse", "main") == gitcli(wiki, "rev-parse", "HEAD")
    # A second device clones over SSH with the same agent, changes something, and syncs back.
    other = tmp_path / "other"
    done = run_memwiki("clone", sshd.url(remote), other, env=agent_env)
    assert done.returncode == 0, done.stderr
    (other / "memory/ssh.md").write_text(recall("ssh", "Pushed over SSH.\nEdited on the other.\n"))
    assert run_memwiki("--wiki", other, "sync", env=agent_env).returncode == 0
    done = run_memwiki("--wiki", wiki, "sync", "--json", env=agent_env)
    assert json.loads(done.stdout)["merged"] == "fast-forward"
    assert "Edited on the other." in (wiki / "memory/ssh.md").read_text()


@pytest.mark.parametrize("with_user", [True, False], ids=["user-in-url", "login-name"])
def test_sync_over_ssh_with_a_key_file_and_no_agent(
    tmp_path, sshd, run_memwiki, isolated_env, monkeypatch, with_user, no_git
):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    sshd.client_home(isolated_env, key=sshd.user_key)
    remote, wiki = setup_pair(tmp_path, run_memwiki)
    url = sshd.url(remote) if with_user else sshd.url(remote).replace(f"{USER}@", "")
    assert run_memwiki("--wiki", wiki, "remote", "add", url).returncode == 0
    done = run_memwiki("--wiki", wiki, "sync", env=no_git)
    assert done.returncode == 0, done.stderr
    assert gitcli(remote, "rev-parse", "main") == gitcli(wiki, "rev-parse", "HEAD")
    assert "memory/ssh.md" in gitcli(remote, "ls-tree", "-r", "--name-only", "main")


def test_a_wrong_key_is_one_error_line_and_changes_nothing(
    tmp_path, sshd, run_memwiki, isolated_env, monkeypatch, no_git
):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    sshd.client_home(isolated_env, key=sshd.wrong_key)
    remote, wiki = setup_pair(tmp_path, run_memwiki)
    assert run_memwiki("--wiki", wiki, "remote", "add", sshd.url(remote)).returncode == 0
    before = (gitcli(wiki, "rev-parse", "HEAD"), gitcli(wiki, "status", "--porcelain"))
    refs = gitcli(wiki, "for-each-ref")
    done = run_memwiki("--wiki", wiki, "sync", env=no_git)
    assert done.returncode == 5
    assert done.stderr == (
        "memwiki: error: cannot authenticate to 127.0.0.1 over SSH: tried ~/.ssh/id_ed25519 "
        "(no ssh-agent: SSH_AUTH_SOCK is not set); load a key authorised on the server "
        "into ssh-agent or put it in ~/.ssh/id_ed25519 (~/.ssh/config, core.sshCommand and "
        "GIT_SSH_COMMAND need the git command)\n"
    )
    assert (gitcli(wiki, "rev-parse", "HEAD"), gitcli(wiki, "status", "--porcelain")) == before
    assert gitcli(wiki, "for-each-ref") == refs
    assert "?? memory/ssh.md" in before[1]  # the hand edit is still there, uncommitted
    assert gitcli(remote, "for-each-ref") == ""
    # An unknown host key is refused, never trusted on first use.
    (isolated_env / ".ssh/known_hosts").write_text("")
    shutil.copy(sshd.user_key, isolated_env / ".ssh/id_ed25519")
    done = run_memwiki("--wiki", wiki, "sync", env=no_git)
    assert done.returncode == 5 and "SSH host key of 127.0.0.1 is unknown" in done.stderr
    assert gitcli(remote, "for-each-ref") == ""


# ------------------------------------------------------------------ HTTP(S) credentials

TOKEN = "t0ken-for-tests"


class GitHTTP(BaseHTTPRequestHandler):
    """Smart HTTP through `git http-backend`, behind Basic auth with one password."""

    project_root = ""
    password = TOKEN

    def log_message(self, *args) -> None:
        pass

    def _authorised(self) -> str | None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return user if password == self.password else None

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []  # libgit2 streams pushes in chunks
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        self.rfile.readline()
        return b"".join(chunks)

    def _serve(self) -> None:
        user = self._authorised()
        if user is None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        body = self._body()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": self.project_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": user,
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = out.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve


@pytest.fixture
def http_remote(tmp_path) -> Iterator[tuple[str, Path]]:
    """(URL, bare repository) of a password-protected smart HTTP remote on loopback."""
    remote = tmp_path / "served" / "remote.git"
    remote.parent.mkdir()
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    handler = type("Handler", (GitHTTP,), {"project_root": str(remote.parent)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/remote.git", remote
    finally:
        server.shutdown()
        server.server_close()


def test_http_remote_with_memwiki_git_token(tmp_path, http_remote, run_memwiki):
    url, remote = http_remote
    wiki = tmp_path / "wiki"
    assert run_memwiki("init", wiki).returncode == 0
    assert run_memwiki("--wiki", wiki, "remote", "add", url).returncode == 0
    done = run_memwiki("--wiki", wiki, "sync", env={"MEMWIKI_GIT_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    assert gitcli(remote, "rev-parse", "main") == gitcli(wiki, "rev-parse", "HEAD")


def test_http_remote_with_the_git_credential_helper(
    tmp_path, http_remote, run_memwiki, isolated_env
):
    url, remote = http_remote
    host = url.split("/")[2]
    (isolated_env / ".gitconfig").write_text("[credential]\n\thelper = store\n")
    (isolated_env / ".git-credentials").write_text(f"http://someone:{TOKEN}@{host}\n")
    done = run_memwiki("clone", url, tmp_path / "wiki")  # an empty remote: laid out here
    assert done.returncode == 0, done.stderr
    assert run_memwiki("--wiki", tmp_path / "wiki", "sync").returncode == 0
    assert gitcli(remote, "rev-parse", "main") == gitcli(tmp_path / "wiki", "rev-parse", "HEAD")


def test_http_remote_without_credentials_names_what_was_tried(
    tmp_path, http_remote, run_memwiki, no_git
):
    url, remote = http_remote
    done = run_memwiki("clone", url, tmp_path / "wiki")
    assert done.returncode == 5
    host = url.split("/")[2]
    assert done.stderr == (
        f"memwiki: error: cannot authenticate to 127.0.0.1 over HTTP (could not read Username "
        f"for 'http://{host}': terminal prompts disabled): configure a git credential helper "
        "or set MEMWIKI_GIT_TOKEN\n"
    )
    assert not (tmp_path / "wiki").exists()
    assert not list(tmp_path.glob(".wiki.clone-*"))
    done = run_memwiki("clone", url, tmp_path / "wiki", env={"MEMWIKI_GIT_TOKEN": "wrong"})
    assert done.returncode == 5 and "Authentication failed" in done.stderr
    assert "the server refused MEMWIKI_GIT_TOKEN" in done.stderr  # not "set the token"
    # Without git (libgit2), the error says what was tried and what needs git.
    done = run_memwiki("clone", url, tmp_path / "wiki", env=no_git)
    assert done.returncode == 5
    assert done.stderr == (
        "memwiki: error: cannot authenticate to 127.0.0.1 over HTTP: tried nothing "
        "(MEMWIKI_GIT_TOKEN is not set); set MEMWIKI_GIT_TOKEN to a token with access to the "
        "repository (credential helpers, http.sslCAInfo and proxies need the git command)\n"
    )


# ------------------------------------------------------------------ credential rules


def test_transport_and_redaction():
    from memwiki.git.credentials import host_of, redact, transport

    assert transport("ssh://me@host:22/x.git") == "ssh"
    assert transport("git@github.com:me/wiki.git") == "ssh"
    assert transport("https://github.com/me/wiki.git") == "https"
    assert transport("file:///srv/wiki.git") == "local"
    assert transport("/srv/wiki.git") == "local"
    assert transport("./relative/wiki.git") == "local"
    assert host_of("git@github.com:me/wiki.git") == "github.com"
    assert redact("https://me:secret@example.com/w.git") == "https://***@example.com/w.git"
    assert redact("https://ghp_T0k:x-oauth-basic@github.com/w") == "https://***@github.com/w"
    assert redact("ssh://git:pw@example.com/w.git") == "ssh://git:***@example.com/w.git"
    assert (
        redact("fetch https://a:b@h/x and https://c@h/y")
        == "fetch https://***@h/x and https://***@h/y"
    )
    assert redact("https://ghp_Tok3n@github.com/me/w.git") == "https://***@github.com/me/w.git"
    assert redact("ssh://git@example.com:22/w.git") == "ssh://git@example.com:22/w.git"


def test_a_passphrase_key_is_skipped_with_a_reason(
    tmp_path, sshd, run_memwiki, isolated_env, monkeypatch, no_git
):
    from memwiki.git.credentials import key_is_encrypted

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    locked = tmp_path / "locked"
    subprocess.run(
        [TOOLS["ssh-keygen"], "-q", "-t", "ed25519", "-N", "a passphrase", "-f", locked],
        check=True,
    )
    assert key_is_encrypted(locked) and not key_is_encrypted(sshd.user_key)
    sshd.client_home(isolated_env, key=locked)
    remote, wiki = setup_pair(tmp_path, run_memwiki)
    run_memwiki("--wiki", wiki, "remote", "add", sshd.url(remote))
    done = run_memwiki("--wiki", wiki, "sync", env=no_git)
    assert done.returncode == 5
    assert "tried nothing" in done.stderr
    assert "~/.ssh/id_ed25519 skipped (it has a passphrase: add it to ssh-agent)" in done.stderr


def test_the_credentials_callback_never_loops(tmp_path):
    import pygit2
    from pygit2.enums import CredentialType

    from memwiki.config import load
    from memwiki.errors import StorageError
    from memwiki.git.credentials import MAX_ATTEMPTS, Callbacks

    callbacks = Callbacks("https://example.invalid/w.git", load(environ={"HOME": str(tmp_path)}))
    with pytest.raises(StorageError, match="tried nothing"):
        callbacks.credentials("https://example.invalid/w.git", None, CredentialType.SSH_CUSTOM)
    key = keygen(tmp_path / "k")
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    for name in ("id_ed25519", "id_ecdsa", "id_rsa"):
        shutil.copy(key, ssh / name)
    env = {"HOME": str(tmp_path), "SSH_AUTH_SOCK": str(tmp_path / "agent")}
    callbacks = Callbacks("ssh://me@h/w.git", load(environ=env))
    offered = [
        callbacks.credentials("ssh://me@h/w.git", "me", CredentialType.SSH_KEY) for _ in range(4)
    ]
    assert isinstance(offered[0], pygit2.KeypairFromAgent)
    assert [o.credential_tuple[2] for o in offered[1:]] == [
        str(ssh / n) for n in ("id_ed25519", "id_ecdsa", "id_rsa")
    ]
    with pytest.raises(StorageError, match="tried ssh-agent, ~/.ssh/id_ed25519"):
        callbacks.credentials("ssh://me@h/w.git", "me", CredentialType.SSH_KEY)
    assert callbacks.attempts <= MAX_ATTEMPTS


def test_a_dead_agent_socket_falls_back_to_the_key_file(
    tmp_path, sshd, run_memwiki, isolated_env, no_git
):
    sshd.client_home(isolated_env, key=sshd.user_key)
    remote, wiki = setup_pair(tmp_path, run_memwiki)
    run_memwiki("--wiki", wiki, "remote", "add", sshd.url(remote))
    env = {"SSH_AUTH_SOCK": str(tmp_path / "gone"), **no_git}
    done = run_memwiki("--wiki", wiki, "sync", env=env)
    assert done.returncode == 0, done.stderr
    assert gitcli(remote, "rev-parse", "main") == gitcli(wiki, "rev-parse", "HEAD")


READ_ONLY_KEY = (
    'command="case \\"$SSH_ORIGINAL_COMMAND\\" in git-upload-pack*) eval '
    '\\"$SSH_ORIGINAL_COMMAND\\";; *) echo \'ERROR: The key you are authenticating with has '
    "been marked as read only.' >&2; exit 1;; esac\" "
)


@pytest.mark.parametrize("git_command", [True, False], ids=["git", "libgit2"])
def test_a_read_only_ssh_key_says_no_write_access(
    tmp_path, sshd, run_memwiki, isolated_env, monkeypatch, no_git, git_command
):
    """A deploy key marked read-only (the server runs git-upload-pack only, as GitHub
    does): the fetch works and the push is refused. Bug: the error sent people to load
    another key or repeated the server's line as a failed connection."""
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    sshd.client_home(isolated_env, key=sshd.user_key)
    remote, wiki = setup_pair(tmp_path, run_memwiki)
    keys = sshd.root / "authorized_keys"
    assert run_memwiki("--wiki", wiki, "remote", "add", sshd.url(remote)).returncode == 0
    known = isolated_env / ".ssh/known_hosts"
    ssh = f"ssh -i {sshd.user_key} -o UserKnownHostsFile={known} -o BatchMode=yes"
    env = {"GIT_SSH_COMMAND": ssh} if git_command else no_git
    authorised = keys.read_text()
    keys.write_text(READ_ONLY_KEY + authorised)
    try:  # the server is the module's: the other tests need the key as it was
        done = run_memwiki("--wiki", wiki, "sync", env=env)
    finally:
        keys.write_text(authorised)
    assert done.returncode == 5, done.stdout
    print(done.stderr)
    assert done.stderr.count("\n") == 1
    assert "marked as read only" in done.stderr
    assert "no write access" in done.stderr and "ssh-agent" not in done.stderr
    assert "need the git command" not in done.stderr
    assert gitcli(remote, "for-each-ref") == ""
