"""The server refuses a push: a hook's size limit for one file, or write access withheld.

Found by the team audit: after a pre-receive hook refused a file over its size limit,
deleting the file did not help: the refused commit stayed in the branch and every later
sync sent it again and was refused again, with nothing saying why or what to do.
"""

from __future__ import annotations

from test_sync import clone_to, gitcli, read, recall, seeded_remote, write
from test_sync_ssh import TOKEN, http_remote  # noqa: F401 (http_remote: a fixture used by name)

SIZE_HOOK = """#!/bin/sh
while read old new ref; do
  range=$new; [ "$old" != 0000000000000000000000000000000000000000 ] && range="$old..$new"
  for oid in $(git rev-list --objects "$range" | cut -d' ' -f1); do
    if [ "$(git cat-file -t "$oid")" = blob ] && [ "$(git cat-file -s "$oid")" -gt 20000 ]; then
      echo "a file is larger than 20 kB" >&2; exit 1
    fi
  done
done
"""


def test_a_file_over_the_servers_limit_then_removed_syncs(tmp_path, cli):
    remote, _ = seeded_remote(tmp_path, {"memory/base.md": recall("base", "Base.\n")})
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(SIZE_HOOK)
    hook.chmod(0o755)
    a = clone_to(remote, tmp_path / "a")
    (a.root / "memory/big.txt").write_text("x" * 30_000)
    write(a.root, "memory/small.md", recall("small", "A small note.\n"))
    code, _, err = cli("--wiki", a.root, "sync")
    assert code == 5 and err.count("\n") == 1
    assert "refused the push of main: remote: a file is larger than 20 kB" in err
    assert "delete it, run `git reset origin/main` in the wiki" in err
    before = gitcli(remote, "rev-parse", "main")
    (a.root / "memory/big.txt").unlink()
    assert cli("--wiki", a.root, "sync")[0] == 5  # still refused: the commit holds it
    gitcli(a.root, "reset", "-q", "origin/main")  # what the message says
    code, out, err = cli("--wiki", a.root, "sync")
    assert code == 0, err
    assert gitcli(remote, "rev-parse", "main") != before
    assert read(a.root, "memory/small.md").endswith("A small note.\n")
    assert gitcli(remote, "rev-parse", "main") == gitcli(a.root, "rev-parse", "HEAD")
    assert "memory/big.txt" not in gitcli(remote, "ls-tree", "-r", "--name-only", "main")


def test_a_read_only_http_remote_is_one_line_and_the_next_sync_works(
    tmp_path, request, run_memwiki
):
    url, remote = request.getfixturevalue("http_remote")
    env = {"MEMWIKI_GIT_TOKEN": TOKEN}
    seed = tmp_path / "seed"
    assert run_memwiki("init", seed, "--remote", url).returncode == 0
    assert run_memwiki("--wiki", seed, "sync", env=env).returncode == 0
    gitcli(remote, "config", "http.receivepack", "false")  # read access only
    (seed / "memory/n.md").write_text(recall("n", "Written while read-only.\n"))
    done = run_memwiki("--wiki", seed, "sync", env=env)
    assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
    assert "403" in done.stderr and "Traceback" not in done.stderr
    assert "no write access" in done.stderr and "check the token" not in done.stderr
    assert (seed / "memory/n.md").is_file()
    gitcli(remote, "config", "http.receivepack", "true")
    done = run_memwiki("--wiki", seed, "sync", env=env)
    assert done.returncode == 0, done.stderr
    assert gitcli(remote, "rev-parse", "main") == gitcli(seed, "rev-parse", "HEAD")
