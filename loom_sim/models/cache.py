"""The response cache: a model's reply, stored under everything that decided it.

A re-score, or a re-run of a run with its recorded seed, asks the same models the same
questions: with the cache those calls cost nothing and give the same replies, so a changed
report or a new scorer never has to pay for the conversation again. The key is the SHA-256 of
the provider, the model, the server (scheme, host and path only: no credentials, no query)
and the whole :class:`~loom_sim.models.base.ModelRequest` — every message, every sampling
parameter, the seed, the schema — so a different temperature or one changed character is a
different entry. API keys are read from the environment by the clients and never reach the
key or the file.

Only replies are stored. A call that raises (a refusal after its retries, a reply that does
not parse, a dead server) stores nothing, so the next attempt asks the model again.

Why SQLite (the standard library's ``sqlite3``) and not ``diskcache``: one file that
``sqlite3`` on any machine can open and query, WAL mode so two runs can share it, ``cache
stats`` as plain SQL, and no dependency for something this small. Calls are synchronous: a
lookup by primary key takes microseconds, well below the cost of handing it to a thread.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from loom_sim.errors import LoomError
from loom_sim.models.base import ModelClient, ModelRequest, ModelResponse, Usage

__all__ = [
    "CACHE_ENV",
    "CACHE_FILE",
    "CacheStats",
    "CachedClient",
    "ResponseCache",
    "cache_key",
    "default_cache_path",
]

CACHE_ENV = "LOOM_SIM_CACHE_DIR"  # where the cache lives (default: the user's cache folder)
CACHE_FILE = "responses.sqlite3"
KEY_VERSION = 1  # bump when the key's recipe changes: old entries are then never found

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    response BLOB NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL,
    created_at REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    last_hit_at REAL
);
CREATE INDEX IF NOT EXISTS responses_model ON responses (provider, model);
"""

_REQUEST = msgspec.json.Encoder(order="sorted")
_RESPONSE = msgspec.json.Encoder()
_DECODE = msgspec.json.Decoder(ModelResponse)


