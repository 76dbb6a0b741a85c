"""The embedding service: one per run, embedding every rollout's texts in few model calls.

Protocol: ``Embed`` -> ``Embeddings`` (vectors a verdict waits for); ``Prefetch`` (a tell:
texts that will be needed, embedded when the model is free, so a later ``Embed`` finds them
cached).

Why one service and not a model call per message: MiniLM costs about the same for one text as
for a few, a worker thread per message costs a thread hop each, and a few hundred rollouts
asking at once would queue on one lock anyway. So every rollout's monitor sends its texts
here; the loop takes the first request, waits ``window_s`` for others (or until ``max_batch``
texts), answers what the process-wide cache already holds at once, and computes the rest in
one call in a worker thread (``trio.to_thread``), so the event loop goes on serving the
rollouts' HTTP while the model runs. Requests someone waits for go before prefetches.
Batching changes no vector: a text's vector is the same alone or in any batch
(:mod:`loom_sim.signals.onnx_minilm`), so a verdict never depends on which rollouts happened
to ask together.

The model loads when the service starts, in a worker thread, while the rollouts make their
first model calls: requests that come before it is ready wait and then go in one batch. If it
cannot load, every ``Embed`` is answered with the fallback's name (``tfidf``) and no vectors,
and the monitors compare with TF-IDF.

The service runs in its owner's nursery (:func:`running`): the run's, shared by its rollouts,
or a lone rollout's. Cancelling it waits for a batch in progress to finish (a model call takes
milliseconds), so nothing is left running behind it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import trio

from loom_sim.config.spec import EmbeddingBackend as BackendName
from loom_sim.config.spec import LoomConfig
from loom_sim.core.reply import ReplySlot
from loom_sim.messages import Embed, Embeddings, Prefetch
from loom_sim.signals.embedding import Backend, EmbeddingBackend, TfidfBackend, load_backend

WINDOW_S = 0.003  # how long the first request waits for others to join its batch
MAX_BATCH = 64  # texts per model call
QUEUE = 4096  # requests and prefetches waiting; a prefetch that finds it full is dropped

Reply = Embeddings | Exception
Delivery = tuple[Embed | Prefetch, "ReplySlot[Reply] | None"]
Loader = Callable[[str], Backend]


class EmbeddingFailed(RuntimeError):
    """The embedding model failed on a batch; every request in it gets one of these."""


@dataclass
class ServiceStats:
    """What the service did: for tests and benchmarks."""

    requests: int = 0  # Embed requests answered
    prefetched: int = 0  # Prefetch tells taken in
    dropped: int = 0  # prefetches dropped because the queue was full
    cached: int = 0  # texts answered from the cache
    batches: list[int] = field(default_factory=list)  # texts computed per model call
    load_s: float | None = None  # how long loading took (None: not loaded, or already was)
    backend: str | None = None  # the backend in use once loaded


class CacheView(Protocol):
    """What an asker may read of the service's cache without a trip through its queue."""

    def from_cache(self, texts: list[str]) -> Embeddings | None: ...

    def holds(self, texts: list[str]) -> bool: ...


class Embedder:
    """How an actor reaches the run's embedding service: typed requests on its channel."""

    def __init__(
        self,
        inbox: trio.MemorySendChannel[Delivery],
        stats: ServiceStats,
        cache: CacheView | None = None,
    ):
        self._inbox = inbox
        self.stats = stats
        self._cache = cache  # what the cache answers whole, without a trip to the service

    async def request(self, body: Embed) -> Embeddings:
        """The vectors of ``body.texts``; a failure in the service is raised here.

        Texts the process's cache holds every one of are answered here, in the asker's task:
        the service would only look them up, after a trip through its queue and its batching
        window, and a vector is the same whoever looks it up. Once rollouts repeat each
        other's messages, that is most requests."""
        cache = self._cache
        held = cache.from_cache(body.texts) if cache is not None and body.texts else None
        if held is not None:
            return held
        slot = ReplySlot[Reply]()
        try:
            await self._inbox.send((body, slot))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise EmbeddingFailed("the run's embedding service has stopped") from None
        result = await slot.receive()
        if isinstance(result, Exception):
            raise result
        return result

    def tell(self, body: Prefetch) -> None:
        """Ask for ``body.texts`` to be embedded ahead of need; never waits (a prefetch is a
        hint: dropped if the queue is full or the service has stopped, and not sent when the
        cache already holds every text)."""
        if self._cache is not None and self._cache.holds(body.texts):
            return
        try:
            self._inbox.send_nowait((body, None))
        except trio.WouldBlock:
            self.stats.dropped += 1
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass


def needs_embeddings(config: LoomConfig) -> bool:
    """Whether a rollout of ``config`` compares embeddings (its stagnation monitor's)."""
    spec = config.interaction.stagnation_detection
    return spec.enabled and spec.backend is BackendName.EMBEDDING


@asynccontextmanager
async def running(
    *,
    window_s: float = WINDOW_S,
    max_batch: int = MAX_BATCH,
    load: Loader | None = None,
    on_loaded: Callable[[ServiceStats], None] | None = None,
) -> AsyncIterator[Embedder]:
    """An embedding service for the body of the block; it starts loading the model at once
    (``load``, default :func:`~loom_sim.signals.embedding.load_backend`) and stops when the
    block ends."""
    service = EmbeddingService(window_s=window_s, max_batch=max_batch, load=load)
    service.on_loaded = on_loaded
    async with trio.open_nursery() as nursery:
        embedder: Embedder = await nursery.start(service.serve)
        try:
            yield embedder
        finally:
            nursery.cancel_scope.cancel()


