"""Scrubber bench: recall on the secret corpus, benign lines left intact, and scan speed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scrub_corpus  # noqa: E402

from memwiki.memorize.scrub import scrub_text  # noqa: E402


def main() -> None:
    """Print recall and benign-intact figures with their corpus sizes."""
    started = time.perf_counter()
    r = scrub_corpus.measure(scrub_text)
    elapsed = time.perf_counter() - started
    print("\nScrubber (tests/scrub_corpus.py)")
    print(
        f"  recall        {r['recall']:.4f}  on {r['samples']} secrets in {r['formats']} formats"
        + (f" (missed: {', '.join(r['missed'])})" if r["missed"] else "")
    )
    print(f"  benign intact {r['benign_intact']:.4f}  on {r['benign_lines']} ordinary lines")
    blob = "\n".join(scrub_corpus.benign_lines()) + "\n"
    text = blob * max(1, 1_000_000 // len(blob))
    t = time.perf_counter()
    scrub_text(text)
    rate = len(text) / 1e6 / (time.perf_counter() - t)
    print(f"  speed         {rate:.2f} MB/s on ordinary text; corpora scrubbed in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
