"""What kind of disagreement a crux room surfaced, read from the cues its messages use.

The six types (:class:`~loom_sim.debate.cards.DisagreementType`) each have a way of being
argued that shows in ordinary English whatever the topic: a **horizon** dispute talks in spans
of time ("over twenty years", "next winter", "in the long run"), an **evidence** dispute about
where figures come from ("the survey", "measured", "a sample of forty"), a **values** dispute
about what matters ("fairness", "we owe", "comes first"), a **definition** dispute about words
("counts as", "what we mean by"), a **premise** dispute about what is assumed ("that assumes",
"hinges on"). A room whose messages lean on none of them, or on two equally, disputes a
**claim**. The cues are general English, not any deck's vocabulary; how often they are right
on rooms nobody wrote them for is measured on ``tests/data/validity/debate_crux_type.jsonl``
by ``benchmarks/validity_debate.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

CUES: dict[str, re.Pattern[str]] = {
    "horizon": re.compile(
        r"\b(?:\d+|two|three|four|five|six|ten|twenty|thirty|fifty|a hundred|a few)\s+"
        r"(?:years?|decades?|months?|weeks?|generations?|seasons?)\b"
        r"|\b(?:decades?|centur(?:y|ies)|generations?|lifetimes?|long[- ](?:run|term|haul)"
        r"|short[- ](?:run|term)|near[- ]term|horizon|payback|pays? back|eventually|someday"
        r"|sooner|later on|years? (?:ahead|from now)|next (?:year|decade|season|winter|summer"
        r"|spring|autumn|budget|quarter)|this (?:year|season|quarter|winter|summer)|for now"
        r"|right now|tomorrow|the future|grandchildren|over time|quarterly|upfront|up front"
        r"|in the (?:end|long run|meantime))\b",
        re.I,
    ),
    "evidence": re.compile(
        r"\b(?:data|dataset|stud(?:y|ies)|surveys?|surveyed|figures?|statistics?|measured"
        r"|measurements?|readings?|records?|logs?|gauges?|sensors?|samples?|sampled|audit(?:ed|s)?"
        r"|reports?|counted|census|trials?|experiments?|evidence|sources?|proof|per ?cent"
        r"|baseline|methodology|cherry-?pick(?:ed)?|anecdot(?:e|es|al)|observations?|footage"
        r"|spreadsheets?|estimates?|models?|modelled|modeled|tallies|tally)\b|%",
        re.I,
    ),
    "values": re.compile(
        r"\b(?:fair|fairness|unfair|justice|unjust|dut(?:y|ies)|owe[sd]?|deserves?|deserved"
        r"|dignity|respect|moral(?:ly)?|ethic(?:s|al)|principles?|priorit(?:y|ies|ise|ize)"
        r"|matters? (?:more|most)|worth more|comes? first|right to|obligations?|ought|care about"
        r"|decen(?:t|cy)|compassion|selfish|equality|freedom|liberty|values?)\b",
        re.I,
    ),
    "definition": re.compile(
        r"\b(?:means|meaning|mean by|defin(?:e|es|ed|ition|itions)|counts? as|qualif(?:y|ies)"
        r" as|what (?:we|you) call|calls? it|called|the word|the term|by that (?:standard|measure"
        r"|term)|strictly speaking|in the sense|label(?:led|s)?|technically|categor(?:y|ies)"
        r"|classif(?:y|ied|ication)|so-called)\b",
        re.I,
    ),
    "premise": re.compile(
        r"\b(?:assum(?:e|es|ed|ing|ption|ptions)|premises?|presuppos\w*|takes? for granted"
        r"|taken for granted|hinges? on|rests? on|relies? on the idea|only (?:works|holds) if"
        r"|supposes?|presumes?|presumption|given that|that requires|starting point)\b",
        re.I,
    ),
}


def cue_counts(texts: Sequence[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for text in texts:
        for kind, pattern in CUES.items():
            counts[kind] += len(pattern.findall(text))
    return counts


def crux_type(texts: Sequence[str]) -> str:
    """The type whose cues the texts use most; ``claim`` when none is used, or two tie."""
    ranked = [(k, n) for k, n in cue_counts(texts).most_common() if n]
    if not ranked or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return "claim"
    return ranked[0][0]
