"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors as sentence-transformers, ~2x faster.

On this kind of CPU, PyTorch takes ~23 ms to embed a typical 135-token message; ONNX Runtime
runs the identical graph (exported once from the shipped weights, float32, mean pooling and
normalisation as sentence-transformers does them) in ~12 ms, and less per text in batches.
The export takes two seconds and is cached under ``$LOOM_SIM_CACHE`` (default
``~/.cache/loom-sim``), keyed by the weights' hash, so it happens once per machine.

Why batches change nothing: the graph is float32 and every position a text does not fill is
masked, so a text's vector is the same bit for bit alone or in any batch (a test holds this).
That is what lets the embedding service batch many rollouts' texts without a verdict
depending on which texts happened to share a call. It is also why the model is not
int8-quantised: ONNX Runtime's dynamic quantisation scales activations over the whole batch,
so a text's vector would depend on its neighbours (measured: cosine down to 0.986 between the
same text alone and batched); docs/signals.md gives the measurements.

Tokenising uses the ``tokenizers`` library on the model's own ``tokenizer.json`` (the same
ids as ``transformers.AutoTokenizer``, a test holds this): importing transformers costs
seconds and holds the GIL, which would stall the event loop of a run that is loading the
model while its first rollouts talk to their models.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from loom_sim import cpu

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Texts per ONNX call, sorted by length first so little of a call is padding. 8, not 32: the
# attention of a call of 32 long texts held ~200 MiB in ONNX Runtime's arena for the rest of
# the run, 8 ~45 MiB, and 200 texts took 4.3 s instead of 5.1 s (benchmarks/bench_memory.py).
BATCH = 8


def cache_dir() -> Path:
    root = os.environ.get("LOOM_SIM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "loom-sim"
    )
    return Path(root)


def _weights_digest(model_dir: Path) -> str:
    """The weights' SHA-256 (16 hex digits), remembered per file: hashing the 90 MB file
    costs ~0.3 s of CPU, which every run and every worker process would otherwise pay while
    its first rollouts are talking. The note is keyed by the file's path, size and change
    time, so a replaced file is hashed again; a note that cannot be read or written only
    means hashing."""
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    key = hashlib.sha256(f"{weights.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    note = cache_dir() / "digests" / f"{key.hexdigest()[:24]}.txt"
    try:
        known = note.read_text().strip()
        if len(known) == 16:
            return known
    except OSError:
        pass
    digest = hashlib.sha256()
    with weights.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()[:16]
    with contextlib.suppress(OSError):
        note.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=note.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(value)
            os.replace(tmp, note)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return value


def export(model_dir: Path, target: Path, max_tokens: int) -> None:
    """Export the transformer to ONNX (atomically: a half-written file is never used)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(model_dir, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = tokenizer(["a sample"], return_tensors="pt", max_length=max_tokens, truncation=True)
    dynamic = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "hidden")}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        # The tracer warns about shape-dependent branches it records; they hold for any input.
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Encoder(),
                tuple(sample[name] for name in INPUTS),
                tmp,
                input_names=list(INPUTS),
                output_names=["hidden"],
                dynamic_axes=dynamic,
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_tokenizer(model_dir: Path, max_tokens: int):
    """The model's fast tokenizer: truncation at ``max_tokens``, padding to the longest text
    of a batch (as sentence-transformers calls it)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_tokens)
    pad = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_padding(pad_id=0 if pad is None else pad, pad_token="[PAD]")
    return tokenizer


class OnnxMiniLM:
    """``encode(texts) -> unit vectors`` (n, 384), like SentenceTransformer.encode."""

    def __init__(self, model_dir: str | Path, max_tokens: int):
        import onnxruntime

        model_dir = Path(model_dir)
        self.max_tokens = max_tokens
        onnx_path = cache_dir() / f"all-MiniLM-L6-v2-{_weights_digest(model_dir)}.onnx"
        if not onnx_path.exists():
            export(model_dir, onnx_path, max_tokens)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = cpu.threads()
        options.log_severity_level = 3
        # Idle pool threads would otherwise spin for a while after every call, taking the CPU
        # the event loop (and the model servers) need between batches.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Prepacked copies of the weights held ~18 MiB more for a few per cent of speed on
        # texts the service batches anyway (benchmarks/bench_memory.py); the vectors are the same.
        options.add_session_config_entry("session.disable_prepacking", "1")
        self._session = onnxruntime.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = load_tokenizer(model_dir, max_tokens)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors in the order given; computed in calls of up to ``BATCH`` texts of
        similar length (a text's vector does not depend on the others in its call)."""
        out = np.empty((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._encode([texts[i] for i in chunk])
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        hidden = self._session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
