"""The simulator audit: the known ways simulated users go wrong, caught per draft.

Users of other simulators complain most about three failures, and each is checked on every
draft before it is sent:

* **role flip** — the simulated user talks like the assistant ("How can I help you?", "Here
  is the image you requested", "As an AI..."), or writes the program's side of the
  conversation: its last reply again (eight words in a row or more) or the transcript's own
  "The program answered:";
* **invented reference** — it names a file, an image or an argument that neither the scenario
  nor the program ever mentioned (``/blend img7 img1`` when there are three images);
* **repeated action** — it types its last line again, word for word.

The audit reads text only and decides nothing: the session re-asks a flagged draft while the
policy's retries last, and records the flags either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from loom_sim.harness.messages import Action
from loom_sim.harness.records import AuditFlag

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
# How the session shows the program's replies to the user model: a draft opening with it is
# the model continuing the transcript, not a user typing.
SCAFFOLD = re.compile(r"(?i)^\s*the program (?:answered|started)\s*:")
ECHO_WORDS = 8  # this many words in a row of the program's last reply is an echo
_WORD = re.compile(r"[\w.-]+")


def vocabulary(texts: Iterable[str]) -> set[str]:
    """Every word of ``texts``, lower-cased: what counts as mentioned."""
    words: set[str] = set()
    for text in texts:
        words.update(w.lower().strip(".-") for w in _WORD.findall(text))
    return words


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _echoes(text: str, reply: str) -> bool:
    """Whether ``text`` repeats the program's last reply (a long stretch of it, word for word)."""
    words, said = text.lower().split(), _normal(reply)
    return len(words) >= ECHO_WORDS and any(
        " ".join(words[i : i + ECHO_WORDS]) in said for i in range(len(words) - ECHO_WORDS + 1)
    )


def audit(
    action: Action, previous: Action | None, known: set[str], last_reply: str = ""
) -> list[AuditFlag]:
    """The flags ``action`` earns, given the last action, the words mentioned so far and the
    program's last reply."""
    flags: list[AuditFlag] = []
    if match := ROLE_FLIP.search(action.text):
        flags.append(AuditFlag("role_flip", f"speaks as the assistant: {match.group(0).strip()!r}"))
    elif SCAFFOLD.match(action.text) or _echoes(action.text, last_reply):
        flags.append(AuditFlag("role_flip", "repeats the program's words as its own"))
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
