"""One llama.cpp model per file in a process, however many slots read it.

Each role of a run keeps a llama.cpp slot of its own (a ``Llama``: a context, its KV cache, its
compute buffers) so that its prompt prefix survives the other roles' calls. llama-cpp-python
loads the model again for every ``Llama``: the weights are the same memory-mapped file, but
each mapping is resident on its own, so four slots of the embedded model counted its 136 MiB of
weights four times in the process's resident memory. llama.cpp itself is built for many
contexts over one model (its weights are read-only once loaded); only the Python binding makes
one model per context.

:func:`sharing_models` lets the binding's constructor take an already loaded model of the same
file and parameters: inside it, the binding's ``LlamaModel`` is one that hands out a shared
model, reference-counted, freed when the last slot closes. The patch is in place only while a
``Llama`` is constructed, under a process-wide lock, and a model loaded with other parameters
is loaded as the binding would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["loaded_models", "sharing_models"]

_GUARD = threading.RLock()  # a failed construction closes its model inside the lock
_MODELS: dict[tuple[Any, ...], _Entry] = {}


class _Entry:
    def __init__(self, key: tuple[Any, ...], model: Any):
        self.key = key
        self.model = model
        self.refs = 0


class _SharedModel:
    """What a ``Llama`` holds as its ``_model``: the shared model, whose ``close`` frees it only
    when no other slot holds it."""

    def __init__(self, entry: _Entry):
        self._entry = entry
        self._closed = False
        entry.refs += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._entry.model, name)

    def close(self) -> None:
        with _GUARD:
            if self._closed:
                return
            self._closed = True
            entry = self._entry
            entry.refs -= 1
            if entry.refs == 0:
                _MODELS.pop(entry.key, None)
                entry.model.close()


def _key(path: str, params: Any) -> tuple[Any, ...]:
    fields = [name for name, _ in getattr(params, "_fields_", [])]
    # pointers (progress callbacks, overrides) differ per call; a model with any is not shared
    plain = tuple(
        (name, getattr(params, name))
        for name in fields
        if isinstance(getattr(params, name), int | float | bool | bytes | str | None)
    )
    return (path, plain)


@contextmanager
def sharing_models() -> Iterator[None]:
    """Inside it, a ``llama_cpp.Llama`` constructed for a file whose model is loaded already
    (with the same parameters) shares that model instead of loading its own."""
    from llama_cpp import _internals as internals

    with _GUARD:
        original = internals.LlamaModel

        def shared(*, path_model: str, params: Any, verbose: bool = True) -> Any:
            if getattr(params, "kv_overrides", None):
                return original(path_model=path_model, params=params, verbose=verbose)
            key = _key(path_model, params)
            entry = _MODELS.get(key)
            if entry is None:
                model = original(path_model=path_model, params=params, verbose=verbose)
                entry = _MODELS[key] = _Entry(key, model)
            return _SharedModel(entry)

        setattr(internals, "LlamaModel", shared)  # noqa: B010 (a class replaced by a function)
        try:
            yield
        finally:
            setattr(internals, "LlamaModel", original)  # noqa: B010


def loaded_models() -> int:
    """How many distinct models the shared slots hold (what a test reads)."""
    with _GUARD:
        return len(_MODELS)
