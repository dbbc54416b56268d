"""Network operations through the system `git`, against real servers on 127.0.0.1.

- SSH the way people set it up: a `~/.ssh/config` Host alias with HostName, Port, User and an
  IdentityFile in a non-default file. OpenSSH reads the config, keys and known_hosts of the
  user in the password database, never $HOME, so these tests create a dedicated user whose
  home is a fresh directory (root only, as on CI; elsewhere they are skipped with the
  reason), and the real `/usr/bin/ssh` runs as that user: memwiki and git run as the test
  process (their HOME is the test HOME), and the `ssh` that git finds first on PATH is a
  two-line shim that only drops to that user (`setpriv`) before exec'ing the real ssh. No
  GIT_SSH_COMMAND, no -F: ssh finds ~/.ssh/config by itself. The same user logs in on the
  test sshd.
- HTTPS with a private CA made by `openssl` at test time (git http-backend behind Python's
  http.server + ssl), a credential helper, a pre-receive hook that refuses with a message
  (over HTTP and file://), and a server that accepts connections and never answers.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from test_sync_ssh import (  # noqa: F401 (http_remote: a fixture used by name)
    SSHD,
    TOKEN,
    TOOLS,
    GitHTTP,
    free_port,
    http_remote,
    wait_for_port,
)

MEMWIKI = str(Path(sys.executable).parent / "memwiki")
USER_PREFIX = "memwikissh"


def gitcli(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def recall(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Notes about {name}\n---\n{body}"


# ------------------------------------------------------------------ a dedicated user


@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: Path

    def run(self, *argv, env: dict | None = None, timeout: float = 90, cwd=None):
        """Run a command as this user, with HOME = its home (as a login would have it)."""
        full = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        return subprocess.run(
            [str(a) for a in argv],
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            env=full,
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def write(self, rel: str, text: str, mode: int = 0o644) -> Path:
        path = self.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        for p in [path, *path.parents]:
            if p == self.home.parent:
                break
            os.chown(p, self.uid, self.gid)
        return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _userdel(name: str) -> None:
    for _ in range(20):  # useradd/userdel refuse while another one holds /etc/passwd's lock
        if subprocess.run(["userdel", name], capture_output=True).returncode in (0, 6):
            return
        time.sleep(0.2)


@pytest.fixture(scope="module")
def ssh_user() -> Iterator[User]:
    """A user whose home (in the password database) is a fresh directory; removed after."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip(
            "needs root (as on CI) to create a test user: OpenSSH reads ~/.ssh of the user in "
            "the password database, never $HOME"
        )
    for entry in pwd.getpwall():  # left by a killed test run
        m = re.fullmatch(rf"{USER_PREFIX}(\d+)", entry.pw_name)
        if m and not _alive(int(m.group(1))):
            _userdel(entry.pw_name)
            shutil.rmtree(entry.pw_dir, ignore_errors=True)
    name = f"{USER_PREFIX}{os.getpid()}"
    home = Path(tempfile.mkdtemp(prefix="memwiki-ssh-home-"))
    home.chmod(0o755)
    made = None
    for _ in range(20):
        made = subprocess.run(
            ["useradd", "--home-dir", str(home), "--no-create-home", "--shell", "/bin/sh"]
            + ["--password", "*", "--user-group", name],
            capture_output=True,
            text=True,
        )
        if made.returncode == 0:
            break
        time.sleep(0.2)
    assert made is not None and made.returncode == 0, made.stderr if made else ""
    entry = pwd.getpwnam(name)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    user = User(name, entry.pw_uid, entry.pw_gid, home)
    user.write(".gitconfig", "[user]\n\tname = Device User\n\temail = device@example.com\n")
    try:
        yield user
    finally:
        _userdel(name)
        shutil.rmtree(home, ignore_errors=True)


def keygen(user: User, rel: str) -> Path:
    path = user.home / rel
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    subprocess.run(
        [TOOLS["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-C", "memwiki-test", "-f", path],
        check=True,
    )
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(user.home / ".ssh")], check=True)
    return path


@dataclass
class Sshd:
    port: int
    host_pub: str
    authorized: Path


