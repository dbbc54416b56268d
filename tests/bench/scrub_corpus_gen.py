"""A realistic agent session for the scrubber's speed bench and its equality checks.

Long sessions are mostly tool output: files read (numbered code), shell output (pytest,
git, ls, grep, npm), JSON from APIs and lockfiles, server logs, and between them the
agent's prose. `session_strings` returns the strings of such a session, seeded, with a
few real-shaped secrets (tests/scrub_corpus.py) planted in them, some as escaped JSON.
"""

from __future__ import annotations

import json
import random
import string
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scrub_corpus  # noqa: E402

_WORDS = (
    "the test fails because fixture leaks rounding mode into next case so we reset it "
    "after each run invoice total service request handler database connection pool cache "
    "retry timeout config parser module function returns value error when user token is "
    "missing check build pipeline deploy staging branch merge commit review patch update "
    "schema migration index query latency memory profile worker queue job scheduler key "
    "password secret auth session cookie header client server api endpoint response status"
).split()
_IDENTS = (
    "invoice total_cents compute_tax user_id session request response parse_config "
    "load_settings api_client retry_count db_pool cache_key access_token auth_header "
    "handler worker queue_name job_id rounding_mode fixture tmp_path monkeypatch items"
).split()
_ALNUM = string.ascii_letters + string.digits


def _prose(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(2, 12)):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 22))]
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)), f"`{rng.choice(_IDENTS)}()`")
        out.append(" ".join(words).capitalize() + rng.choice([".", ".", ":", "?"]))
    return ("\n\n" if rng.random() < 0.4 else " ").join(out)


def _code_line(rng: random.Random, indent: int) -> str:
    a, b, c = (rng.choice(_IDENTS) for _ in range(3))
    return " " * indent + rng.choice(
        [
            f"{a} = {b}.get({c!r}, None)",
            f"if {a} is None or {b} > {rng.randint(0, 999)}:",
            f"return {a}({b}, {c}=True)",
            f'raise ValueError(f"{a} must be set, got {{{b}!r}}")',
            f"for {a} in {b}.{c}():",
            f"# {_prose(rng)[:70]}",
            f"self.{a} = os.environ.get('{a.upper()}', '')",
            f"const {a} = await fetch(`/api/v1/{b}/${{{c}}}`, {{ method: 'POST' }});",
            f"{a} := {b}.{c.title().replace('_', '')}(ctx, req)",
            f"assert {a} == {b}, f'{{{a}}} != {{{b}}}'",
            f"logger.info('%s took %.2f ms', {a}, {b})",
            f"def {a}(self, {b}: str, {c}: int = 0) -> dict[str, Any]:",
        ]
    )


