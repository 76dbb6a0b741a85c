"""``loom-sim cache stats|clear|path``: the response cache that ``run`` and ``score`` use.

The cache itself is :mod:`loom_sim.models.cache`; :func:`open_cache` is how a command that
calls models opens it (``--cache``, the default) or not (``--no-cache``), and says at the end
what it saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from loom_sim.api.say import open_cache as opened
from loom_sim.models.cache import CacheGarbled, ResponseCache, default_cache_path


@contextmanager
def open_cache(enabled: bool) -> Iterator[ResponseCache | None]:
    """The response cache when ``enabled``; on the way out, one line saying what it did."""
    with opened(enabled, click.echo) as cache:
        yield cache


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


@click.group()
def cache() -> None:
    """The response cache: model replies stored by provider, model, every sampling parameter,
    messages and seed, so a re-score or a re-run costs nothing (set its folder with
    LOOM_SIM_CACHE_DIR)."""


@cache.command()
def stats() -> None:
    """Entries, hits and what the hits saved, by model."""
    with ResponseCache(default_cache_path()) as store:
        found = store.stats()
    click.echo(f"{found.path} · {_size(found.bytes)}")
    click.echo(f"{found.entries} replies stored, {found.hits} served from the cache")
    saved = "an unknown amount" if found.saved_usd is None else f"${found.saved_usd:.4f}"
    click.echo(f"saved {found.saved_tokens} tokens and {saved}")
    for spec, entries, hits in found.by_model:
        click.echo(f"  {spec}: {entries} stored, {hits} hits")


@cache.command()
@click.option("--model", "spec", metavar="SPEC", help="Only this model's replies.")
def clear(spec: str | None) -> None:
    """Remove stored replies (all, or one model's); a garbled cache file is removed whole."""
    try:
        with ResponseCache(default_cache_path()) as store:
            removed = store.clear(spec)
    except CacheGarbled as garbled:
        garbled.remove()
        whole = " (no one model's replies can be told apart in it)" if spec else ""
        click.echo(f"{garbled.path} was garbled ({garbled.reason}): removed the file{whole}")
        return
    click.echo(f"removed {removed} replies" + (f" of {spec}" if spec else ""))


@cache.command()
def path() -> None:
    """Print where the cache lives (LOOM_SIM_CACHE_DIR moves it)."""
    click.echo(str(default_cache_path()))