@pytest.fixture(scope="module")
def sshd_for(ssh_user: User) -> Iterator[Sshd]:
    """sshd on 127.0.0.1:<free port> that lets the test user in with the authorised key."""
    if SSHD is None or not TOOLS["ssh-keygen"]:
        pytest.skip("OpenSSH server/client not installed: apt-get install openssh-server")
    root = Path(tempfile.mkdtemp(prefix="memwiki-sshd-"))
    root.chmod(0o755)
    host_key = root / "host_key"
    subprocess.run(
        [TOOLS["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-f", host_key], check=True
    )
    authorized = root / "authorized_keys"
    authorized.write_text("")
    authorized.chmod(0o644)
    port = free_port()
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {authorized}\nPidFile {root / 'sshd.pid'}\n"
        "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        f"PubkeyAuthentication yes\nAllowUsers {ssh_user.name}\nUsePAM no\nLogLevel ERROR\n"
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", root / "sshd_config"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc, "sshd")
        host_pub = " ".join((root / "host_key.pub").read_text().split()[:2])
        yield Sshd(port, host_pub, authorized)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def as_user(ssh_user: User, tmp_path) -> dict[str, str]:
    """The environment under which `ssh` (found on PATH by git) runs as the test user."""
    setpriv = shutil.which("setpriv")
    real = shutil.which("ssh")
    if setpriv is None or real is None:
        pytest.skip("setpriv (util-linux) and ssh are needed")
    shim = tmp_path / "shim-bin"
    shim.mkdir()
    (shim / "ssh").write_text(
        f"#!/bin/sh\nexec {setpriv} --reuid={ssh_user.uid} --regid={ssh_user.gid} "
        f'--clear-groups {real} "$@"\n'
    )
    (shim / "ssh").chmod(0o755)
    return {"PATH": f"{shim}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


@pytest.fixture
def alias(ssh_user: User, sshd_for: Sshd) -> Iterator[str]:
    """`mywiki` in ~/.ssh/config (HostName, Port, User, IdentityFile); yields a bare repo path."""
    ssh = ssh_user.home / ".ssh"
    shutil.rmtree(ssh, ignore_errors=True)
    key = keygen(ssh_user, ".ssh/keys/wiki_ed25519")  # not a default name: only the config names it
    sshd_for.authorized.write_text((key.with_suffix(".pub")).read_text())
    ssh_user.write(".ssh/known_hosts", f"[127.0.0.1]:{sshd_for.port} {sshd_for.host_pub}\n")
    ssh_user.write(
        ".ssh/config",
        "Host mywiki\n"
        "  HostName 127.0.0.1\n"
        f"  Port {sshd_for.port}\n"
        f"  User {ssh_user.name}\n"
        "  IdentityFile ~/.ssh/keys/wiki_ed25519\n"
        "  IdentitiesOnly yes\n",
        mode=0o600,
    )
    (ssh).chmod(0o700)
    work = ssh_user.home / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    os.chown(work, ssh_user.uid, ssh_user.gid)
    remote = work / "server" / "wiki.git"
    assert ssh_user.run("git", "init", "-q", "--bare", "-b", "main", remote).returncode == 0
    yield str(remote)


def test_clone_and_sync_through_a_user_ssh_config_alias(tmp_path, alias, as_user, run_memwiki):
    desktop, laptop = tmp_path / "desktop", tmp_path / "laptop"
    done = run_memwiki("init", desktop, "--remote", f"mywiki:{alias}")
    assert done.returncode == 0, done.stderr
    (desktop / "memory/ssh.md").write_text(recall("ssh", "Pushed through the alias.\n"))
    done = run_memwiki("--wiki", desktop, "sync", "--json", env=as_user)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pushed"] is True
    assert gitcli(Path(alias), "rev-parse", "main") == gitcli(desktop, "rev-parse", "HEAD")
    # doctor: one line on the remote, reached through the alias.
    done = run_memwiki("--wiki", desktop, "doctor", "--json", env=as_user)
    remote = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "remote")
    assert remote == {
        "name": "remote",
        "ok": True,
        "detail": f"origin mywiki:{alias}: reachable, authenticated, branch main present",
    }
    # A second device clones through the alias, edits, syncs; the first fast-forwards.
    done = run_memwiki("clone", f"mywiki:{alias}", laptop, env=as_user)
    assert done.returncode == 0, done.stderr
    (laptop / "memory/ssh.md").write_text(recall("ssh", "Edited on the laptop.\n"))
    assert run_memwiki("--wiki", laptop, "sync", env=as_user).returncode == 0
    done = run_memwiki("--wiki", desktop, "sync", "--json", env=as_user)
    assert json.loads(done.stdout)["merged"] == "fast-forward"
    assert "Edited on the laptop." in (desktop / "memory/ssh.md").read_text()


def test_ssh_failures_are_one_line_naming_the_cause(
    tmp_path, ssh_user, alias, sshd_for, as_user, run_memwiki, isolated_env
):
    w = tmp_path / "w"
    assert run_memwiki("init", w, "--remote", f"mywiki:{alias}").returncode == 0
    (w / "memory/x.md").write_text(recall("x", "X.\n"))
    before = gitcli(w, "status", "--porcelain")
    sshd_for.authorized.write_text("")  # the key is no longer authorised
    done = run_memwiki("--wiki", w, "sync", env=as_user)
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("memwiki: error: cannot authenticate to mywiki over SSH (")
    assert "Permission denied (publickey)" in done.stderr
    assert gitcli(w, "status", "--porcelain") == before  # nothing committed
    # An unknown host key is refused (BatchMode: never trusted on first use, never a prompt).
    sshd_for.authorized.write_text((ssh_user.home / ".ssh/keys/wiki_ed25519.pub").read_text())
    ssh_user.write(".ssh/known_hosts", "")
    done = run_memwiki("--wiki", w, "sync", env=as_user)
    assert done.returncode == 5
    assert done.stderr == (
        "memwiki: error: the SSH host key of mywiki is unknown or has changed: connect once "
        "with `ssh` to check it and record it in ~/.ssh/known_hosts, then try again\n"
    )
    assert not (ssh_user.home / ".ssh/known_hosts").read_text()  # and nothing was recorded
    # No git command: libgit2 cannot read ~/.ssh/config, and the error says so.
    (isolated_env / ".ssh").mkdir(exist_ok=True)
    (isolated_env / ".ssh/config").write_text("Host mywiki\n  HostName 127.0.0.1\n")
    nogit = tmp_path / "nogit"
    nogit.mkdir()
    done = run_memwiki("clone", f"mywiki:{alias}", tmp_path / "c", env={"PATH": str(nogit)})
    assert done.returncode == 5 and done.stderr.count("\n") == 1
    assert "~/.ssh/config Host aliases need the git command (mywiki is one)" in done.stderr
    assert not (tmp_path / "c").exists()


def test_the_users_own_ssh_command_is_used_not_replaced(
    tmp_path, ssh_user, alias, sshd_for, as_user, run_memwiki, isolated_env
):
    key = ssh_user.home / ".ssh/keys/wiki_ed25519"
    # Only the user's own ssh command names the key (the alias has none): memwiki must use it.
    ssh_user.write(
        ".ssh/config",
        f"Host mywiki\n  HostName 127.0.0.1\n  Port {sshd_for.port}\n  User {ssh_user.name}\n"
        "  IdentitiesOnly yes\n",
        mode=0o600,
    )
    gitconfig = isolated_env / ".gitconfig"
    gitconfig.write_text(f"[core]\n\tsshCommand = ssh -i {key} -o BatchMode=yes\n")
    done = run_memwiki("clone", f"mywiki:{alias}", tmp_path / "a", env=as_user)
    assert done.returncode == 0, done.stderr
    gitconfig.write_text("")
    (tmp_path / "a/memory/y.md").write_text(recall("y", "Y.\n"))
    env = {**as_user, "GIT_SSH_COMMAND": f"ssh -i {key} -o BatchMode=yes"}
    done = run_memwiki("--wiki", tmp_path / "a", "sync", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pushed"]
    # Without it, the alias names no key: refused, so the two above used the user's command.
    done = run_memwiki("--wiki", tmp_path / "a", "sync", env=as_user)
    assert done.returncode == 5 and "Permission denied (publickey)" in done.stderr


# ------------------------------------------------------------------ HTTPS with a private CA


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(root: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key): a private CA and a certificate for 127.0.0.1."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             "/CN=memwiki test CA", "-keyout", "ca.key", "-out", "ca.pem", cwd=root)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr", cwd=root)  # fmt: skip
    (root / "ext.cnf").write_text("subjectAltName = IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem",
             cwd=root)  # fmt: skip
    return root / "ca.pem", root / "server.pem", root / "server.key"


@pytest.fixture
def https_remote(tmp_path) -> Iterator[tuple[str, Path, Path]]:
    """(URL, bare repository, CA file) of a password-protected HTTPS remote on loopback."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    certs = tmp_path / "certs"
    certs.mkdir()
    ca, cert, key = make_ca(certs)
    remote = tmp_path / "served" / "remote.git"
    remote.parent.mkdir()
    gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    handler = type("Handler", (GitHTTP,), {"project_root": str(remote.parent)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_port}/remote.git", remote, ca
    finally:
        server.shutdown()
        server.server_close()


def test_https_with_a_private_ca_and_a_credential_helper(
    tmp_path, https_remote, run_memwiki, isolated_env, monkeypatch
):
    monkeypatch.delenv("GIT_SSL_CAINFO", raising=False)  # some machines set it to the system's
    url, remote, ca = https_remote
    host = url.split("/")[2]
    (isolated_env / ".git-credentials").write_text(f"https://someone:{TOKEN}@{host}\n")
    gitconfig = isolated_env / ".gitconfig"
    gitconfig.write_text("[credential]\n\thelper = store\n")
    done = run_memwiki("clone", url, tmp_path / "w")
    assert done.returncode == 5 and done.stderr.count("\n") == 1
    assert "certificate" in done.stderr.lower() and not (tmp_path / "w").exists()
    gitconfig.write_text(f"[credential]\n\thelper = store\n[http]\n\tsslCAInfo = {ca}\n")
    done = run_memwiki("clone", url, tmp_path / "w")
    assert done.returncode == 0, done.stderr
    (tmp_path / "w/memory/tls.md").write_text(recall("tls", "Over HTTPS.\n"))
    done = run_memwiki("--wiki", tmp_path / "w", "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert gitcli(remote, "rev-parse", "main") == gitcli(tmp_path / "w", "rev-parse", "HEAD")
    # GIT_SSL_CAINFO works as well, here with MEMWIKI_GIT_TOKEN instead of the helper.
    gitconfig.write_text("")
    env = {"GIT_SSL_CAINFO": str(ca), "MEMWIKI_GIT_TOKEN": TOKEN}
    done = run_memwiki("clone", url, tmp_path / "v", env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "v/memory/tls.md").is_file()


# ------------------------------------------------------------------ server messages and hooks

HOOK = "#!/bin/sh\necho 'Pushes need a ticket number in the message.' >&2\nexit 1\n"


def _refusing(remote: Path) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(HOOK)
    hook.chmod(0o755)


@pytest.mark.parametrize("kind", ["http", "file", "path"])
def test_a_pre_receive_hook_refusal_shows_the_servers_reason(tmp_path, kind, run_memwiki, request):
    if kind == "http":
        url, remote = request.getfixturevalue("http_remote")
        env = {"MEMWIKI_GIT_TOKEN": TOKEN}
    else:
        remote = tmp_path / "remote.git"
        gitcli(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
        url = f"file://{remote}" if kind == "file" else str(remote)
        env = {}
    _refusing(remote)
    root = tmp_path / "w"
    assert run_memwiki("init", root, "--remote", url).returncode == 0
    done = run_memwiki("--wiki", root, "sync", env=env)
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "refused the push of main: remote: Pushes need a ticket number in the message." in (
        done.stderr
    )
    assert "pre-receive hook declined" in done.stderr
    assert gitcli(remote, "for-each-ref") == ""


# ------------------------------------------------------------------ a server that never answers


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port on loopback that accepts connections and never sends a byte."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        sock.close()


@pytest.mark.parametrize("scheme", ["http", "ssh"])
def test_a_server_that_never_answers_times_out(tmp_path, silent_server, run_memwiki, scheme):
    url = f"{scheme}://127.0.0.1:{silent_server}/wiki.git"
    env = {"MEMWIKI_GIT_TIMEOUT_S": "2"}
    if scheme == "ssh":
        # ssh itself would read root's ~/.ssh: give it a command that reads nothing there.
        env["GIT_SSH_COMMAND"] = "ssh -F /dev/null -o BatchMode=yes -o UserKnownHostsFile=/dev/null"
    started = time.monotonic()
    done = run_memwiki("clone", url, tmp_path / "w", env=env, timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "127.0.0.1 sent nothing for 2 s" in done.stderr or "too slow" in done.stderr.lower()
    assert took < 20, took
    assert not (tmp_path / "w").exists()
    assert not list(tmp_path.glob(".w.clone-*"))


def test_a_clone_killed_while_the_server_is_silent_leaves_nothing(tmp_path, silent_server):
    target = tmp_path / "w"
    url = f"http://127.0.0.1:{silent_server}/wiki.git"
    proc = subprocess.Popen(
        [MEMWIKI, "clone", url, str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MEMWIKI_GIT_TIMEOUT_S": "30"},
    )
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob(".w.clone-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()
    proc.wait(timeout=10)
    assert not target.exists()
    # Its git child dies with it (it would otherwise keep the connection open).
    time.sleep(1)
    assert not [
        line
        for line in subprocess.run(
            ["ps", "-eo", "args"], capture_output=True, text=True
        ).stdout.splitlines()
        if url in line and "clone" in line
    ]
