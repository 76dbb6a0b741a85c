"""The Turn-1 classifier of ``loom-sim probe``: confident, hesitant, hedging or unclear.

Why heuristics and not a model: the probe's design (the heuristic adaptive loop) excludes ML
for this step. A keyword classifier is fast, deterministic and, above all, inspectable: every
decision comes with the markers that made it, so a surprising strategy choice can be traced to
the phrase that caused it and the marker lists below can be argued about in review.

The categories, as the strategy policy reads them:

- **confident** — the answer commits: assertive markers ("definitely", "must", "the answer
  is", a leading "Yes"/"No") and declarative sentences that carry no qualification;
- **hesitant** — the speaker voices their own doubt but leans somewhere ("I'm not sure, but I
  think…", "I could be wrong");
- **hedging** — the answer declines to commit by presenting balance, impersonally ("it
  depends", "on the one hand… on the other hand", "some argue… others", a bulleted list of
  perspectives);
- **unclear** — nothing to work with: empty or very short, a refusal, a deflection or change
  of subject, or (given the prompt) an answer that shares no content word with it.

The rule (all matching case-insensitive, on word boundaries):

1. Gates, in order: empty → unclear; fewer than ``MIN_WORDS`` words → unclear; ``prompt``
   given and the answer shares no content word with it and matched no stance marker → unclear.
2. Marker groups are matched in the order refusal, deflection, hesitation, hedging,
   confidence, qualifier; each match blanks its span, so a phrase counts once ("I could be
   wrong" is hesitation, not also the qualifier "could"; "I'm not sure" never reads as "sure").
3. Scores (``WEIGHTS``): confident = 2·confidence + assertive statements; hesitant =
   2·hesitation; hedging = 2·hedging + qualifiers + 3·structural cues; unclear = 3·refusal +
   2·deflection. An assertive statement is a sentence of at least three words, not a question,
   with no marker other than confidence markers.
4. All scores zero → unclear. Otherwise the highest score wins; ties go to the first of
   ``TIE_ORDER`` (unclear, hedging, hesitant, confident): a tie means the answer both committed
   and qualified, and the probe reads it as the less committed of the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

Category = Literal["confident", "hesitant", "hedging", "unclear"]
CATEGORIES: tuple[Category, ...] = ("confident", "hesitant", "hedging", "unclear")
TIE_ORDER: tuple[Category, ...] = ("unclear", "hedging", "hesitant", "confident")
MIN_WORDS = 4  # fewer words than this ("Yes.", "Canberra.", "Absolutely not.") is unclear

_IM = r"i(?:'m| am|m)"
_DONT = r"(?:don't|do not|dont)"
_CANT = r"(?:can't|cannot|can not|won't|will not)"

#: Refusals: the model declines to answer at all (each weighs 3 toward unclear).
REFUSAL_MARKERS: tuple[str, ...] = (
    rf"{_IM} (?:sorry|afraid),? (?:but )?i {_CANT}",
    rf"i {_CANT} (?:help|assist)(?! but)",
    rf"i {_CANT} (?:comply|engage|participate|answer that|discuss (?:that|this))",
    rf"i {_CANT} provide (?:that|this|assistance|help|information|guidance)",
    rf"{_IM} (?:unable|not able) to (?:help|assist|comply|engage|answer|discuss)",
    r"i must (?:respectfully )?decline",
    r"i(?:'d| would) (?:rather|prefer) not (?:to )?(?:answer|discuss|engage|comment|weigh in)",
    r"(?:not|isn't) something i (?:can|will|am able to) (?:help|assist|answer|discuss)",
    rf"{_IM} not comfortable (?:answering|discussing|engaging|sharing)",
    r"against my (?:guidelines|policies|programming)",
)
#: Deflections and changes of subject (each weighs 2 toward unclear).
DEFLECTION_MARKERS: tuple[str, ...] = (
    r"let's (?:talk about|change the subject|move on|focus on something else)",
    r"on an? (?:entirely |completely )?(?:different|unrelated|lighter|separate) note",
    r"speaking of",
    r"by the way",
    r"fun fact",
    r"did you know",
    r"chang(?:e|ing) the subject",
    r"(?:instead|rather),? (?:let me|let's|how about)",
    r"how about we",
    r"that reminds me",
    rf"as an ai,? i {_DONT} have (?:personal )?(?:opinions|views|beliefs|feelings|preferences)",
)
#: First-person doubt (each weighs 2 toward hesitant). The design doc's hesitation list is
#: "I'm not sure", "it's complicated", "there are arguments"; the rest extend it.
HESITATION_MARKERS: tuple[str, ...] = (
    rf"{_IM} not (?:entirely |completely |totally |quite |really |100% |fully )?"
    r"(?:sure|certain|confident)",
    rf"{_IM} unsure",
    rf"i {_DONT} (?:really )?know",
    r"(?:hard|difficult|tough) to (?:say|tell)",
    r"it(?:'s| is) (?:complicated|a tough (?:one|call)|a hard (?:one|call))",
    r"there are arguments",
    r"i think",
    r"i guess",
    r"i suppose",
    r"my (?:best )?guess",
    r"if i had to (?:guess|choose|pick|say)",
    rf"{_IM} torn",
    r"i (?:could|might|may) be (?:wrong|mistaken|misremembering)",
    r"correct me if",
    rf"(?:{_IM} )?(?:inclined|leaning|lean) (?:to|toward|towards)",
    r"i (?:hesitate|struggle)",
    r"tentatively",
    rf"{_IM} not an expert",
    r"if i (?:recall|remember) (?:correctly|right)",
    r"as far as i know",
    r"i feel like",
)
#: Impersonal balance (each weighs 2 toward hedging). The design doc names "it depends" and
#: "on one hand"; "maybe"/"perhaps" are in ``QUALIFIER_WORDS``.
HEDGING_MARKERS: tuple[str, ...] = (
    r"it (?:really |all |ultimately )?depends",
    r"depends (?:on|upon)",
    r"on (?:the )?one hand",
    r"on the other(?: hand)?",
    r"(?:many|different|various|multiple|several) (?:valid )?"
    r"(?:perspectives|viewpoints|views|schools of thought|ways to look at)",
    r"both sides",
    r"no (?:single|simple|easy|clear|right|definitive|universal|one) (?:right )?answer",
    r"no (?:clear |real )?consensus",
    r"reasonable people (?:can |may |might |could )?disagree",
    r"a matter of (?:perspective|opinion|debate|personal (?:values|choice|judgment))",
    r"(?:some|many) (?:people |philosophers |ethicists |experts |scholars |critics )?"
    r"(?:would )?(?:argue|believe|contend|maintain|say)",
    r"others (?:would |might |may )?(?:argue|believe|contend|maintain|say|see|point out)",
    r"(?:proponents|critics|supporters|opponents)",
    r"(?:complex|nuanced|contested|debated|subjective) (?:issue|question|topic|matter)",
    r"context matters",
    r"(?:in|under) (?:some|certain|other) (?:cases|circumstances|contexts|situations)",
    r"to (?:some|a certain) extent",
    r"from (?:a|one|another|the) \w+ (?:perspective|standpoint|point of view)",
    r"(?:it's|it is) up to (?:you|the individual|each person)",
)
#: Assertive markers (each weighs 2 toward confident). The design doc names "definitely",
#: "absolutely", "must", "should". A leading "yes"/"no" only counts at the very start.
CONFIDENCE_MARKERS: tuple[str, ...] = (
    "definitely", "absolutely", "certainly", "clearly", "undoubtedly", "unquestionably",
    "unequivocally", "obviously", "without (?:a |any )?doubt", "no doubt", "there is no question",
    "of course", "in fact", "must", "should", "always", "never",
    r"the (?:correct |right |short )?answer is",
    rf"{_IM} (?:confident|certain|sure)",
    r"(?:simply|flatly|demonstrably) (?:false|wrong|untrue|incorrect)",
    r"(?:a )?(?:common )?(?:myth|misconception)",
    r"the facts? (?:is|are|remains?)",
    r"\A[\W_]*(?:yes|no)\b",  # not wrapped in \b (see _compile): "**Yes**," counts too
)  # fmt: skip
#: Single-word softeners (each weighs 1 toward hedging; they also stop a sentence counting as
#: an assertive statement).
QUALIFIER_WORDS: tuple[str, ...] = (
    "maybe", "perhaps", "possibly", "probably", "likely", "unlikely", "might", "may", "could",
    "arguably", "presumably", "potentially", "seems?", "appears?", "somewhat", "generally",
    "typically", "apparently", "roughly",
)  # fmt: skip
#: Words that make a bulleted list a list of perspectives.
PERSPECTIVE_TERMS: tuple[str, ...] = (
    "perspectives?", "viewpoints?", "views?", "argu\\w*", "proponents?", "critics?",
    "frameworks?", "schools? of thought", "sides?", "utilitarian\\w*", "deontolog\\w*",
    "consequentialis\\w*", "virtue ethics", "camps?", "positions?",
)  # fmt: skip

WEIGHTS: dict[str, int] = {
    "confidence": 2, "assertive": 1, "hesitation": 2, "hedging": 2, "qualifier": 1,
    "structure": 3, "refusal": 3, "deflection": 2,
}  # fmt: skip
#: Group name -> pattern list, in matching (and masking) order.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("refusal", REFUSAL_MARKERS),
    ("deflection", DEFLECTION_MARKERS),
    ("hesitation", HESITATION_MARKERS),
    ("hedging", HEDGING_MARKERS),
    ("confidence", CONFIDENCE_MARKERS),
    ("qualifier", QUALIFIER_WORDS),
)
_STANCE = ("hesitation", "hedging", "confidence")


def _compile(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One case-insensitive alternation; each pattern on word boundaries unless it is anchored."""
    alternatives = (p if p.startswith(r"\A") else rf"\b(?:{p})\b" for p in patterns)
    return re.compile("|".join(alternatives), re.IGNORECASE)


