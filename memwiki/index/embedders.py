"""The embedder a wiki has loaded, kept from one retrieve to the next (Wiki holds one),
and shared by every Wiki of the process with the same embedder settings."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..embed import Embedder


class Embedders:
    """The embedder one wiki has loaded: kept from one retrieve to the next.

    Bug it prevents: a process that called Wiki.retrieve again and again (an agent loop, a
    server) loaded the model anew for every call (a new Index each time): about 25 ms of
    tokenizer and session set-up per answer, and a session built and freed each time.
    Thread-safe: onnxruntime sessions and the tokenizers' encode may be shared by threads.
    The first load's thread count stays (a second session would cost more than it saves).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[Embedder | None, str] | None = None

    def get(self, config, stamp_dir: Path, threads: int | None) -> tuple[Embedder | None, str]:
        """(embedder, note), loaded on first use."""
        with self._lock:
            if self._loaded is None:
                from ..embed import load_embedder

                stamp_dir.mkdir(parents=True, exist_ok=True)
                self._loaded = load_embedder(config, stamp_dir=stamp_dir, threads=threads)
            return self._loaded

    @property
    def loaded(self) -> bool:
        """True once the embedder (or the reason there is none) has been loaded."""
        return self._loaded is not None


# Holders by embedder settings, alive while a Wiki (or an index) holds one: the model goes
# with the last of them, so Wiki.close() gives back its share and nothing else.
_SHARED: weakref.WeakValueDictionary[tuple, Embedders] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def shared(config) -> Embedders:
    """The Embedders every Wiki of this process with config's embedder settings uses.

    Bug it prevents: two wikis open at once with the same model each loaded it (about
    100 MB apiece). The settings load_embedder reads make the key; the thread count is
    not in it, as a wiki's own holder already keeps its first load's count. Sharing is
    sharing between threads, which Embedders already allows.
    """
    key = (config.embed, str(config.embed_model_dir), str(config.model_cache_dir))
    with _SHARED_LOCK:
        holder = _SHARED.get(key)
        if holder is None:
            holder = _SHARED[key] = Embedders()
        return holder
