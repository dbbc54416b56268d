"""A deterministic, model-free embedder for tests and scale benchmarks (`embed = hash`).

Each word is hashed (crc32) to one signed coordinate of a 384-dimensional vector
(feature hashing); a text's vector is the L2-normalised sum. Texts that share words
are close, so vector search still means something, and a quarter of a million items
embed in a minute instead of the hours the real model takes on two cores.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

DIM = 384
_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Feature hashing of lower-cased words; identical on every machine and run."""

    provider = "hash"
    model = "feature-hash-v1"
    dim = DIM

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def _code(self, word: str) -> int:
        code = self._codes.get(word)
        if code is None:
            code = self._codes[word] = zlib.crc32(word.encode("utf-8"))
        return code

    def embed(self, texts: list[str]) -> np.ndarray:
        """Shape (len(texts), 384), float32, rows L2-normalised (zero rows for empty text)."""
        codes: list[int] = []
        rows: list[int] = []
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            codes.extend(map(self._code, words))
            rows.extend([row] * len(words))
        if not codes:
            return np.zeros((len(texts), DIM), dtype=np.float32)
        code = np.asarray(codes, dtype=np.uint64)
        cells = np.asarray(rows, dtype=np.int64) * DIM + (code % DIM).astype(np.int64)
        signs = np.where((code >> np.uint64(16)) & np.uint64(1), 1.0, -1.0)
        flat = np.bincount(cells, signs, minlength=len(texts) * DIM)
        out = flat.reshape(len(texts), DIM).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
