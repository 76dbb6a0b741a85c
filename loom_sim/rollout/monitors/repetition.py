"""The repetition guard: banned phrases and formulaic turn shapes in persona candidates.

The repetition monitor (:mod:`loom_sim.rollout.monitors.builtin.repetition`) runs it on every
candidate before the interlocutor sees it (the ``act`` state's guard), so a rejected draft
costs one persona call and nothing else. Structural patterns only fire when a shape repeats
over ``structural_window`` turns: one question back is conversation, the same question-ending
every turn is a formula.

The same check runs post hoc over finished conversations (:func:`formulaic_turns`), so an
imported transcript, or a run whose config named no patterns, is checked too: the naturalness
scorer and ``loom-sim signals`` report the turns it flags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from loom_sim.config.spec import BannedPattern, RepetitionDetectionSpec, StructuralPattern
from loom_sim.rollout.monitors.base import Finding

_GRATITUDE = re.compile(
    r"\b(thank(s| you)|i (really )?appreciate|grateful|appreciate (it|that|you))\b", re.IGNORECASE
)
_CLOSERS = " \t\r\n\"'”’)]*_"  # what may follow a final question mark


#: What the post-hoc check looks for when a config names no pattern: the formulae
#: seen in practice (GPT-4o's patient ending all ten turns with "Have you ever felt...?").
DEFAULT_FORMULAE = RepetitionDetectionSpec(
    banned_patterns=[
        BannedPattern(substring=text)
        for text in (
            "Have you ever felt",
            "I appreciate that, but",
            "I hear you, and",
            "That's a great question",
        )
    ],
    structural_patterns=[StructuralPattern.ENDS_WITH_QUESTION, StructuralPattern.GRATITUDE_LOOP],
)


def post_hoc_spec(spec: RepetitionDetectionSpec | None) -> RepetitionDetectionSpec:
    """The patterns a finished conversation is checked for: the config's when it names any
    (whether or not the runtime guard was on), else :data:`DEFAULT_FORMULAE`."""
    if spec is None or not (spec.banned_patterns or spec.structural_patterns):
        return DEFAULT_FORMULAE
    return spec if spec.enabled else spec.model_copy(update={"enabled": True})


def formulaic_turns(messages: Sequence[str], spec: RepetitionDetectionSpec) -> list[list[Finding]]:
    """The guard's findings for each message given the ones before it, as if it had run live
    (a structural pattern flags the message that completes a run of ``structural_window``)."""
    guard = RepetitionGuard(spec)
    return [guard.check(message, messages[:index]) for index, message in enumerate(messages)]


def ends_with_question(text: str) -> bool:
    return text.rstrip(_CLOSERS).endswith("?")


def expresses_gratitude(text: str) -> bool:
    return _GRATITUDE.search(text) is not None


class RepetitionGuard:
    def __init__(self, spec: RepetitionDetectionSpec):
        self.spec = spec
        self._substrings = [
            (p.substring, p.substring.lower()) for p in spec.banned_patterns if p.substring
        ]
        self._regexes = [(p.regex, re.compile(p.regex)) for p in spec.banned_patterns if p.regex]

    def check(self, candidate: str, previous: Sequence[str]) -> list[Finding]:
        """What is wrong with ``candidate`` given the persona's ``previous`` committed messages."""
        findings: list[Finding] = []
        if not self.spec.enabled:
            return findings
        lowered = candidate.lower()
        for original, needle in self._substrings:
            if needle in lowered:
                findings.append(Finding(f"banned:{original}", f'contains "{original}"'))
        for original, regex in self._regexes:
            match = regex.search(candidate)
            if match:
                findings.append(
                    Finding(f"regex:{original}", f'matches /{original}/: "{match.group(0)}"')
                )
        window = self.spec.structural_window
        recent = list(previous[-(window - 1) :]) if window > 1 else []
        if len(recent) == window - 1:
            for pattern in self.spec.structural_patterns:
                if pattern is StructuralPattern.ENDS_WITH_QUESTION:
                    if ends_with_question(candidate) and all(ends_with_question(m) for m in recent):
                        findings.append(
                            Finding(
                                pattern.value, f"the last {window} messages all end with a question"
                            )
                        )
                elif pattern is StructuralPattern.GRATITUDE_LOOP:
                    if expresses_gratitude(candidate) and all(
                        expresses_gratitude(m) for m in recent
                    ):
                        findings.append(
                            Finding(
                                pattern.value, f"the last {window} messages all thank or appreciate"
                            )
                        )
        return findings


def formulaic_instruction(findings: Sequence[Finding]) -> str:
    """The re-prompt after a formulaic draft: what to avoid, concretely."""
    avoid = []
    for finding in findings:
        if finding.pattern.startswith(("banned:", "regex:")):
            avoid.append(f"do not write anything that {finding.detail}")
        elif finding.pattern == StructuralPattern.ENDS_WITH_QUESTION.value:
            avoid.append("do not end with a question to the other person")
        elif finding.pattern == StructuralPattern.GRATITUDE_LOOP.value:
            avoid.append("do not thank them or say you appreciate them")
    return (
        "[Your draft was rejected as formulaic. Write a different message, in character, "
        "varying how you start and end it: " + "; ".join(avoid) + ".]"
    )
