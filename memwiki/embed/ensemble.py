"""Two sentence models side by side: each item's vector is MiniLM's beside multilingual-e5's.

A row of the index matrix is the two models' unit vectors concatenated and scaled by
1/sqrt(2) (so the row is a unit vector too, and a plain dot product is the mean cosine).
Search scores the two halves separately (`blocks`) and adds each model's cosines after
standardising them over the items (index/search.py `vector_scores`), because e5's cosines
sit in a narrow band near 0.8 while MiniLM's spread from 0 to 0.7: a raw mean would let
MiniLM decide alone. The two models miss different paraphrases; measured in
docs/retrieval.md ("Models considered").
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np


class EnsembleEmbedder:
    """Concatenated, jointly normalised vectors of several embedders (documents and queries)."""

    provider = "ensemble"

    def __init__(self, parts: list):
        self.parts = parts
        self.model = "+".join(p.model for p in parts)
        self.blocks = tuple(int(p.dim) for p in parts)
        # The index records only {provider, model, dim}; search splits a row evenly.
        if len(set(self.blocks)) != 1:
            raise ValueError(f"ensemble parts must be equally wide, got {self.blocks}")
        self.dim = sum(self.blocks)
        self._scale = 1.0 / math.sqrt(len(parts))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Document vectors: every part's vector side by side, shape (len(texts), dim)."""
        return self._join([p.embed(texts) for p in self.parts])

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (parts that embed queries differently do so)."""
        return self._join([getattr(p, "embed_query", p.embed)(texts) for p in self.parts])

    def _join(self, vectors: list) -> np.ndarray:
        import numpy as np

        return (np.hstack([np.asarray(v, dtype=np.float32) for v in vectors]) * self._scale).astype(
            np.float32
        )
