"""Every generated message is checked before it is said, and a failing one is regenerated
with the reasons — never silently dropped, as Faultline drops a reply that trips its list.

A message is checked against its **shape** (how many sentences, whether it must or must not be
a question, whether it must name something specific, whether it opens by agreeing or
refusing), the **hard-banned patterns** (the default list: "That's a great point", "as an AI",
"firstly", "in conclusion", "let's break this down", and the opening's "I think", "In my view",
"Here's my take"), and the persona's **forbidden phrases**. Each failure is one sentence the
model can act on ("it has 3 sentences; write exactly 1"), which is what the regeneration
prompt shows it.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from loom_sim.debate.contract import Strict

# ─── sentences ──────────────────────────────────────────────────────────────

_ABBREVIATIONS = re.compile(
    r"(?<![A-Za-z])(?:e\.g\.|i\.e\.|etc\.|vs\.|cf\.|approx\.|dr\.|mr\.|mrs\.|ms\.|prof\.|st\.|"
    r"jr\.|sr\.|u\.s\.|u\.k\.|a\.m\.|p\.m\.|no\.(?=\s*\d))",
    re.I,
)
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.M)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: split after . ! ? … before a capital or a digit, and at line
    breaks; common abbreviations and decimals do not end a sentence."""
    # The full stops of abbreviations are hidden while splitting, then given back.
    guarded = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\0"), text)
    parts: list[str] = []
    for line in guarded.splitlines():
        start = 0
        for end in _END.finditer(line):
            parts.append(line[start : end.end()])
            start = end.end()
        parts.append(line[start:])
    return [p.strip().replace("\0", ".") for p in parts if p.strip()]


# ─── shapes ─────────────────────────────────────────────────────────────────

_AGREEING = re.compile(r"^\W*(yes|yeah|agreed|exactly|right|true|absolutely|indeed)\b", re.I)
_REFUSING = re.compile(r"^\W*(no|nope|wrong|false|nonsense|hardly)\b", re.I)
_SPECIFIC = re.compile(r"\d|[\"“][^\"”]{3,}[\"”]")
_NAME_INSIDE = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")


class Shape(Strict):
    """What a message must look like: the part of an intent (or a room's rule) that can be
    checked without a model."""

    sentences: tuple[int, int] = Field(
        (1, 1), strict=False, description="Least and most sentences."
    )
    question: Literal["required", "forbidden", "any"] = Field(
        "any", description="required: ends with '?'; forbidden: no question at all."
    )
    specific: bool = Field(
        False, description="Must name something checkable: a number, a name or a quote."
    )
    opens: Literal["agreeing", "challenging", "any"] = Field(
        "any",
        description="agreeing: must not open with a refusal; challenging: must not open by "
        "agreeing.",
    )
    max_words: int = Field(90, ge=1, le=2000, description="A runaway message fails this.")

    @field_validator("sentences")
    @classmethod
    def _order(cls, value: tuple[int, int]) -> tuple[int, int]:
        least, most = value
        if least < 1 or most < least:
            raise ValueError(f"sentences must be [least, most] with 1 <= least <= most: {value}")
        return value

    def problems(self, text: str) -> list[str]:
        said = text.strip()
        found: list[str] = []
        if not said:
            return ["it is empty"]
        if _LIST_ITEM.search(said):
            found.append("it is a list; write plain sentences")
        count = len(sentences(said))
        least, most = self.sentences
        if not least <= count <= most:
            want = f"exactly {least}" if least == most else f"{least} to {most}"
            noun = "sentence" if count == 1 else "sentences"
            found.append(f"it has {count} {noun}; write {want}")
        if self.question == "required" and not said.rstrip("\"')”’ ").endswith("?"):
            found.append("it must be a question ending with '?'")
        if self.question == "forbidden" and "?" in said:
            found.append("it must state something, not ask")
        if self.specific and not (_SPECIFIC.search(said) or _NAME_INSIDE.search(said)):
            found.append("it must name something specific: a number, a date, a name or a quote")
        if self.opens == "challenging" and _AGREEING.search(said):
            found.append("it must challenge the point, not open by agreeing")
        if self.opens == "agreeing" and _REFUSING.search(said):
            found.append("it must support the point, not open by refusing it")
        words = len(said.split())
        if words > self.max_words:
            found.append(f"it has {words} words; keep it under {self.max_words}")
        return found


# ─── banned patterns and forbidden phrases ──────────────────────────────────


class BannedPattern(Strict):
    name: str = Field(description="What the pattern catches, as shown in the reason.")
    pattern: str = Field(description="A regular expression, matched case-insensitively.")
    openings_only: bool = Field(False, description="Checked on opening statements only.")

    @model_validator(mode="after")
    def _compiles(self) -> BannedPattern:
        try:
            re.compile(self.pattern)
        except re.error as err:
            raise ValueError(
                f"pattern {self.pattern!r} is not a regular expression ({err})"
            ) from None
        return self

    def hit(self, text: str) -> bool:
        """Whether the pattern matches; ``^`` means the start of any sentence, so "Firstly"
        cannot hide behind a first sentence."""
        return any(
            re.search(self.pattern, part, flags=re.I) is not None
            for part in [text.strip(), *sentences(text)]
        )


#: The hard-banned patterns, and the opening turn's banned phrases.
HARD_BANNED = (
    BannedPattern(
        name="That's a great point",
        pattern=r"^(that'?s|that is) a (great|good|interesting|valid|fair) "
        r"(point|question|observation)",
    ),
    BannedPattern(name="as an AI", pattern=r"\bas an (AI|artificial intelligence|language model)"),
    BannedPattern(name="firstly / secondly", pattern=r"^(firstly|secondly|thirdly)[,\s]"),
    BannedPattern(name="in summary / in conclusion", pattern=r"\bin (summary|conclusion)[,\s]"),
    BannedPattern(name="let's break this down", pattern=r"\blet'?s break (this|it) down\b"),
    BannedPattern(name="Good point / I see", pattern=r"^(good point|great point|i see)\b"),
    BannedPattern(name="I think", pattern=r"\bI think\b"),
    BannedPattern(name="In my view", pattern=r"\bin my (view|opinion)\b"),
    BannedPattern(name="Here's my take", pattern=r"\bhere'?s my take\b"),
)


def forbidden_hits(text: str, phrases: list[str]) -> list[str]:
    """The persona's forbidden phrases found in ``text`` (whole words, any case)."""
    lowered = " ".join(text.lower().split())
    return [
        p
        for p in phrases
        if re.search(rf"(?<!\w){re.escape(' '.join(p.lower().split()))}(?!\w)", lowered)
    ]


def check_message(
    text: str,
    shape: Shape,
    *,
    banned: tuple[BannedPattern, ...] | list[BannedPattern],
    forbidden: list[str],
    persona: str,
    opening: bool = False,
) -> list[str]:
    """Every reason ``text`` cannot be said, in words the model can act on; empty when it can."""
    reasons = shape.problems(text)
    for pattern in banned:
        if (opening or not pattern.openings_only) and pattern.hit(text):
            reasons.append(f"it uses the banned pattern {pattern.name!r}")
    for phrase in forbidden_hits(text, forbidden):
        reasons.append(f"it uses {phrase!r}, which {persona} never says")
    return reasons
