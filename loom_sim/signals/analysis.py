"""Post-hoc signals of a finished conversation: loops, novelty, initiative, convergence.

The loop and convergence numbers come from replaying the runtime monitor
(:class:`~loom_sim.signals.stagnation.StagnationMonitor`) over the transcript turn by turn, so
a score and a runtime trigger can never disagree about what a window measured. The rest are
cheap, inspectable counts:

- **novelty** — the share of a persona message's content words that nobody had used before in
  the conversation (lexical), and 1 minus its highest similarity to any earlier persona
  message (semantic);
- **initiative** — questions the persona asks, redirects it makes ("but", "look", "that's
  not..."), and topics it introduces (content words it says first), against the topics the
  interlocutor introduces;
- **loop spans** — runs of turns whose window similarity stays above the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from loom_sim.config.spec import StagnationDetectionSpec
from loom_sim.signals.embedding import Backend
from loom_sim.signals.similarity import max_to_earlier, slope
from loom_sim.signals.stagnation import StagnationMonitor

_WORD = re.compile(r"[a-z][a-z'’-]+")
_STOP = frozenset(
    """about above after again against all also among and any are aren't because been before
    being below between both but can cannot could did didn't does doesn't doing don't down
    during each even ever every few for from further get gets getting got had hadn't has hasn't
    have haven't having her here hers herself him himself his how i'm i've into isn't it's its
    itself just know let like made make many maybe more most much must myself need never not now
    off once one only other our ours ourselves out over own really right said same say says see
    she should shouldn't since some something still such sure than that that's the their theirs
    them themselves then there there's these they they're thing things think this those though
    through too under until very want was wasn't way we're well were weren't what what's when
    where which while who whom why will with won't would wouldn't yeah yes yet you you'd you'll
    you're you've your yours yourself going been feel feels felt back just okay""".split()
)
_REDIRECT = re.compile(
    r"(^|[.!?]\s+|\s)(but|look|listen|wait|no[,.!]|that's not|that is not|you're not|"
    r"you are not|anyway|actually|let me|back to|the point is|you keep)\b",
    re.IGNORECASE,
)


def content_words(text: str) -> list[str]:
    return [
        w for w in _WORD.findall(text.lower().replace("’", "'")) if len(w) > 3 and w not in _STOP
    ]


@dataclass(frozen=True)
class TurnSignals:
    turn: int
    lexical_novelty: float
    semantic_novelty: float
    loop_similarity: float | None  # the persona's window ending here (None before a full window)
    convergence: float | None  # the window's persona messages vs the replies they answer
    questions: int
    redirects: int
    topics_introduced: int


@dataclass(frozen=True)
class Span:
    start: int
    end: int  # inclusive
    peak: float

    @property
    def turns(self) -> int:
        return self.end - self.start + 1


@dataclass
class Analysis:
    backend: str
    window: int
    loop_threshold: float
    convergence_threshold: float
    turns: list[TurnSignals]
    loop_spans: list[Span] = field(default_factory=list)
    convergence_spans: list[Span] = field(default_factory=list)
    interlocutor_topics: int = 0  # content words the interlocutor brought up first

    @property
    def novelty_trend(self) -> float:
        """Slope of lexical novelty per turn (negative: the persona says less that is new)."""
        return slope([t.lexical_novelty for t in self.turns])

    @property
    def convergence_curve(self) -> list[float | None]:
        return [t.convergence for t in self.turns]

    @property
    def initiative(self) -> dict[str, float]:
        n = max(1, len(self.turns))
        persona_topics = sum(t.topics_introduced for t in self.turns)
        return {
            "questions_per_turn": sum(t.questions for t in self.turns) / n,
            "redirects_per_turn": sum(t.redirects for t in self.turns) / n,
            "topics_per_turn": persona_topics / n,
            "topic_share": persona_topics / max(1, persona_topics + self.interlocutor_topics),
        }

    def to_dict(self) -> dict:
        return {
            "backend": self.backend,
            "window": self.window,
            "loop_threshold": self.loop_threshold,
            "convergence_threshold": self.convergence_threshold,
            "turns": [asdict(t) for t in self.turns],
            "loop_spans": [asdict(s) for s in self.loop_spans],
            "convergence_spans": [asdict(s) for s in self.convergence_spans],
            "novelty_trend": self.novelty_trend,
            "initiative": self.initiative,
        }


def analyze(
    exchanges: Sequence[tuple[str, str]],
    backend: Backend,
    spec: StagnationDetectionSpec | None = None,
) -> Analysis:
    """Signals for a conversation given as (persona message, interlocutor reply) per turn."""
    spec = spec or StagnationDetectionSpec()
    monitor = StagnationMonitor(spec, backend)
    loop_at, echo_at = monitor.thresholds
    persona = [p for p, _ in exchanges]
    table: dict[str, np.ndarray] = {}
    if backend.name == "embedding":  # every message embedded once, in one call
        texts = list(dict.fromkeys([*persona, *(reply for _, reply in exchanges)]))
        table = dict(zip(texts, backend.vectors(texts), strict=True))
        persona_vectors = np.stack([table[p] for p in persona]) if persona else None
    else:  # TF-IDF: fitted on the persona's messages together
        persona_vectors = backend.vectors(persona) if persona else None
    semantic = (
        [1.0 - m for m in max_to_earlier(persona_vectors)] if persona_vectors is not None else []
    )

    seen: set[str] = set()
    interlocutor_topics = 0
    turns: list[TurnSignals] = []
    for turn, (said, reply) in enumerate(exchanges):
        monitor.add(turn, said, reply, (table[said], table[reply]) if table else None)
        values = monitor.current()
        words = content_words(said)
        new = {w for w in words if w not in seen}
        novelty = len([w for w in words if w in new]) / len(words) if words else 0.0
        seen.update(words)
        reply_words = set(content_words(reply))
        interlocutor_topics += len(reply_words - seen)
        seen.update(reply_words)
        turns.append(
            TurnSignals(
                turn=turn,
                lexical_novelty=novelty,
                semantic_novelty=semantic[turn] if turn else 1.0,
                loop_similarity=values[0] if values else None,
                convergence=values[1] if values else None,
                questions=said.count("?"),
                redirects=len(_REDIRECT.findall(said)),
                topics_introduced=len(new),
            )
        )
    analysis = Analysis(
        backend=backend.name,
        window=spec.window,
        loop_threshold=loop_at,
        convergence_threshold=echo_at,
        turns=turns,
        loop_spans=_spans([t.loop_similarity for t in turns], loop_at, spec.window),
        convergence_spans=_spans([t.convergence for t in turns], echo_at, spec.window),
        interlocutor_topics=interlocutor_topics,
    )
    return analysis


def _spans(values: list[float | None], threshold: float, window: int) -> list[Span]:
    """Turn ranges covered by windows above ``threshold`` (a window ending at t covers
    t-window+1..t), merged where they touch."""
    spans: list[Span] = []
    for turn, value in enumerate(values):
        if value is None or value < threshold:
            continue
        start = max(0, turn - window + 1)
        if spans and start <= spans[-1].end + 1:
            last = spans[-1]
            spans[-1] = Span(last.start, turn, max(last.peak, value))
        else:
            spans.append(Span(start, turn, value))
    return spans