def default_cache_path(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """``$LOOM_SIM_CACHE_DIR/responses.sqlite3``, else under ``$XDG_CACHE_HOME/loom-sim``,
    else ``~/.cache/loom-sim``."""
    env = os.environ if env is None else env
    folder = env.get(CACHE_ENV)
    if folder:
        return Path(folder).expanduser() / CACHE_FILE
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "loom-sim" / CACHE_FILE


def _server(base_url: str | None) -> str:
    """The server part of the key: scheme, host, port and path; never userinfo or a query."""
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def cache_key(spec: str, request: ModelRequest, base_url: str | None = None) -> str:
    """The entry's key: a digest of the spec (provider and model), the server and the whole
    request. ``spec`` is ``provider/model``."""
    provider, _, model = spec.partition("/")
    head = f"v{KEY_VERSION}\0{provider}\0{model}\0{_server(base_url)}\0".encode()
    return hashlib.sha256(head + _REQUEST.encode(request)).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    hits: int  # replies served from the cache, over its lifetime
    bytes: int
    by_model: list[tuple[str, int, int]]  # (spec, entries, hits), most entries first
    saved_tokens: int  # tokens the hits did not have to generate or read again
    saved_usd: float | None  # what the hits would have cost (None: some price unknown)


class ResponseCache:
    """One SQLite file of replies. Open it once per process; ``close()`` at the end.

    ``hits`` and ``misses`` count this process's lookups (what the CLI reports after a run);
    the file keeps every entry's lifetime hits for ``loom-sim cache stats``.
    """

    def __init__(self, path: Path | str, *, clock=time.time):
        self.path = Path(path)
        self._clock = clock
        self.hits = 0
        self.misses = 0
        self.stored = 0
        self.problem: str | None = None  # set when a write failed: the cache is then off
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise LoomError(
                f"{self.path}: the response cache cannot be opened ({err}); remove the file "
                "(loom-sim cache clear) or run with --no-cache"
            ) from None

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"

    # ── lookups ──

    def get(self, key: str) -> ModelResponse | None:
        if self.problem is not None:
            return None
        try:
            row = self._db.execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
        except sqlite3.Error as err:
            self._broken(err)
            return None
        if row is None:
            self.misses += 1
            return None
        try:
            response = _DECODE.decode(row[0])
        except msgspec.DecodeError:  # written by another version, or damaged: ask again
            self.misses += 1
            return None
        self.hits += 1
        try:
            self._db.execute(
                "UPDATE responses SET hits = hits + 1, last_hit_at = ? WHERE key = ?",
                (self._clock(), key),
            )
        except sqlite3.Error as err:
            self._broken(err)
        return response

    def put(self, key: str, spec: str, response: ModelResponse) -> None:
        if self.problem is not None:
            return
        provider, _, model = spec.partition("/")
        usage = response.usage
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, provider, model, response, input_tokens, "
                "output_tokens, cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    provider,
                    model,
                    _RESPONSE.encode(response),
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cost_usd,
                    self._clock(),
                ),
            )
        except sqlite3.Error as err:
            self._broken(err)
            return
        self.stored += 1

    def _broken(self, err: sqlite3.Error) -> None:
        """A full disk or a locked file must not stop a run: the cache switches itself off
        and says why (the CLI prints it once at the end)."""
        self.problem = f"{self.path}: the response cache stopped working ({err})"

    # ── upkeep ──

    def stats(self) -> CacheStats:
        db = self._db
        entries, hits, tokens = db.execute(
            "SELECT count(*), coalesce(sum(hits), 0), "
            "coalesce(sum(hits * (input_tokens + output_tokens)), 0) FROM responses"
        ).fetchone()
        unknown, saved = db.execute(
            "SELECT coalesce(sum(hits > 0 AND cost_usd IS NULL), 0), "
            "coalesce(sum(hits * cost_usd), 0.0) FROM responses"
        ).fetchone()
        by_model = [
            (f"{p}/{m}", n, h)
            for p, m, n, h in db.execute(
                "SELECT provider, model, count(*), coalesce(sum(hits), 0) FROM responses "
                "GROUP BY provider, model ORDER BY count(*) DESC, provider, model"
            )
        ]
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )
        return CacheStats(
            path=self.path,
            entries=int(entries),
            hits=int(hits),
            bytes=size,
            by_model=by_model,
            saved_tokens=int(tokens),
            saved_usd=None if unknown else float(saved),
        )

    def clear(self, spec: str | None = None) -> int:
        """Remove every entry (or those of one ``provider/model``); the number removed."""
        if spec is None:
            removed = self._db.execute("DELETE FROM responses").rowcount
        else:
            provider, _, model = spec.partition("/")
            removed = self._db.execute(
                "DELETE FROM responses WHERE provider = ? AND model = ?", (provider, model)
            ).rowcount
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.execute("VACUUM")
        return int(removed)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedClient:
    """A model client that answers from the cache when it can and stores what it gets.

    A reply served from the cache costs nothing (``usage.cost_usd`` is 0, the token counts are
    the original call's) and says so (``cached=True``); everything else is the stored reply.
    """

    def __init__(self, inner: ModelClient, cache: ResponseCache, base_url: str | None = None):
        self.inner = inner
        self.spec = inner.spec
        self._cache = cache
        self._base_url = base_url

    @property
    def context_tokens(self) -> int:
        return self.inner.context_tokens

    @context_tokens.setter
    def context_tokens(self, tokens: int) -> None:  # the protocol's attribute is settable
        self.inner.context_tokens = tokens

    async def complete(self, request: ModelRequest) -> ModelResponse:
        key = cache_key(self.spec, request, self._base_url)
        found = self._cache.get(key)
        if found is not None:
            usage = Usage(found.usage.input_tokens, found.usage.output_tokens, 0.0)
            return msgspec.structs.replace(found, usage=usage, cached=True, latency_s=0.0)
        response = await self.inner.complete(request)  # raises: nothing is stored
        self._cache.put(key, self.spec, response)
        return response

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:  # provider-specific extras (a local model's)
        return getattr(self.inner, name)
