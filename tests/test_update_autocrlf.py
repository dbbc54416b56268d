"""Finishing a killed update under core.autocrlf: the files it checked out are recognised.

update.recover compares each file the update touches with its old and new blobs. It hashed
the raw bytes, so with core.autocrlf = true (files checked out with CRLF, blobs with LF) no
file ever matched: the update was never finished and its files were committed again as
hand edits and merged (nothing lost, but a commit and a merge nobody made). Found by the
GITCFG audit (a developer's own git configuration).
"""

from __future__ import annotations

import pygit2
import pytest

from memwiki.git import update


def _commit(repo, files: dict[str, bytes], parents) -> pygit2.Oid:
    builder = repo.TreeBuilder()
    for name, data in files.items():
        builder.insert(name, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("t", "t@example.com")
    return repo.create_commit(None, sig, sig, "c", builder.write(), parents)


@pytest.mark.parametrize("autocrlf", ["true", "false"])
def test_an_update_killed_after_its_checkout_is_finished(tmp_path, autocrlf):
    repo = pygit2.init_repository(str(tmp_path / "w"), initial_head="main")
    repo.config["core.autocrlf"] = autocrlf
    old = _commit(repo, {"a.md": b"one\ntwo\n"}, [])
    repo.references.create("refs/heads/main", old, force=True)
    repo.checkout_tree(repo[old], strategy=pygit2.enums.CheckoutStrategy.FORCE)
    new = _commit(repo, {"a.md": b"one\ntwo\nthree\n", "b.md": b"bee\n"}, [old])
    journal = tmp_path / "update.json"
    update.record(journal, "refs/heads/main", old, new)
    # the checkout of apply (step 2), then a kill before the branch moved
    repo.checkout_tree(repo[new], strategy=pygit2.enums.CheckoutStrategy.SAFE)
    crlf = b"\r\n" if autocrlf == "true" else b"\n"
    assert (tmp_path / "w" / "a.md").read_bytes() == crlf.join([b"one", b"two", b"three", b""])
    assert update.recover(repo, journal) is True
    assert repo.references["refs/heads/main"].target == new and not journal.exists()