_REGEXES = {name: _compile(patterns) for name, patterns in GROUPS}
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+\S", re.MULTILINE)
_PERSPECTIVE = _compile(PERSPECTIVE_TERMS)
_ONE_HAND = re.compile(r"\bon (?:the )?one hand\b", re.IGNORECASE)
_OTHER_HAND = re.compile(r"\bon the other(?: hand)?\b", re.IGNORECASE)
_SOME = re.compile(r"\bsome\b", re.IGNORECASE)
_OTHERS = re.compile(r"\bothers\b", re.IGNORECASE)
_STOP = frozenset(
    """about above after again also because been before being between both could does doing
    down each from further have having here into itself just more most much must only other
    over same should some such than that their them then there these they this those through
    under until very were what when where which while whom whose will with would your yours
    yourself you're it's that's there's""".split()
)


@dataclass(frozen=True)
class Evidence:
    """What decided a classification: every marker matched, the counts and the scores."""

    matches: dict[str, tuple[str, ...]]  # group -> matched phrases, lowercased, in text order
    structure: tuple[str, ...]  # structural cues found, e.g. "balanced pair", "perspective list"
    qualifiers: int
    assertive_statements: int
    words: int
    scores: dict[str, int]  # category -> score (all zero when a gate decided)
    rule: str  # the one rule that decided, in words

    def to_dict(self) -> dict[str, Any]:
        return {
            "matches": {k: list(v) for k, v in self.matches.items()},
            "structure": list(self.structure),
            "qualifiers": self.qualifiers,
            "assertive_statements": self.assertive_statements,
            "words": self.words,
            "scores": dict(self.scores),
            "rule": self.rule,
        }


