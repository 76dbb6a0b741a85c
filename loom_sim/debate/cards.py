"""Crux cards: the validated record of *why* two positions differ.

A card names the crux (a 3–5 word noun phrase), its type (horizon, evidence, values,
definition, claim, premise), a diagnosis, whether it was resolved and how, and each persona's
position (YES / NO / NUANCED), reasoning and falsifier. Every claim cites the ids of the
messages it rests on, and :func:`validate_card` checks that each cited message exists, was
said by the persona the claim is about, and — for a YES or a NO on the room's question — takes
that side of it (:func:`loom_sim.debate.stance.side`, and with MiniLM the learned citation
check of :mod:`loom_sim.debate.learned`): a message cited for a NO that says the claim holds
is refused, as is one that takes no side, when neither reading puts it on the cited side. A
card is evidence a reader can audit, not a summary to trust. A model's card that fails is
asked for again with the reasons, then recorded as rejected; it is never repaired by guessing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import ConfigDict, Field, ValidationError

from loom_sim.debate.checks import sentences
from loom_sim.debate.contract import Prose, Strict
from loom_sim.debate.stance import Side, side
from loom_sim.models.base import Usage

if TYPE_CHECKING:
    from loom_sim.debate.learned import Verdict

#: (message, question, cited for YES) -> the learned citation check's verdict
Supports = Callable[[str, str, bool], "Verdict"]


class DisagreementType(StrEnum):
    HORIZON = "horizon"  # different time horizons
    EVIDENCE = "evidence"  # different data or sources
    VALUES = "values"  # different priorities
    DEFINITION = "definition"  # different meanings of a term
    CLAIM = "claim"  # disputing a conclusion
    PREMISE = "premise"  # disputing an assumption


class Stance(StrEnum):
    YES = "YES"
    NO = "NO"
    NUANCED = "NUANCED"


class _Answer(Strict):
    """A model's answer, not a file: read as JSON reads it (lax), still closed to unknown keys."""

    model_config = ConfigDict(strict=False)


class Position(_Answer):
    persona: str = Field(description="The persona's id.")
    stance: Stance
    reasoning: Prose
    falsifier: Prose = Field(description="What would change their mind.")
    cites: list[str] = Field(description="Ids of this persona's messages the position rests on.")


class CruxCard(_Answer):
    crux: Prose = Field(description="3-5 word noun phrase, e.g. 'barrier payback horizon'.")
    type: DisagreementType
    diagnosis: Prose = Field(description="1-2 sentences: the root cause.")
    diagnosis_cites: list[str] = Field(description="Ids of the messages the diagnosis rests on.")
    resolved: bool
    resolution: str = Field("", description="What changed, or why it is irreducible.")
    positions: list[Position]


#: What the card writer is asked for (no $refs: grammar-constrained local models read it too).
CARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "crux": {"type": "string"},
        "type": {"type": "string", "enum": [t.value for t in DisagreementType]},
        "diagnosis": {"type": "string"},
        "diagnosis_cites": {"type": "array", "items": {"type": "string"}},
        "resolved": {"type": "boolean"},
        "resolution": {"type": "string"},
        "positions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "persona": {"type": "string"},
                    "stance": {"type": "string", "enum": [s.value for s in Stance]},
                    "reasoning": {"type": "string"},
                    "falsifier": {"type": "string"},
                    "cites": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["persona", "stance", "reasoning", "falsifier", "cites"],
            },
        },
    },
    "required": [
        "crux",
        "type",
        "diagnosis",
        "diagnosis_cites",
        "resolved",
        "resolution",
        "positions",
    ],
}


def card_schema(pair: list[str], ids: list[str]) -> dict[str, Any]:
    """:data:`CARD_SCHEMA` for one room: positions for exactly its pair, citations among the
    ids shown (which of them each position may cite is checked after, with reasons)."""
    schema = copy.deepcopy(CARD_SCHEMA)
    cited = {"type": "array", "items": {"type": "string", "enum": list(ids)}, "minItems": 1}
    props = schema["properties"]
    props["diagnosis_cites"] = cited
    positions = props["positions"]
    positions["minItems"] = positions["maxItems"] = len(pair)
    positions["items"]["properties"]["persona"] = {"type": "string", "enum": list(pair)}
    positions["items"]["properties"]["cites"] = cited
    return schema


class CardProblem(ValueError):
    """Why a card cannot be accepted: every reason, in one sentence each."""

    def __init__(self, reasons: list[str]):
        self.reasons = reasons
        super().__init__("; ".join(reasons))


