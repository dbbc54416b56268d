"""Text analysis for BM25: words stemmed as English, CJK runs cut into unigrams and bigrams.

Chinese and Japanese are written without spaces, so a plain word tokenizer makes a whole
run of ideographs or kana one token: `计费服务` would then never match `计费服务的部署说明`.
Every CJK run is therefore indexed as its single characters plus every pair of adjacent
characters (as memU and Lucene's CJK analyzer do); words in other scripts go through
the same lower-casing, stop list and Porter stemming as before, also in mixed text.
"""

from __future__ import annotations

from functools import lru_cache

# Whoosh pickles the schema, analyzers included, into its table of contents: the
# filters must be module-level classes. This module is imported only with Whoosh.
from whoosh.analysis import STOP_WORDS, Filter, LowercaseFilter, RegexTokenizer, StopFilter
from whoosh.lang.porter import stem

# Hiragana, katakana (with the prolonged sound mark and the phonetic extensions),
# CJK unified ideographs with extension A and the compatibility block, Hangul syllables,
# half-width katakana.
CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xAC00, 0xD7AF),
    (0xFF66, 0xFF9F),
)
CJK_CHARS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES)
_CJK = f"[{CJK_CHARS}]"
_WORD = rf"(?:(?!{_CJK})\w)"
# A CJK run, or a word of any other script (Whoosh's default `\w+(\.?\w+)*`, minus CJK).
TOKEN_PATTERN = rf"{_CJK}+|{_WORD}+(?:\.?{_WORD}+)*"
# TOKEN_PATTERN on ASCII text, where no character is CJK: Whoosh's default. Its three CJK
# classes took 9 ms to compile (re builds a 64K-entry map for each), in every process
# that opened the index or analysed a query; most queries, and English notes, are ASCII.
ASCII_TOKEN_PATTERN = r"\w+(?:\.?\w+)*"


# English function words beyond Whoosh's short default list. Questions put to memory
# ("how do I...", "what did we decide...") are full of them; they match nearly every
# item, cost time, and say nothing about which item answers.
EXTRA_STOP_WORDS = frozenset(
    """about above after again against all also am any because been before being below
    between both but could did do does doing down during each else ever every few further
    had has having he her here hers herself him himself his how i i'd i'll i'm i've into its
    itself just me more most my myself no nor now off once only other ought our ours
    ourselves out over own same she should so some such than their theirs them themselves
    then there these they those through too under until up very was were what whats where
    which while who whom why would yours yourself yourselves""".split()
)


def is_cjk(text: str) -> bool:
    """Whether a token is a CJK run (it starts with a CJK character)."""
    if not text:
        return False
    code = ord(text[0])
    return code >= 0x3040 and any(lo <= code <= hi for lo, hi in CJK_RANGES)


class Tokenizer(RegexTokenizer):
    """RegexTokenizer(TOKEN_PATTERN)'s tokens: ASCII text through ASCII_TOKEN_PATTERN, which
    matches the same there; the full pattern compiled on the first text that is not ASCII.

    Pickled into Whoosh's table of contents with the ASCII pattern only, so opening the
    index compiles nothing large either.
    """

    def __init__(self) -> None:
        super().__init__(ASCII_TOKEN_PATTERN)

    def __call__(self, value, **kwargs):
        if isinstance(value, str) and not value.isascii():
            return _full_tokenizer()(value, **kwargs)
        return super().__call__(value, **kwargs)


@lru_cache(maxsize=1)
def _full_tokenizer() -> RegexTokenizer:
    return RegexTokenizer(TOKEN_PATTERN)


class CJKFilter(Filter):
    """Drop one-letter non-CJK tokens (as Whoosh's StopFilter does); split CJK runs."""

    def __call__(self, tokens):
        pos = 0
        for t in tokens:
            text = t.text
            if not is_cjk(text):
                if len(text) < 2:
                    continue
                if t.positions:
                    t.pos = pos
                    pos += 1
                yield t
                continue
            # the run's characters, then every pair of adjacent characters
            for g in list(text) + [text[i : i + 2] for i in range(len(text) - 1)]:
                t.text = g
                if t.positions:
                    t.pos = pos
                    pos += 1
                yield t


class StemNonCJK(Filter):
    """Porter stemming for words; CJK grams pass through unchanged."""

    def __call__(self, tokens):
        for t in tokens:
            if not t.stopped and not is_cjk(t.text):
                t.text = _stem(t.text)
            yield t


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return stem(word)


def analyzer():
    """Tokenise, lower-case, drop stop words, stem words, n-gram CJK: the same at index and query time."""
    return (
        Tokenizer()
        | LowercaseFilter()
        | StopFilter(stoplist=STOP_WORDS | EXTRA_STOP_WORDS, minsize=1)
        | CJKFilter()
        | StemNonCJK()
    )
