"""Text analysis for BM25: words stemmed as English, CJK runs cut into unigrams and bigrams.

Chinese and Japanese are written without spaces, so a plain word tokenizer makes a whole
run of ideographs or kana one token: `计费服务` would then never match `计费服务的部署说明`.
Every CJK run is therefore indexed as its single characters plus every pair of adjacent
characters (as memU and Lucene's CJK analyzer do); words in other scripts go through
the same lower-casing, stop list and Porter stemming as before, also in mixed text.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Whoosh pickles the schema, analyzers included, into its table of contents: the
# filters must be module-level classes. This module is imported only with Whoosh.
from whoosh.analysis import STOP_WORDS, Filter, LowercaseFilter, RegexTokenizer, StopFilter
from whoosh.lang.porter import stem

# Hiragana, katakana (with the prolonged sound mark and the phonetic extensions),
# CJK unified ideographs with extension A and the compatibility block, Hangul syllables,
# half-width katakana.
CJK_CHARS = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
)
_CJK = f"[{CJK_CHARS}]"
_WORD = rf"(?:(?!{_CJK})\w)"
# A CJK run, or a word of any other script (Whoosh's default `\w+(\.?\w+)*`, minus CJK).
TOKEN_PATTERN = rf"{_CJK}+|{_WORD}+(?:\.?{_WORD}+)*"
_IS_CJK = re.compile(_CJK)


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
    return bool(text) and _IS_CJK.match(text) is not None


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
        RegexTokenizer(TOKEN_PATTERN)
        | LowercaseFilter()
        | StopFilter(stoplist=STOP_WORDS | EXTRA_STOP_WORDS, minsize=1)
        | CJKFilter()
        | StemNonCJK()
    )