def validate_card(
    data: Any,
    pair: tuple[str, str],
    authors: dict[str, str],
    names: dict[str, str],
    *,
    question: str = "",
    texts: dict[str, str] | None = None,
    supports: Supports | None = None,
) -> CruxCard:
    """``data`` as a :class:`CruxCard` about ``pair``, every citation checked against
    ``authors`` (message id -> the persona who said it) and, given the room's ``question`` and
    the messages' ``texts``, against what it says: by the clause reading, and where a learned
    check is given (``supports``: message, question, cited for YES -> its verdict) by that too,
    a citation standing if either reads it on the side it is cited for; :class:`CardProblem`
    otherwise."""
    try:
        card = CruxCard.model_validate(data)
    except ValidationError as err:
        raise CardProblem([_pydantic_reason(e) for e in err.errors(include_url=False)]) from None
    reasons: list[str] = []
    words = card.crux.split()
    if not 3 <= len(words) <= 5:
        reasons.append(f"the crux {card.crux!r} has {len(words)} words; use a 3-5 word noun phrase")
    elif card.crux.rstrip()[-1:] in ".?!":
        reasons.append(f"the crux {card.crux!r} is a sentence; use a noun phrase")
    if len(sentences(card.diagnosis)) > 2:
        reasons.append("the diagnosis is longer than 2 sentences")
    if card.resolved and not card.resolution.strip():
        reasons.append("a resolved card must say what the resolution was")
    reasons += _cites("the diagnosis", card.diagnosis_cites, set(pair), authors, names)
    seen = [p.persona for p in card.positions]
    for persona in pair:
        if seen.count(persona) != 1:
            got = "none" if persona not in seen else f"{seen.count(persona)}"
            reasons.append(f"give exactly one position for {persona} (got {got})")
    for position in card.positions:
        if position.persona not in pair:
            reasons.append(
                f"{position.persona!r} is not in this room; positions are for {' and '.join(pair)}"
            )
            continue
        reasons += _cites(
            f"{position.persona}'s position", position.cites, {position.persona}, authors, names
        )
        if question and texts is not None:
            reasons += _sides(position, question, texts, supports)
    if reasons:
        raise CardProblem(reasons)
    return card


def _cites(
    what: str, cites: list[str], speakers: set[str], authors: dict[str, str], names: dict[str, str]
) -> list[str]:
    if not cites:
        return [f"{what} cites no message; cite the ids it rests on"]
    reasons = []
    for cited in cites:
        author = authors.get(cited)
        if author is None:
            reasons.append(f"{what} cites {cited}, which is not a message of this debate")
        elif author not in speakers:
            whose = " or ".join(sorted(names.get(s, s) for s in speakers))
            reasons.append(
                f"{what} cites {cited}, which {names.get(author, author)} said, not {whose}"
            )
    return reasons


_WANTED = {Stance.YES: Side.FOR, Stance.NO: Side.AGAINST}


def _sides(
    position: Position, question: str, texts: dict[str, str], supports: Supports | None = None
) -> list[str]:
    """Each message a YES or NO cites must take that side of the question: by the clause
    reading, or by the learned check where there is one. Why either: the clause reading
    matches words and misses a side taken in other words; the learned check reads meaning and
    errs the other way (docs/validity.md has both measured), so a citation is refused only
    when neither reads it on its side."""
    wanted = _WANTED.get(position.stance)
    if wanted is None:
        return []
    reasons = []
    for cited in position.cites:
        text = texts.get(cited)
        if text is None:
            continue  # not a message of this debate: said by _cites
        found = side(text, question)
        if found == wanted:
            continue
        verdict = supports(text, question, position.stance is Stance.YES) if supports else None
        if verdict is not None and verdict.positive:
            continue
        says = "says the opposite" if found != Side.NEITHER else "takes no side on it"
        if verdict is not None:
            says = (
                f"{says} and reads as not taking that side (the learned check: "
                f"{verdict.probability:.2f}, below its {verdict.threshold:.2f}"
                f"{'; uncertain' if verdict.uncertain else ''})"
            )
        reasons.append(
            f"{position.persona}'s {position.stance.value} cites {cited}, which {says} "
            f"(the question: {question!r})"
        )
    return reasons


def uncertain_citations(
    card: CruxCard, question: str, texts: dict[str, str], supports: Supports
) -> dict[str, float]:
    """The citations of a valid card that stand on the learned check alone, with a probability
    near its threshold (message id -> that probability): a reader should check those first."""
    found: dict[str, float] = {}
    for position in card.positions:
        wanted = _WANTED.get(position.stance)
        if wanted is None:
            continue
        for cited in position.cites:
            text = texts.get(cited)
            if text is None or side(text, question) == wanted:
                continue
            verdict = supports(text, question, position.stance is Stance.YES)
            if verdict.positive and verdict.uncertain:
                found[cited] = verdict.probability
    return found


def _pydantic_reason(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "the card"
    message = error["msg"]
    if error["type"] == "missing":
        message = "is missing"
    return f"{where}: {message[0].lower() + message[1:]}" if message else where


# ─── what cards.json holds ──────────────────────────────────────────────────


class CardRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # card-1, card-2 ...
    room: str
    pair: list[str]
    question: str
    card: dict[str, Any]  # a validated CruxCard, as data
    attempts: int
    reading: str | None = None  # how its JSON was read (truncation: it was cut off, repaired)
    usage: Usage = msgspec.field(default_factory=Usage)
    # cited message id -> the learned check's probability, for a citation that stands on that
    # check alone near its threshold (MiniLM runs): read those first
    uncertain: dict[str, float] = msgspec.field(default_factory=dict)
    # the learned crux-type check's reading of the room (MiniLM runs): type, probability,
    # uncertain; shown beside the type the card's writer gave
    type_reading: dict[str, Any] | None = None


class RejectedCard(msgspec.Struct, frozen=True, kw_only=True):
    room: str
    pair: list[str]
    question: str
    problems: list[str]  # why each attempt was refused
    raw: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)


class CardFile(msgspec.Struct, kw_only=True):
    cards: list[CardRecord] = msgspec.field(default_factory=list)
    rejected: list[RejectedCard] = msgspec.field(default_factory=list)

    def closed_rooms(self) -> set[str]:
        return {c.room for c in self.cards} | {r.room for r in self.rejected}
