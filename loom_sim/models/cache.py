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

A cache file loom-sim may not write (a shared, read-only copy) still serves its replies: it is
opened read-only and stores nothing new. A file SQLite cannot read at all (garbled, or not a
database) is :class:`CacheGarbled`: a command that needs the cache names the file and stops,
and ``loom-sim cache clear`` removes it.

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
    "CacheGarbled",
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


class CacheGarbled(LoomError):
    """The cache file is not a database SQLite can read; ``remove()`` deletes it."""

    def __init__(self, path: Path, reason: str):
        super().__init__(
            f"{path}: the response cache file is garbled ({reason}); loom-sim cache clear "
            "removes it, or run with --no-cache"
        )
        self.path = path
        self.reason = reason

    def remove(self) -> None:
        """Delete the file and its write-ahead log and index, whatever is in them."""
        for part in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            part.unlink(missing_ok=True)


def _garbled(err: sqlite3.Error) -> bool:
    """Whether ``err`` says the file's content is damaged, not that it cannot be reached
    (OperationalError: locked, read-only, missing folder, full disk)."""
    return isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.OperationalError)


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
        self.read_only = False  # a file we may not write: replies served, none stored
        db = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            if db is not None:
                db.close()
            if isinstance(err, sqlite3.Error) and _garbled(err):
                raise CacheGarbled(self.path, str(err)) from None
            db = self._open_read_only(err)
        self._db = db

    def _open_read_only(self, err: OSError | sqlite3.Error) -> sqlite3.Connection:
        """The existing file, read-only, when it could not be opened to write because we may
        not write it or its folder (a locked or full one is not read around). ``mode=ro``
        first; a WAL file in a folder we may not write has no shared-memory index to open,
        so then ``immutable`` (no locks: fine for a file nobody here can change)."""
        writable = os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)
        if writable or not self.path.is_file():
            raise self._unopenable(err)
        uri = self.path.resolve().as_uri()
        for mode in ("mode=ro", "immutable=1"):
            db = None
            try:
                db = sqlite3.connect(f"{uri}?{mode}", uri=True, isolation_level=None)
                db.execute("SELECT count(*) FROM responses").fetchone()
            except sqlite3.Error as again:
                if db is not None:
                    db.close()
                if _garbled(again):
                    raise CacheGarbled(self.path, str(again)) from None
                continue
            self.read_only = True
            return db
        raise self._unopenable(err)

    def _unopenable(self, err: OSError | sqlite3.Error) -> LoomError:
        return LoomError(
            f"{self.path}: the response cache cannot be opened ({err}); check the file and "
            "its folder, or run with --no-cache"
        )

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
        if self.read_only:
            return response
        try:
            self._db.execute(
                "UPDATE responses SET hits = hits + 1, last_hit_at = ? WHERE key = ?",
                (self._clock(), key),
            )
        except sqlite3.Error as err:
            self._write_failed(err)
        return response

    def put(self, key: str, spec: str, response: ModelResponse) -> None:
        if self.problem is not None or self.read_only:
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
            self._write_failed(err)
            return
        self.stored += 1

    def _write_failed(self, err: sqlite3.Error) -> None:
        """A file we may read but not write (SQLite opens one read-only without a word) keeps
        serving its replies; any other failure switches the cache off."""
        if getattr(err, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY:
            self.read_only = True
        else:
            self._broken(err)

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
        """Remove every entry (or those of one ``provider/model``); the number removed.
        ``CacheGarbled`` when the file turns out damaged past its header."""
        if self.read_only:
            raise LoomError(f"{self.path}: the response cache is read-only; nothing was removed")
        try:
            if spec is None:
                removed = self._db.execute("DELETE FROM responses").rowcount
            else:
                provider, _, model = spec.partition("/")
                removed = self._db.execute(
                    "DELETE FROM responses WHERE provider = ? AND model = ?", (provider, model)
                ).rowcount
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
        except sqlite3.Error as err:
            if _garbled(err):
                raise CacheGarbled(self.path, str(err)) from None
            raise LoomError(f"{self.path}: the response cache cannot be cleared ({err})") from None
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