class EmbeddingService:
    role = "embedder"

    def __init__(
        self,
        *,
        window_s: float = WINDOW_S,
        max_batch: int = MAX_BATCH,
        load: Loader | None = None,
    ):
        self.window_s = window_s
        self.max_batch = max(1, max_batch)
        self._load_backend = load or load_backend
        self._backend: Backend | None = None
        self._loaded = trio.Event()
        self._waiting: deque[tuple[list[str], ReplySlot[Reply]]] = deque()
        self._background: deque[list[str]] = deque()
        self._closed = False
        self.stats = ServiceStats()
        self.on_loaded: Callable[[ServiceStats], None] | None = None

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        send, inbox = trio.open_memory_channel[Delivery](QUEUE)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._load)
            task_status.started(Embedder(send, self.stats, self))
            async with inbox:
                while await self._gather(inbox):
                    await self._loaded.wait()
                    await self._answer()
            nursery.cancel_scope.cancel()  # nobody can ask any more: stop a load in waiting

    # ─── the loop ───────────────────────────────────────────────────────────

    async def _gather(self, inbox: trio.MemoryReceiveChannel[Delivery]) -> bool:
        """Fill the queues: wait for a first message if they are empty, then give others
        ``window_s`` to join it, then take whatever else is queued. False once the channel is
        closed and nothing is left to answer."""
        if not self._pending():
            if self._closed:
                return False
            try:
                self._file(await inbox.receive())
            except trio.EndOfChannel:
                return False
            with trio.move_on_after(self.window_s):
                while self._queued_texts() < self.max_batch:
                    try:
                        self._file(await inbox.receive())
                    except trio.EndOfChannel:
                        self._closed = True
                        break
        while not self._closed:
            try:
                self._file(inbox.receive_nowait())
            except trio.WouldBlock:
                break
            except trio.EndOfChannel:
                self._closed = True
        return True

    def _file(self, delivery: Delivery) -> None:
        body, reply = delivery
        if isinstance(body, Embed) and reply is not None:
            self._waiting.append((list(body.texts), reply))
        elif isinstance(body, Prefetch):
            self.stats.prefetched += 1
            self._background.append(list(body.texts))

    def _pending(self) -> bool:
        return bool(self._waiting or self._background)

    def _queued_texts(self) -> int:
        return sum(len(t) for t, _ in self._waiting) + sum(len(t) for t in self._background)

    async def _answer(self) -> None:
        """One model call: the waiting requests first, then prefetches, up to ``max_batch``
        texts (a single larger request goes whole)."""
        requests: list[tuple[list[str], ReplySlot[Reply]]] = []
        texts: list[str] = []

        def fits(more: list[str]) -> bool:
            return not texts or len(texts) + len(more) <= self.max_batch

        while self._waiting and fits(self._waiting[0][0]):
            request = self._waiting.popleft()
            requests.append(request)
            texts += request[0]
        while self._background and fits(self._background[0]):
            texts += self._background.popleft()
        backend = self._backend
        if not isinstance(backend, EmbeddingBackend):  # the model could not be loaded
            name = backend.name if backend is not None else "tfidf"
            for _, reply in requests:
                reply.send_nowait(Embeddings(backend=name))
            return
        try:
            table = await self._vectors(backend, texts)
        except Exception as err:  # a failed batch fails its requests, not the service
            for _, reply in requests:
                failure = EmbeddingFailed(
                    f"the embedding model failed ({type(err).__name__}: {err})"
                )
                failure.__cause__ = err
                reply.send_nowait(failure)
            return
        for asked, reply in requests:
            self.stats.requests += 1
            vectors = np.stack([table[t] for t in asked]) if asked else np.zeros((0, 384))
            vectors.flags.writeable = False
            reply.send_nowait(Embeddings(backend=backend.name, vectors=vectors))

    def holds(self, texts: list[str]) -> bool:
        """Whether the model is loaded and its cache holds every one of ``texts``."""
        backend = self._backend
        return isinstance(backend, EmbeddingBackend) and backend.holds(texts)

    def from_cache(self, texts: list[str]) -> Embeddings | None:
        """``texts``' vectors when the model is loaded and its cache holds every one."""
        backend = self._backend
        if not isinstance(backend, EmbeddingBackend) or not self._loaded.is_set():
            return None
        vectors = backend.all_cached(texts)
        if vectors is None:
            return None
        self.stats.requests += 1
        self.stats.cached += len(set(texts))
        return Embeddings(backend=backend.name, vectors=vectors)

    async def _vectors(self, backend: EmbeddingBackend, texts: list[str]) -> dict[str, np.ndarray]:
        """Each distinct text's vector: cached ones looked up here, the rest computed in one
        call in a worker thread (which also caches them)."""
        distinct = list(dict.fromkeys(texts))
        found = backend.cached(distinct)
        table = {t: v for t, v in zip(distinct, found, strict=True) if v is not None}
        self.stats.cached += len(table)
        missing = [t for t in distinct if t not in table]
        if missing:
            computed = await trio.to_thread.run_sync(backend.vectors, missing)
            self.stats.batches.append(len(missing))
            table.update(zip(missing, computed, strict=True))
        return table

    async def _load(self) -> None:
        """Load the model in a worker thread (the first rollouts' model calls go on)."""
        from loom_sim.signals import embedding

        already = embedding.loaded()
        started = time.perf_counter()
        try:
            backend = await trio.to_thread.run_sync(self._load_backend, "embedding")
        except Exception:  # load_backend falls back by itself; a loader that raises, here
            backend = TfidfBackend()
        self._backend = backend
        self.stats.backend = backend.name
        if not already:
            self.stats.load_s = time.perf_counter() - started
            if self.on_loaded is not None:
                self.on_loaded(self.stats)
        self._loaded.set()
