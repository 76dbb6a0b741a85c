"""What the fake OpenAI / Anthropic server says: deterministic replies, functions of the request.

A reply is ``"reply <n>: "`` (``n`` = the number of messages in the request; with
``seed`` shown, the request's seed in brackets after it) followed by the first words of the
last user message, or a JSON object when structured output was requested: an example
instance of the schema for OpenAI's ``response_format``, and for Anthropic, whose client puts
the schema in the system prompt, a fenced JSON block wrapped in prose (so the tolerant parser
is exercised too). Token counts are word counts: the clients only pass them on.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

__all__ = ["anthropic_message", "example_for_schema", "openai_completion"]

_ECHO_WORDS = 16


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # Anthropic content blocks
                return " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _reply_text(messages: list[dict[str, Any]], seed: Any = None) -> str:
    words = _last_user_text(messages).split()
    tag = f" ({seed})" if seed is not None else ""
    return f"reply {len(messages)}{tag}: " + " ".join(words[:_ECHO_WORDS])


def example_for_schema(schema: Any, text: str, n: int, depth: int = 0) -> Any:
    """A small instance of ``schema`` (the common subset of JSON Schema models are given)."""
    if not isinstance(schema, dict) or depth > 6:
        return {"reply": text}
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return example_for_schema(schema[key][0], text, n, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        if not props:
            return {"reply": text}
        return {k: example_for_schema(v, text, n, depth + 1) for k, v in props.items()}
    if kind == "array":
        return [example_for_schema(schema.get("items", {}), text, n, depth + 1)]
    if kind == "string":
        return text
    if kind == "integer":
        return n
    if kind == "number":
        return n + 0.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return {"reply": text}


def _word_count(messages: list[dict[str, Any]], extra: str = "") -> int:
    total = _words(extra)
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += _words(content)
    return total


#: Word counts of the message texts seen lately. A conversation's request repeats every earlier
#: message, and counting them again was about a fifth of this server's CPU a request (a 5 KB
#: request: 21 µs of splitting, against 4 µs to parse it), CPU taken from the client under test
#: when both share a machine (``benchmarks/bench_concurrency.py``). The counts are the same.
_COUNTED: dict[str, int] = {}
_COUNTED_MAX = 1 << 16


def _words(text: str) -> int:
    count = _COUNTED.get(text)
    if count is None:
        if len(_COUNTED) >= _COUNTED_MAX:
            _COUNTED.clear()
        count = _COUNTED[text] = len(text.split())
    return count


# ─── the response bodies ────────────────────────────────────────────────────


def openai_completion(
    payload: dict[str, Any], messages: list[Any], fmt: dict[str, Any], seed: Any = None
) -> bytes:
    text = _reply_text(messages, seed)
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        content = json.dumps(example_for_schema(schema, text, len(messages)))
    elif fmt.get("type") == "json_object":
        content = json.dumps({"reply": text, "n": len(messages)})
    else:
        content = text
    prompt, completion = _word_count(messages), len(content.split())
    out = {
        "id": f"chatcmpl-{len(messages)}",
        "object": "chat.completion",
        "model": payload.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return msgspec.json.encode(out)


def anthropic_message(payload: dict[str, Any], messages: list[Any]) -> bytes:
    text = _reply_text(messages)
    system = payload.get("system") or ""
    if isinstance(system, list):
        system = " ".join(b.get("text", "") for b in system if isinstance(b, dict))
    if "JSON" in system:
        obj = json.dumps({"reply": text, "n": len(messages)})
        content = f"Here is the object you asked for:\n```json\n{obj}\n```\nAnything else?"
    else:
        content = text
    out = {
        "id": f"msg_{len(messages)}",
        "type": "message",
        "role": "assistant",
        "model": payload.get("model", "fake"),
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": _word_count(messages, system),
            "output_tokens": len(content.split()),
        },
    }
    return json.dumps(out).encode()
