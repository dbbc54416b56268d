"""A scripted memorize executor: follows the jobs of a run with fixed rules instead of an LLM.

Usage: python executor.py EXECUTOR.md

It reads the executor prompt, then each job in order, and applies two deterministic rules:

- memory job: every user line "Remember (<name>): <fact>" in the messages transcript
  becomes a bullet in memory/<name>.md (the file is created when it does not exist);
- skill job: when an existing skill's name words all occur in the full transcript, every
  failed tool call of the session is added to that skill's "## Pitfalls" section.

It stops at the first failing job (exit 1) and never runs git or `memwiki memorize commit`,
as the executor contract requires. A real executor is an agent that reads the same jobs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REMEMBER = re.compile(r"Remember \(([a-z0-9]+(?:-[a-z0-9]+)*)\):\s*(.+?)(?:\n\n|\n###|\Z)", re.S)


def field(job: str, label: str) -> str:
    """The value of a "- <label> ...: `value`" line of a job file (it may wrap)."""
    m = re.search(r"^- " + re.escape(label) + r".*?:\s*`([^`]+)`\s*$", job, re.S | re.M)
    if not m:
        raise ValueError(f"job has no {label!r} line")
    return m.group(1)


def existing_names(job: str) -> list[str]:
    """Names of the files the job lists as already existing."""
    return re.findall(r"^- `([a-z0-9-]+)` \(", job, re.M)


def add_source(text: str, source: str) -> str:
    """Add source to the frontmatter's `sources:` list (creating it), once."""
    head, sep, body = text.partition("\n---\n")
    if source in head:
        return text
    m = re.search(r"^sources:\s*\[(.*)\]\s*$", head, re.M)
    if m:
        items = [s.strip() for s in m.group(1).split(",") if s.strip()] + [source]
        head = head[: m.start()] + f"sources: [{', '.join(items)}]" + head[m.end() :]
    else:
        head += f"\nsources: [{source}]"
    return head + sep + body


def memory_job(job: str) -> str:
    track = Path(field(job, "Track folder"))
    transcript = Path(field(job, "Transcript to read")).read_text(encoding="utf-8")
    source = field(job, "Session id")
    done = []
    for name, fact in REMEMBER.findall(transcript):
        fact = " ".join(fact.split())
        path = track / f"{name}.md"
        if path.exists():
            text = path.read_text(encoding="utf-8")
            if fact in text:
                continue
            text = add_source(text.rstrip("\n") + f"\n- {fact}\n", source)
            done.append(f"patched {path.name}")
        else:
            title = name.replace("-", " ")
            text = (
                f"---\nname: {name}\ndescription: What sessions taught about {title}\n"
                f"sources: [{source}]\n---\n# {title.capitalize()}\n\n- {fact}\n"
            )
            done.append(f"created {path.name}")
        path.write_text(text, encoding="utf-8")
    return ", ".join(done) or "nothing to remember"


def skill_job(job: str) -> str:
    track = Path(field(job, "Track folder"))
    lines = Path(field(job, "Transcript to read")).read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines if line.strip()]
    words = set(re.findall(r"[a-z0-9]+", json.dumps(items).lower()))
    matches = [n for n in existing_names(job) if set(n.split("-")) <= words]
    if not matches:
        return "no existing skill matches"
    pitfalls = []
    last_cmd = None
    for item in items:
        if item["type"] == "tool_call":
            last_cmd = item["arguments"].get("cmd") if isinstance(item["arguments"], dict) else None
        elif item["type"] == "tool_result" and item.get("is_error") and last_cmd:
            error = str(item["content"]).strip().splitlines()[-1]
            pitfalls.append(f"- `{last_cmd}` can fail with: {error}")
    path = track / f"{matches[0]}.md"
    text = path.read_text(encoding="utf-8")
    new = [p for p in pitfalls if p not in text]
    if not new:
        return f"{path.name} already knows this"
    if "\n## Pitfalls\n" not in text:
        text = text.rstrip("\n") + "\n\n## Pitfalls\n"
    head, _, tail = text.partition("\n## Pitfalls\n")
    section, nxt, rest = tail.partition("\n## ")
    section = section.rstrip("\n") + "\n" + "\n".join(new) + "\n"
    text = head + "\n## Pitfalls\n" + section + (nxt + rest if nxt else "")
    path.write_text(add_source(text, field(job, "Session id")), encoding="utf-8")
    return f"patched {path.name}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: executor.py EXECUTOR.md", file=sys.stderr)
        return 2
    prompt = Path(argv[0]).read_text(encoding="utf-8")
    jobs = re.findall(r"^\d+\. `([^`]+)`", prompt, re.M)
    for number, job_path in enumerate(jobs, start=1):
        try:
            job = Path(job_path).read_text(encoding="utf-8")
            kind = "memory" if " memory from session " in job.splitlines()[0] else "skill"
            outcome = memory_job(job) if kind == "memory" else skill_job(job)
        except Exception as exc:  # the contract: stop at the first failure and say why
            print(f"job {number} ({job_path}) failed: {exc}", file=sys.stderr)
            return 1
        print(f"job {number} ({kind}): {outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