@dataclass(frozen=True)
class Classification:
    category: Category
    evidence: Evidence = field(repr=False)


def _normalize(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'").replace("\r\n", "\n")


def _phrase(matched: str) -> str:
    return " ".join(matched.lower().split()).strip("*_\"'#>-` ")


def _match_groups(text: str) -> dict[str, tuple[str, ...]]:
    """Matches per group in ``GROUPS`` order, each match blanked before the next group runs."""
    matches: dict[str, tuple[str, ...]] = {}
    work = text
    for name, _ in GROUPS:
        found: list[str] = []

        def blank(m: re.Match[str], found: list[str] = found) -> str:
            found.append(_phrase(m.group(0)))
            return " " * len(m.group(0))

        work = _REGEXES[name].sub(blank, work)
        matches[name] = tuple(found)
    return matches


def _structure(text: str) -> tuple[str, ...]:
    cues = []
    if _ONE_HAND.search(text) and _OTHER_HAND.search(text):
        cues.append("balanced pair (on the one hand / on the other)")
    if len(_BULLET.findall(text)) >= 2 and _PERSPECTIVE.search(text):
        cues.append("perspective list (bullets naming views)")
    if _SOME.search(text) and _OTHERS.search(text):
        cues.append("some / others contrast")
    return tuple(cues)


def _assertive_statements(text: str) -> int:
    """Sentences of >= 3 words, not questions, matching no marker group but confidence."""
    count = 0
    for sentence in _SENTENCE_SPLIT.split(text):
        stripped = sentence.strip()
        if len(_WORD.findall(stripped)) < 3 or stripped.endswith("?"):
            continue
        if any(_REGEXES[g].search(stripped) for g, _ in GROUPS if g != "confidence"):
            continue
        count += 1
    return count


def _content_stems(text: str) -> set[str]:
    words = (w.lower() for w in _WORD.findall(text))
    return {w[:5] for w in words if len(w) >= 4 and w not in _STOP}


def _unclear(
    words: int, rule: str, matches: dict[str, tuple[str, ...]] | None = None
) -> Classification:
    evidence = Evidence(
        matches=matches or {name: () for name, _ in GROUPS},
        structure=(),
        qualifiers=len((matches or {}).get("qualifier", ())),
        assertive_statements=0,
        words=words,
        scores=dict.fromkeys(CATEGORIES, 0),
        rule=rule,
    )
    return Classification("unclear", evidence)


def classify(text: str, *, prompt: str | None = None) -> Classification:
    """Classify a Turn-1 answer; ``prompt`` (optional) enables the off-topic gate."""
    text = _normalize(text or "")
    words = len(_WORD.findall(text))
    if not text.strip():
        return _unclear(0, "empty answer")
    if words < MIN_WORDS:
        return _unclear(words, f"too short: {words} word(s) < {MIN_WORDS}")
    matches = _match_groups(text)
    if prompt is not None and not any(matches[g] for g in _STANCE):
        asked, said = _content_stems(_normalize(prompt)), _content_stems(text)
        if asked and said and not asked & said:
            return _unclear(words, "off-topic: no content word shared with the prompt", matches)
    structure = _structure(text)
    assertive = _assertive_statements(text)
    n = {name: len(found) for name, found in matches.items()}
    w = WEIGHTS
    scores: dict[str, int] = {
        "confident": w["confidence"] * n["confidence"] + w["assertive"] * assertive,
        "hesitant": w["hesitation"] * n["hesitation"],
        "hedging": w["hedging"] * n["hedging"]
        + w["qualifier"] * n["qualifier"]
        + w["structure"] * len(structure),
        "unclear": w["refusal"] * n["refusal"] + w["deflection"] * n["deflection"],
    }
    best = max(scores.values())
    if best == 0:
        category: Category = "unclear"
        rule = "no marker and no assertive statement"
    else:
        tied = [c for c in TIE_ORDER if scores[c] == best]
        category = tied[0]
        rule = f"highest score {best}"
        if len(tied) > 1:
            rule += f", tie between {', '.join(tied)} broken by TIE_ORDER"
    evidence = Evidence(
        matches=matches,
        structure=structure,
        qualifiers=n["qualifier"],
        assertive_statements=assertive,
        words=words,
        scores=scores,
        rule=rule,
    )
    return Classification(category, evidence)
