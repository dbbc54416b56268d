"""Turn the LoCoMo benchmark into one memwiki-shaped directory per conversation plus queries.

    python examples/locomo/convert.py [LOCOMO_DIR] --split dev --out /tmp/locomo-wikis

For each conversation C the output holds ``OUT/C/memory/C-session-N.md`` (one file per
session, one line per turn) and ``OUT/C/queries.jsonl`` (one gold-labelled question per
line). Standard library only, on purpose: it must run without memwiki installed, and
nothing of LoCoMo is ever copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "eval" / "locomo"

SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("26", "30", "41", "42", "43"),
    "test": ("44", "47", "48", "49", "50"),
}
ADVERSARIAL = 5  # unanswerable by design: nothing to retrieve

_SESSION_KEY = re.compile(r"session_(\d+)")
# Evidence ids are meant to be "D3:5", but the data also has "D8:6; D9:17",
# "D9:1 D4:4 D4:6", "D:11:26" and a bare "D": take every D<session>:<turn> we can see.
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def conversation_ids(source: Path, split: str = "all") -> list[str]:
    """The conversation ids of a split that exist in source, in numeric order."""
    present = sorted((p.stem for p in Path(source).glob("*.json")), key=_numeric_key)
    if split == "all":
        return present
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use dev, test or all")
    return [c for c in SPLITS[split] if c in present]


def _numeric_key(stem: str) -> tuple[int, str]:
    return (int(stem), stem) if stem.isdigit() else (sys.maxsize, stem)


def load_conversation(source: Path, conv: str) -> dict:
    """One conversation's JSON object."""
    with open(Path(source) / f"{conv}.json", encoding="utf-8") as fh:
        return json.load(fh)


def session_numbers(data: dict) -> list[int]:
    """Numbers of the sessions that have turns (date-only keys are ignored)."""
    found = []
    for key, value in data.items():
        match = _SESSION_KEY.fullmatch(key)
        if match and isinstance(value, list) and value:
            found.append(int(match.group(1)))
    return sorted(found)


def session_path(conv: str, n: int) -> str:
    """The wiki-relative path of one session file."""
    return f"memory/{conv}-session-{n}.md"


def parse_evidence(evidence: Iterable[str]) -> list[tuple[int, int]]:
    """Every (session, turn) pair named in a list of evidence strings, in order."""
    pairs: list[tuple[int, int]] = []
    for item in evidence:
        for session, turn in _EVIDENCE.findall(str(item)):
            pairs.append((int(session), int(turn)))
    return pairs


def _one_line(text: object) -> str:
    # A turn must stay on its own line, and a description must be one line for memwiki's
    # lint; str.split() also breaks on the Unicode line separators.
    return " ".join(str(text or "").split())


def _yaml_str(text: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar, and dates like "1:56 pm" need quoting.
    return json.dumps(text, ensure_ascii=False)


def render_session(conv: str, data: dict, n: int) -> str:
    """The markdown file for session n: frontmatter, then one line per turn."""
    a, b = _one_line(data.get("speaker_a")), _one_line(data.get("speaker_b"))
    when = _one_line(data.get(f"session_{n}_date_time"))
    description = f"Conversation between {a} and {b}, session {n}"
    description += f", {when}" if when else " (date unknown)"
    lines = [
        "---",
        f"name: {conv}-session-{n}",
        f"description: {_yaml_str(description)}",
        "---",
    ]
    for turn in data[f"session_{n}"]:
        line = f"**{_one_line(turn.get('speaker')) or '?'}** ({_one_line(turn.get('dia_id'))}):"
        text = _one_line(turn.get("text"))
        if text:
            line += f" {text}"
        caption = _one_line(turn.get("blip_caption"))
        if caption:
            line += f" [image: {caption}]"
        lines.append(line)
    return "\n".join(lines) + "\n"


def questions(conv: str, data: dict) -> Iterator[dict]:
    """The kept questions: no adversarial ones, no empty evidence, gold sessions that exist."""
    sessions = set(session_numbers(data))
    for qa in data.get("qa", []):
        if qa.get("category") == ADVERSARIAL or not qa.get("evidence"):
            continue
        gold = sorted({s for s, _ in parse_evidence(qa["evidence"]) if s in sessions})
        if not gold:
            # Evidence we cannot place in any session cannot score; none in the current data.
            print(
                f"locomo {conv}: skipped, no usable evidence: {qa['question']!r}", file=sys.stderr
            )
            continue
        yield {
            "query": qa["question"],
            "relevant": [session_path(conv, s) for s in gold],
            "conversation": conv,
            "category": qa.get("category"),
        }


def _write_if_changed(path: Path, text: str) -> None:
    # Rewriting identical files would bump mtimes and make the index re-check them.
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def convert_conversation(source: Path, conv: str, out: Path) -> tuple[int, int]:
    """Write OUT/conv/memory/*.md and OUT/conv/queries.jsonl; return (sessions, questions)."""
    data = load_conversation(source, conv)
    root = Path(out) / conv
    memory = root / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    numbers = session_numbers(data)
    wanted = {Path(session_path(conv, n)).name for n in numbers}
    # Only files this converter would have written are removed, never anything else.
    for stale in memory.glob(f"{conv}-session-*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for n in numbers:
        _write_if_changed(root / session_path(conv, n), render_session(conv, data, n))
    kept = list(questions(conv, data))
    body = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in kept)
    _write_if_changed(root / "queries.jsonl", body)
    return len(numbers), len(kept)


def count_questions(source: Path, split: str = "all") -> int:
    """How many questions a split keeps, without writing anything."""
    return sum(
        len(list(questions(c, load_conversation(source, c))))
        for c in conversation_ids(source, split)
    )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description="Convert LoCoMo into memwiki-shaped wikis.")
    parser.add_argument(
        "source",
        nargs="?",
        type=Path,
        default=DEFAULT_SOURCE,
        help=f"directory with LoCoMo's <conv>.json files (default: {DEFAULT_SOURCE})",
    )
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    args = parser.parse_args(argv)

    if not args.source.is_dir():
        print(f"error: {args.source} is not a directory", file=sys.stderr)
        return 2
    convs = conversation_ids(args.source, args.split)
    if not convs:
        print(f"error: no conversations of split {args.split} in {args.source}", file=sys.stderr)
        return 2
    total_sessions = total_questions = 0
    for conv in convs:
        sessions, kept = convert_conversation(args.source, conv, args.out)
        total_sessions += sessions
        total_questions += kept
        print(f"{conv}: {sessions} sessions, {kept} questions -> {args.out / conv}")
    print(f"{len(convs)} conversations, {total_sessions} sessions, {total_questions} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
