"""Secrets planted in sessions never reach the disk: not the wiki, not .memwiki/, not git."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_memorize_support import all_file_bytes, all_git_objects, make_wiki, recall, write

from memwiki import memorize

OPENAI = "sk-proj-Xq7vR2mN9kL4pT8wZ3yB6cD1fG5hJ0aS2eU4iO6"
AWS = "AKIAZ7QW3ERT5YUI9OPL"
GITHUB = "ghp_R8s2Kd9Lm4Np7Qx1Vz5Bc3Fg6Hj0Tw2Ya8Ue"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJkYW5hQGFjbWUuZXhhbXBsZSIsImV4cCI6MTk5OTk5OTk5OX0"
    ".q3Zk9Lw2XbT7mN4pR8sV1yC6fH0jK5dG3aE9uI2oQ7w"
)
KEY_BODY = "MIIEowIBAAKCAQEAx4Rk2Tq9LmN8vB3cW7yZ1pD6fG0hJ5kS2aE4uI8oQ3wX9rT"
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
SECRETS = [OPENAI, AWS, GITHUB, JWT, KEY_BODY]


def session(tmp_path: Path) -> Path:
    items = [
        {"type": "message", "role": "user",
         "content": f"Use OPENAI_API_KEY={OPENAI} and the AWS key {AWS} to set up CI."},
        {"type": "tool_call", "name": "bash",
         "arguments": {"cmd": f"gh auth login --with-token <<< {GITHUB}",
                       "env": {"SESSION": JWT}}},
        {"type": "tool_result", "name": "bash",
         "content": {"stdout": f"wrote ~/.ssh/id_rsa:\n{PRIVATE_KEY}", "token": JWT}},
        {"type": "message", "role": "assistant",
         "content": f"Done. The deploy key is:\n{PRIVATE_KEY}\nand the session JWT {JWT}."},
    ]  # fmt: skip
    path = tmp_path / "payloads" / "leaky.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"schema_version": "1.0", "items": items}), encoding="utf-8")
    return path


def assert_no_secret(root: Path) -> None:
    for path, data in all_file_bytes(root):
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret[:12]}… found in {path}"
    objects = all_git_objects(root)
    for secret in SECRETS:
        assert secret.encode() not in objects, f"{secret[:12]}… found in a git object"


def test_planted_secrets_never_reach_the_wiki_the_sidecar_or_git(tmp_path):
    wiki = make_wiki(tmp_path)
    leaky = session(tmp_path)
    prepared = memorize.prepare(wiki, [leaky])
    assert prepared.redactions == {
        "openai-api-key": 1,
        "aws-access-key": 1,
        "github-token": 1,
        "jwt": 3,
        "private-key": 2,
    }
    full = Path(prepared.transcripts[0]["full"]).read_text()
    assert "[REDACTED:private-key]" in full and "[REDACTED:jwt]" in full
    assert_no_secret(wiki.root)
    # an executor that copies both transcripts verbatim into the wiki still leaks nothing
    ws = Path(prepared.workspace)
    for kind in ("messages", "full"):
        text = Path(prepared.transcripts[0][kind]).read_text()
        body = "```\n" + text.replace("```", "'''") + "\n```\n"
        write(ws, f"memory/copied-{kind}.md", recall(f"copied-{kind}", body))
    result = memorize.commit(wiki, prepared.run_id)
    assert len(result.created) == 2
    assert_no_secret(wiki.root)
    # and the payload itself, left outside the wiki, is the only place they still are
    assert OPENAI in leaky.read_text()
    shutil.rmtree(leaky.parent)
