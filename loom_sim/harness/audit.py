"""The simulator audit: the known ways simulated users go wrong, caught per draft.

Users of other simulators complain most about three failures, and each is checked on every
draft before it is sent:

* **role flip** — the simulated user talks like the assistant ("How can I help you?", "Here
  is the image you requested", "As an AI...");
* **invented reference** — it names a file, an image or an argument that neither the scenario
  nor the program ever mentioned (``/blend img7 img1`` when there are three images);
* **repeated action** — it types its last line again, word for word.

The audit reads text only and decides nothing: the session re-asks a flagged draft while the
policy's retries last, and records the flags either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from loom_sim.harness.records import AuditFlag
from loom_sim.messages import Action

ROLE_FLIP = re.compile(
    r"""(?ix)
      ^\s*(?:assistant|ai|bot|system)\s*:
    | \bas\ an\ ai\b | \bas\ a\ (?:large\ )?language\ model\b
    | \bhow\ (?:can|may)\ i\ (?:help|assist)\b
    | \bi(?:'d|\ would)\ be\ (?:happy|glad)\ to\ help\b
    | \bhere\ (?:is|are)\ the\ (?:\w+\ )?(?:image|result|file)s?
      \ you\ (?:requested|asked\ for|wanted)\b
    | \bi(?:'ve|\ have)\ (?:generated|created|made|rendered)\ (?:the|an?|your)\b
    | \bis\ there\ anything\ else\ i\ can\b
    | \blet\ me\ know\ if\ you\ need\ anything\ else\b
    """
)
FILE_NAME = re.compile(
    r"\b[\w.-]+\.(?:png|jpe?g|gif|webp|bmp|tiff?|heic|pdf|txt|csv|json|mp4|mov|psd|svg)\b", re.I
)
ID_LIKE = re.compile(r"\b[a-z]{2,}\d+\b", re.I)
_WORD = re.compile(r"[\w.-]+")


def vocabulary(texts: Iterable[str]) -> set[str]:
    """Every word of ``texts``, lower-cased: what counts as mentioned."""
    words: set[str] = set()
    for text in texts:
        words.update(w.lower().strip(".-") for w in _WORD.findall(text))
    return words


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def audit(action: Action, previous: Action | None, known: set[str]) -> list[AuditFlag]:
    """The flags ``action`` earns, given the last action and the words mentioned so far."""
    flags: list[AuditFlag] = []
    if match := ROLE_FLIP.search(action.text):
        flags.append(AuditFlag("role_flip", f"speaks as the assistant: {match.group(0).strip()!r}"))
    invented: list[str] = []
    for name in FILE_NAME.findall(action.text):
        if name.lower() not in known:
            invented.append(name)
    candidates = action.args if action.kind == "command" else ID_LIKE.findall(action.text)
    for token in candidates:
        word = token.lower().strip(",.")
        if not word or word in known or word in invented or _number(word):
            continue
        if action.kind == "command" or ID_LIKE.fullmatch(word):
            invented.append(token)
    if invented:
        flags.append(
            AuditFlag("invented_reference", "names what nobody mentioned: " + ", ".join(invented))
        )
    if previous is not None and _normal(action.text) == _normal(previous.text):
        flags.append(AuditFlag("repeated_action", "the last action, word for word"))
    return flags


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def feedback(flags: list[AuditFlag]) -> str:
    """What the simulated user is told when its draft is asked for again."""
    said = {
        "role_flip": "you wrote as if you were the program's assistant; you are the user",
        "invented_reference": "you named something that does not exist",
        "repeated_action": "you repeated your last action word for word; try something else",
    }
    parts = [said.get(f.kind, f.kind) + f" ({f.detail})" for f in flags]
    return "; ".join(parts)
