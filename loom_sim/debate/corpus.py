"""A persona's corpus: what they wrote, read from local files, as numbered excerpts.

Three kinds of source, each optional: RSS or Atom feeds (parsed by ``feedparser`` from the
file's bytes, so nothing is ever fetched; HTML stripped, the first ``max_chars`` characters of
each item kept, 2000 by default), a JSON list of short posts
(strings, or objects with ``text`` and optional ``date`` and ``url``), and plain text
(paragraphs separated by blank lines). The excerpts are what anchor quotes must be found in,
verbatim, and what the contract's ``corpus_hash`` is the hash of.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path

import msgspec

from loom_sim.errors import LoomError


class Excerpt(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # p3 (a post), f1 (a feed item), t2 (a paragraph of text)
    kind: str  # post | feed | text
    text: str
    source: str  # a URL, or the file it came from
    date: str = ""  # ISO date when known


_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"[ \t\r\f\v]+")


def plain(text: str) -> str:
    """HTML to plain text: tags dropped, entities decoded, runs of spaces collapsed."""
    text = re.sub(r"<(br|/p|/div|/li)\b[^>]*>", "\n", text, flags=re.I)
    text = html.unescape(_TAG.sub("", text))
    lines = [_SPACE.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def _iso(value: str) -> str:
    match = re.match(r"(\d{4}-\d{2}-\d{2})", value or "")
    return match.group(1) if match else ""


def read_feed(path: Path, max_items: int, max_chars: int) -> list[Excerpt]:
    import feedparser

    data = _read(path)
    parsed = feedparser.parse(data)  # bytes: parsed, never fetched
    if parsed.bozo and not parsed.entries:
        raise LoomError(f"{path}: not an RSS or Atom feed ({parsed.get('bozo_exception')})")
    out = []
    for n, entry in enumerate(parsed.entries[:max_items]):
        content = entry.get("content") or []
        body = content[0].get("value", "") if content else entry.get("summary", "")
        title = entry.get("title", "")
        text = plain(f"{title}\n{body}" if title and title not in body else body)[:max_chars]
        if not text:
            continue
        published = entry.get("published_parsed") or entry.get("updated_parsed")
        date = (
            f"{published.tm_year:04d}-{published.tm_mon:02d}-{published.tm_mday:02d}"
            if published
            else ""
        )
        out.append(
            Excerpt(
                id=f"f{n}", kind="feed", text=text, source=entry.get("link") or str(path), date=date
            )
        )
    return out


def read_posts(path: Path, max_posts: int) -> list[Excerpt]:
    try:
        data = json.loads(_read(path))
    except ValueError as err:
        raise LoomError(f"{path}: not JSON ({err})") from None
    except RecursionError:
        raise LoomError(f"{path}: nested too deeply for a list of posts") from None
    if not isinstance(data, list):
        raise LoomError(f"{path}: posts must be a JSON list of strings or {{text, date, url}}")
    out = []
    for n, item in enumerate(data[:max_posts]):
        post = {"text": item} if isinstance(item, str) else item
        if not isinstance(post, dict) or not isinstance(post.get("text"), str):
            raise LoomError(f"{path}: post {n} has no text")
        text = " ".join(post["text"].split())
        if text:
            out.append(
                Excerpt(
                    id=f"p{n}",
                    kind="post",
                    text=text,
                    source=str(post.get("url") or path.name),
                    date=_iso(str(post.get("date", ""))),
                )
            )
    return out


def read_text(path: Path, max_chars: int) -> list[Excerpt]:
    paragraphs = [
        p for p in re.split(r"\n\s*\n", _read(path).decode("utf-8", "replace")) if p.strip()
    ]
    return [
        Excerpt(id=f"t{n}", kind="text", text=" ".join(p.split())[:max_chars], source=path.name)
        for n, p in enumerate(paragraphs)
    ]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise LoomError(f"{path}: cannot read it ({err.strerror})") from None


def corpus_hash(excerpts: list[Excerpt]) -> str:
    return hashlib.sha256(msgspec.json.encode(excerpts)).hexdigest()


def normalise(text: str) -> str:
    """Whitespace collapsed: a quote is verbatim if it matches the corpus up to line breaks
    and runs of spaces (HTML stripping leaves those where the author had none)."""
    return " ".join(text.split())


def find_quote(quote: str, excerpts: list[Excerpt]) -> Excerpt | None:
    """The excerpt ``quote`` occurs in verbatim (whitespace aside), within one of its lines,
    if any. A feed item's title and each of its paragraphs are lines of their own: a quote
    that runs from the title into the body is two fragments joined, not words anyone wrote."""
    wanted = normalise(quote)
    if not wanted:
        return None
    return next(
        (e for e in excerpts if any(wanted in normalise(line) for line in e.text.splitlines())),
        None,
    )