def _code(rng: random.Random) -> str:
    start = rng.randint(1, 400)
    lines = [_code_line(rng, 4 * rng.randint(0, 3)) for _ in range(rng.randint(20, 400))]
    return "\n".join(f"{start + i:>6}→{ln}" for i, ln in enumerate(lines))


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _shell(rng: random.Random) -> str:
    kind = rng.randrange(5)
    n = rng.randint(10, 200)
    if kind == 0:
        rows = [
            f"tests/test_{rng.choice(_IDENTS)}.py::test_{rng.choice(_IDENTS)} "
            + rng.choice(["PASSED", "PASSED", "FAILED", "SKIPPED"])
            + f" [{i * 100 // n:3d}%]"
            for i in range(n)
        ]
        rows.append(f"==== {rng.randint(1, 9)} failed, {n} passed in {rng.random() * 40:.2f}s ====")
    elif kind == 1:
        rows = [
            f"commit {_hex(rng, 40)}\nAuthor: Dana <dana@example.com>\n"
            f"Date:   Mon Nov {rng.randint(1, 30)} 10:{rng.randint(10, 59)}:00 2026 +0100\n\n"
            f"    {_prose(rng)[:72]}\n"
            for _ in range(n // 5 + 1)
        ]
    elif kind == 2:
        rows = [
            f"-rw-r--r--  1 dana staff {rng.randint(10, 99999):>6} Nov {rng.randint(1, 30):>2} "
            f"10:{rng.randint(10, 59)} {rng.choice(_IDENTS)}.{rng.choice(['py', 'ts', 'md', 'json'])}"
            for _ in range(n)
        ]
    elif kind == 3:
        rows = [
            f"src/{rng.choice(_IDENTS)}/{rng.choice(_IDENTS)}.py:{rng.randint(1, 900)}:"
            f"{_code_line(rng, 4)}"
            for _ in range(n)
        ]
    else:
        rows = [
            f"diff --git a/src/{rng.choice(_IDENTS)}.py b/src/{rng.choice(_IDENTS)}.py",
            f"index {_hex(rng, 7)}..{_hex(rng, 7)} 100644",
        ]
        rows += [rng.choice("+- ") + _code_line(rng, 4) for _ in range(n)]
    return "\n".join(rows)


def _json(rng: random.Random) -> str:
    if rng.random() < 0.3:
        deps = {
            f"node_modules/{rng.choice(_IDENTS).replace('_', '-')}{i}": {
                "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
                "resolved": f"https://registry.npmjs.org/pkg{i}/-/pkg{i}-1.0.0.tgz",
                "integrity": "sha512-" + "".join(rng.choice(_ALNUM + "+/") for _ in range(86)),
            }
            for i in range(rng.randint(5, 60))
        }
        return json.dumps({"name": "app", "lockfileVersion": 3, "packages": deps}, indent=2)
    rows = [
        {
            "id": _uuid(rng),
            "created_at": f"2026-11-{rng.randint(1, 28):02d}T10:{rng.randint(10, 59)}:00Z",
            "status": rng.choice(["open", "paid", "void"]),
            "amount_cents": rng.randint(100, 999999),
            "customer": {"name": rng.choice(_IDENTS), "email": "dana@example.com"},
            "description": _prose(rng)[:120],
            "commit": _hex(rng, 40),
        }
        for _ in range(rng.randint(3, 80))
    ]
    return json.dumps({"data": rows, "has_more": rng.random() < 0.5}, indent=rng.choice([None, 2]))


def _logs(rng: random.Random) -> str:
    rows = []
    for _ in range(rng.randint(20, 400)):
        rows.append(
            f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(10, 59)}:"
            f"{rng.randint(10, 59)}.{rng.randint(100, 999)}Z "
            + rng.choice(["INFO", "INFO", "DEBUG", "WARN", "ERROR"])
            + f" [{rng.choice(_IDENTS)}] request_id={_uuid(rng)} "
            + rng.choice(
                [
                    f"GET /api/v1/{rng.choice(_IDENTS)}?page={rng.randint(1, 9)} 200 "
                    f"{rng.randint(1, 900)}ms",
                    f"connected to 10.0.{rng.randint(0, 9)}.{rng.randint(1, 254)}:5432 "
                    f"pool={rng.randint(1, 20)}",
                    f"job {rng.choice(_IDENTS)} finished in {rng.random() * 9:.3f}s",
                    f"trace={_hex(rng, 32)} span={_hex(rng, 16)} {_prose(rng)[:60]}",
                ]
            )
        )
    return "\n".join(rows)


_MAKERS = (_prose, _code, _code, _shell, _shell, _json, _logs)


def session_strings(megabytes: float, seed: int = 7, secrets_per_mb: int = 20) -> list[str]:
    """The strings of a realistic session of about `megabytes` MB, secrets planted."""
    rng = random.Random(seed)
    samples = scrub_corpus.secret_samples(per_format=1, seed=seed)
    out: list[str] = []
    size, target = 0, int(megabytes * 1_000_000)
    planted = 0
    for _ in range(1_000_000):  # bounded: each string adds at least a few bytes
        if size >= target:
            break
        text = rng.choice(_MAKERS)(rng)
        if planted < secrets_per_mb * size / 1_000_000 + 1 and len(text) > 200:
            _, secret_text, _ = rng.choice(samples)
            cut = text.find("\n", rng.randrange(len(text)))
            cut = len(text) if cut < 0 else cut
            text = text[:cut] + "\n" + secret_text + text[cut:]
            planted += 1
        if rng.random() < 0.15:
            text = json.dumps({"stdout": text, "exit": 0})  # a tool result as escaped JSON
        out.append(text)
        size += len(text)
    return out
