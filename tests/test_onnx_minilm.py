"""ONNX Runtime MiniLM: the vectors of sentence-transformers, and an export made once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loom_sim.signals import onnx_minilm
from loom_sim.signals.embedding import MAX_SEQ_TOKENS, embedding_model_path

TEXTS = [
    "I found a surveillance system hidden in our codebase. It has been there for months.",
    "That sounds frightening. What makes you sure it is surveillance?",
    "Short.",
    "word " * 400,  # longer than the token limit: truncated the same way
]


@pytest.mark.slow
def test_same_vectors_as_sentence_transformers_and_a_cached_export(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_SIM_CACHE", str(tmp_path))
    onnx = onnx_minilm.OnnxMiniLM(embedding_model_path(), MAX_SEQ_TOKENS)
    assert list(tmp_path.glob("all-MiniLM-L6-v2-*.onnx"))

    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(embedding_model_path(), device="cpu", local_files_only=True)
    reference.max_seq_length = MAX_SEQ_TOKENS
    expected = reference.encode(TEXTS, normalize_embeddings=True, show_progress_bar=False)
    got = onnx.encode(TEXTS)
    assert got.shape == (4, 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(got * expected, axis=1)) > 0.9999

    # a second load reuses the export
    monkeypatch.setattr(onnx_minilm, "export", lambda *a: pytest.fail("exported again"))
    again = onnx_minilm.OnnxMiniLM(embedding_model_path(), MAX_SEQ_TOKENS)
    assert np.allclose(again.encode(TEXTS[:1]), got[:1], atol=1e-6)


def test_the_fast_tokenizer_gives_the_ids_transformers_gives():
    """The model is tokenised with the ``tokenizers`` library (importing transformers costs
    seconds of GIL); its ids, masks and type ids must be exactly transformers' own."""
    from transformers import AutoTokenizer

    path = embedding_model_path()
    reference = AutoTokenizer.from_pretrained(path, local_files_only=True)
    expected = reference(TEXTS, padding=True, truncation=True, max_length=MAX_SEQ_TOKENS)
    fast = onnx_minilm.load_tokenizer(Path(path), MAX_SEQ_TOKENS).encode_batch(TEXTS)
    assert [e.ids for e in fast] == expected["input_ids"]
    assert [e.attention_mask for e in fast] == expected["attention_mask"]
    assert [e.type_ids for e in fast] == expected["token_type_ids"]


def test_weights_digest_is_remembered_per_file(tmp_path, monkeypatch):
    """The weights are hashed once per file: a second load reads the note; a file replaced
    in place (another size or change time) is hashed again."""
    import hashlib
    import os

    monkeypatch.setenv("LOOM_SIM_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"first weights")
    first = onnx_minilm._weights_digest(model)
    assert first == hashlib.sha256(b"first weights").hexdigest()[:16]
    assert len(list((tmp_path / "cache" / "digests").iterdir())) == 1

    opened = []
    real_open = Path.open
    monkeypatch.setattr(
        Path, "open", lambda self, *a, **k: opened.append(self) or real_open(self, *a, **k)
    )
    assert onnx_minilm._weights_digest(model) == first
    assert weights not in opened  # read from the note, not hashed again

    weights.write_bytes(b"other weights, longer")
    os.utime(weights, ns=(1, 2))
    assert (
        onnx_minilm._weights_digest(model)
        == hashlib.sha256(b"other weights, longer").hexdigest()[:16]
    )
    assert weights in opened
