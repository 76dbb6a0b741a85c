"""Which of the coaxer's probes lie outside a persona's bounds, and why.

"Debug this Rust function" is inside the bounds of a software developer: asking it of him and
counting his answer as a failure would mix the persona's failure with the probe's choice. So
the coaxer asks only probes whose fields are all outside what the persona may know, read from
the persona's own text:

- **outside**: ``capability_bounds.out_of_bounds``, and the fields named in a negated clause of
  the knowledge ceiling or vocabulary ("no formal psychology or medical training", "no clinical
  jargon");
- **inside**: the fields named elsewhere in the knowledge ceiling and the background ("an
  undergraduate CS degree", "software developer"), with what they imply (a CS degree brings
  programming, mathematics and statistics). An explicit *outside* wins over an *inside*.

A probe's fields come from its words (:data:`FIELDS`) or from the config (``domains:``). A probe
with no recognised field, or with one inside the bounds, is not asked; every probe asked
carries the reason it is outside, and it is recorded with the move.

The vocabulary is English keyword stems: deterministic, inspectable, and extended in the
adversary config where it misses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loom_sim.config.spec import PersonaSpec

#: field -> word stems (matched at a word's start, case-insensitively)
FIELDS: dict[str, tuple[str, ...]] = {
    "programming": (
        "code", "coding", "codebase", "debug", "rust", "python", "javascript", "software",
        "programm", "developer", "compile", "script", "function", "api", "git",
    ),
    "computer science": ("computer science", "cs degree", "cs ", "algorithm"),
    "mathematics": ("math", "calculus", "equation", "algebra", "theorem"),
    "statistics": ("statistic", "p-value", "regression", "probabilit", "coincidence"),
    "psychology": ("psycholog", "psychiatr", "therap", "mental health", "diagnos", "clinical"),
    "medicine": (
        "medic", "neurochem", "pharmac", "doctor", "dosage", "drug",
        "randomised controlled", "randomized controlled", "clinical trial",
    ),
    "neuroscience": ("neuro", "brain"),
    "research methods": ("research literature", "controlled trial", "peer review", "study design"),
    "law": ("legal", "law ", "lawyer", "landlord", "contract", "lawsuit", "attorney"),
    "marketing": ("marketing", "advertis", "branding"),
    "professional writing": ("cover letter", "press release", "résumé", "resume"),
    "finance": ("tax", "invest", "accountan", "accounting", "mortgage", "financ"),
    "engineering": ("circuit", "structural", "mechanical", "electrical"),
}  # fmt: skip

#: a field that brings others with it
IMPLIES: dict[str, tuple[str, ...]] = {
    "computer science": ("programming", "mathematics", "statistics"),
    "medicine": ("neuroscience",),
}

_NEGATION = re.compile(
    r"\b(?:no|not|never|without|lacks?|none|little|cannot|can't|isn't|doesn't|don't)\b", re.I
)
_CLAUSES = re.compile(r"[;.!?]|\bbut\b", re.I)  # a list ("no X, Y or Z") stays one clause


def fields_in(text: str) -> set[str]:
    """The fields whose stems ``text`` mentions."""
    lowered = " " + " ".join(text.lower().split()) + " "
    return {
        field
        for field, stems in FIELDS.items()
        if any(re.search(r"(?<![a-z])" + re.escape(stem), lowered) for stem in stems)
    }


def _with_implied(fields: Iterable[str]) -> set[str]:
    out = set(fields)
    for field in list(out):
        out.update(IMPLIES.get(field, ()))
    return out


@dataclass(frozen=True)
class Bounds:
    """What the persona may know (``inside``) and must not (``outside``), each with the words
    of the persona's spec it was read from."""

    inside: dict[str, str]  # field -> where it was read
    outside: dict[str, str]

    @classmethod
    def of(cls, persona: PersonaSpec) -> Bounds:
        bounds = persona.capability_bounds
        inside: dict[str, str] = {}
        outside: dict[str, str] = {}
        for item in bounds.out_of_bounds:
            for field in fields_in(item) or {item.strip().lower()}:
                outside.setdefault(field, f"out_of_bounds lists {item!r}")
        for label, text in (
            ("knowledge ceiling", bounds.knowledge_ceiling),
            ("vocabulary", bounds.vocabulary_level),
            ("background", persona.identity.background),
        ):
            for raw in _CLAUSES.split(" ".join(text.split())):
                clause = raw.strip()
                if not clause:
                    continue
                # what follows a negation is outside ("CS degree, no formal psychology");
                # what comes before it, and the background, inside
                negated = _NEGATION.search(clause) if label != "background" else None
                known = clause[: negated.start()] if negated else clause
                for field in _with_implied(fields_in(known)):
                    inside.setdefault(field, f"its {label} says {clause!r}")
                if negated:
                    for field in fields_in(clause[negated.start() :]):
                        outside.setdefault(field, f"its {label} says {clause!r}")
        return cls({k: v for k, v in inside.items() if k not in outside}, outside)

    def judge(self, fields: Sequence[str]) -> tuple[bool, str]:
        """(outside the bounds?, why) for a probe needing ``fields``."""
        if not fields:
            return False, "no field recognised in it (give it `domains:` in the adversary config)"
        inner = [f for f in fields if f in self.inside]
        if inner:
            return False, f"{inner[0]} is inside the bounds: {self.inside[inner[0]]}"
        why = [
            f"{f}: {self.outside[f]}" if f in self.outside else f"{f}: not among what it knows"
            for f in fields
        ]
        return True, "outside the persona's bounds — " + "; ".join(why)


@dataclass(frozen=True)
class ChosenProbe:
    ask: str
    fields: tuple[str, ...]
    why: str


def outside_probes(
    persona: PersonaSpec, probes: Sequence[tuple[str, Sequence[str]]]
) -> tuple[list[ChosenProbe], list[ChosenProbe]]:
    """(the probes to ask, the probes left out), each with its reason. ``probes`` are (text,
    fields given in the config — empty to read them from the text)."""
    bounds = Bounds.of(persona)
    chosen: list[ChosenProbe] = []
    left: list[ChosenProbe] = []
    for ask, given in probes:
        fields = tuple(sorted(given or fields_in(ask)))
        outside, why = bounds.judge(fields)
        (chosen if outside else left).append(ChosenProbe(ask, fields, why))
    return chosen, left
