"""Every message actors exchange, as frozen msgspec Structs.

Bodies are tagged (``"type": "Speak"``) so a line of ``trace.jsonl`` decodes back to its class;
the :class:`Envelope` around a body says who sent it to whom, in which rollout and turn, and
which request it answers. Actors never share state: what one needs from another travels here.

A request names its reply type — ``class Judge(Request[Judgement])`` — so
``await post.request("judge", Judge(...))`` is a ``Judgement`` to the type checker and is
checked once, in the post, at run time: no call site asserts what it got back. A :class:`Tell`
gets no reply.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, TypeVar, get_args, get_origin

import msgspec

from loom_sim.models.base import Usage

R = TypeVar("R", bound="Body")


class Body(msgspec.Struct, frozen=True, tag=True, forbid_unknown_fields=False):
    """Base of every message body."""


class Request(Body, Generic[R], frozen=True):
    """A message that gets exactly one reply, of type ``R``."""

    reply_type: ClassVar[type[Body]] = Body

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Request:
                (cls.reply_type,) = get_args(base)


class Tell(Body, frozen=True):
    """A message that gets no reply: the recipient takes note, in order."""


# ─── persona ────────────────────────────────────────────────────────────────


class Utterance(Body, frozen=True):
    """What a model-backed actor said, with what it cost."""

    text: str
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1
    cut_turns: int = 0  # history turns left out to fit the context budget


class Speak(Request[Utterance], frozen=True):
    """Persona: produce your next message (a candidate until the repetition guard accepts it)."""

    turn: int
    attempt: int = 0
    injection: str = "none"  # full | reminder | none
    scaffolding: str | None = None  # the full prompt, on full-injection turns
    reminder: str | None = None
    emergency: str | None = None  # a monitor's intervention, scheduled for this turn
    vary: str | None = None  # the guard's re-prompt after a rejected candidate


class Heard(Tell, frozen=True):
    """To the persona and to the responders that listen (adversaries): this exchange is now
    part of the conversation."""

    turn: int
    persona: str
    interlocutor: str


# ─── interlocutor (or adversary) ────────────────────────────────────────────


class Respond(Request[Utterance], frozen=True):
    """Interlocutor (or adversary): answer the persona's message."""

    turn: int
    text: str


class AdversaryMove(msgspec.Struct, frozen=True):
    """What an adversary did with one message, and why: the record a reader audits.

    ``material`` is what the tactic was built from (the quote it misquoted and how, the
    backstory fact it asks about, the tone it contrasts, the task it offers), so a reader can
    check the probe against the transcript without re-deriving it. Whether the probe worked is
    known only once the persona has answered; that verdict travels in a later :class:`Probe`
    as a :class:`ProbeOutcome`.
    """

    adversary: str  # contradiction | helpfulness
    tactic: str  # e.g. misquote, backstory_recall, above_ceiling, register_shift
    policy: str = ""  # how the tactic was chosen: static | adaptive | bandit | cycle | weighted
    category: str | None = None  # the persona's last message, as the probe classifier read it
    rationale: str = ""
    material: dict[str, str] = msgspec.field(default_factory=dict)
    composed: str = "model"  # model | template (the set template: asked for, or the fallback)
    formality: float | None = None  # the coaxer's register, 0 casual .. 1 academic


class ProbeOutcome(msgspec.Struct, frozen=True):
    """The judge's reading of the persona's answer to an earlier probe: did the probe catch
    the persona (contradicting itself for the trap; stepping out of its bounds for the coaxer)?
    """

    turn: int  # the turn of the probe
    adversary: str
    tactic: str
    caught: bool | None  # None: the judge could not say
    evidence: str = ""
    error: str | None = None
    recovery: float | None = None  # the trap: how well it recovered as its spec says, 0..1


class Probe(Utterance, frozen=True, kw_only=True):
    """An adversary's message: an utterance with the move behind it."""

    move: AdversaryMove
    judged: ProbeOutcome | None = None  # the verdict on this adversary's previous probe
    judge_usage: Usage = msgspec.field(default_factory=Usage)


# ─── monitor ────────────────────────────────────────────────────────────────


class MonitorEvent(msgspec.Struct, frozen=True):
    """A monitor trigger: which monitor, which pattern fired, what was done about it."""

    monitor: str  # repetition | stagnation | convergence
    pattern: str  # e.g. "banned:Have you ever felt", "ends_with_question_to_interlocutor"
    action: str  # reprompt | accepted_after_retries | emergency_injection
    detail: str = ""
    attempt: int | None = None
    values: dict[str, float] = msgspec.field(default_factory=dict)


class Verdict(Body, frozen=True):
    accepted: bool
    events: list[MonitorEvent] = msgspec.field(default_factory=list)
    vary: str | None = None  # the re-prompt to use when rejected
    redirect: str | None = None  # the stagnation monitor's emergency redirect, for the turn


class CheckCandidate(Request[Verdict], frozen=True):
    """Monitor: may this persona candidate be sent? (with where the trajectory stands, for
    the emergency redirect a looping candidate gets)"""

    turn: int
    attempt: int
    text: str
    phase_index: int = 0
    intensities: dict[str, float] = msgspec.field(default_factory=dict)


class Observation(Body, frozen=True):
    events: list[MonitorEvent] = msgspec.field(default_factory=list)
    emergency: str | None = None  # an intervention for the next turn's prompt


class Observe(Request[Observation], frozen=True):
    """Monitor: examine the completed exchange (with where the trajectory stands)."""

    turn: int
    persona: str
    interlocutor: str
    phase_index: int = 0
    intensities: dict[str, float] = msgspec.field(default_factory=dict)


# ─── judge ──────────────────────────────────────────────────────────────────


class WindowTurn(msgspec.Struct, frozen=True):
    turn: int
    persona: str
    interlocutor: str


class Judgement(Body, frozen=True):
    ok: bool
    parsed: Any = None
    raw: str = ""
    error: str | None = None
    attempts: int = 1
    usage: Usage = msgspec.field(default_factory=Usage)


class Judge(Request[Judgement], frozen=True):
    """Judge: score a window of turns against a rubric; answer as JSON matching ``schema``.

    ``rubric`` (the question, after the transcript) and ``brief`` (what is judged and by which
    criteria, before it) are trusted text (loom-sim's templates and the config); everything a
    model wrote travels in ``window`` and ``material`` (an adversary probe's quotes and claims),
    which reach the judge only fenced (:mod:`loom_sim.judging.fence`). The brief is the same for
    every turn of a rollout, so it belongs to the prompt's shared prefix.
    """

    turn: int
    rubric: str
    window: list[WindowTurn]
    schema: dict[str, Any]
    rubric_id: str = ""
    material: dict[str, str] = {}
    brief: str = ""


# ─── simulated-user harness ─────────────────────────────────────────────────


class Action(msgspec.Struct, frozen=True):
    """What a simulated user does in a turn: an ``utterance`` (natural language) or a
    ``command`` (``name`` and ``args``); ``text`` is the line as typed."""

    kind: str  # utterance | command
    text: str
    name: str | None = None
    args: list[str] = msgspec.field(default_factory=list)


class PlannedAction(Body, frozen=True):
    action: Action
    gave_up: bool = False
    reason: str = ""  # why it gave up, or how the reply had to be read
    raw: str = ""  # the model's answer as it came
    usage: Usage = msgspec.field(default_factory=Usage)
    attempts: int = 1


class PlanAction(Request[PlannedAction], frozen=True):
    """Simulated user: what do you do next? ``feedback``: why the last draft was refused."""

    turn: int
    attempt: int = 0
    feedback: str | None = None


class Observed(Tell, frozen=True):
    """To the simulated user: this turn happened (what you did, what came back, how you felt)."""

    turn: int
    action: Action
    reply: str
    signals: list[str] = msgspec.field(default_factory=list)
    failed: bool = False
    confidence: float | None = None
    next_hypothesis: str = ""


class Artifact(msgspec.Struct, frozen=True):
    """A file the target produced, measured by the harness (never taken from the target)."""

    path: str  # relative to the session's bundle
    quality: float | None = None  # imagery.quality(...).overall, for images
    measures: dict[str, float] = msgspec.field(default_factory=dict)
    error: str | None = None  # why it could not be measured


class TargetReply(Body, frozen=True):
    """What came back from the target for one line, with what it left behind."""

    text: str
    ended_by: str  # prompt | idle | timeout | complete
    duration_s: float = 0.0
    truncated: bool = False
    received_bytes: int = 0
    screen: list[str] = msgspec.field(default_factory=list)
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)  # new in the event file
    artifacts: list[Artifact] = msgspec.field(default_factory=list)  # new files
    failed: bool = False
    failure: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)  # a model target's
    events_offset: int = 0  # how far the event file has been read
    notes: list[dict[str, Any]] = msgspec.field(default_factory=list)


class StartTarget(Request[TargetReply], frozen=True):
    """Target: come up (its greeting is the reply)."""

    turn: int = -1


class Dispatched(Body, frozen=True):
    turn: int


class Dispatch(Request[Dispatched], frozen=True):
    """Target: type this line (the reply is collected by :class:`Collect`)."""

    turn: int
    text: str


class Collect(Request[TargetReply], frozen=True):
    """Target: the reply to the line dispatched, once it has ended and the event delta window
    has closed."""

    turn: int


class TargetStopped(Body, frozen=True):
    pass


class StopTarget(Request[TargetStopped], frozen=True):
    turn: int = -1


class Reflection(msgspec.Struct, frozen=True):
    """One turn's open pondering, exactly the seed's contract."""

    turn: int
    action_taken: dict[str, Any]
    observed_signals: list[str]
    what_worked: str
    what_failed: str
    open_questions: list[str]
    next_hypothesis: str
    confidence: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class Reflected(Body, frozen=True):
    reflection: Reflection
    status: str  # valid | repaired | invalid (schema-checked; invalid after every re-ask)
    attempts: int = 1
    error: str | None = None
    raw: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)


class Reflect(Request[Reflected], frozen=True):
    """Reflector: one reflection record on this turn."""

    turn: int
    action: Action
    reply: str
    signals: list[str] = msgspec.field(default_factory=list)
    failed: bool = False


class CriterionResult(msgspec.Struct, frozen=True):
    id: str
    met: bool | None  # None: the evaluator could not say
    detail: str = ""
    judged: bool = False


class Evaluation(Body, frozen=True):
    results: list[CriterionResult]
    progress: float  # weighted share of the criteria met, 0..1
    ok: bool = True
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)


class AttributedArtifact(msgspec.Struct, frozen=True):
    artifact: Artifact
    ability: str | None  # the command of the turn that produced it


class Evaluate(Request[Evaluation], frozen=True):
    """Evaluator: how far is the goal, by the success criteria, after this turn? Carries what
    is new since the last evaluation; the evaluator keeps the tally."""

    turn: int
    window: list[WindowTurn]  # the last turns, for judged criteria
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)  # new events
    artifacts: list[AttributedArtifact] = msgspec.field(default_factory=list)  # new files
    reply: str = ""  # this turn's reply


# ─── debate ─────────────────────────────────────────────────────────────────


class Line(msgspec.Struct, frozen=True):
    """A said debate message, as actors see it: ``m7`` in the main chat, ``room-1.3`` in a
    crux room."""

    id: str
    speaker: str  # persona id
    text: str
    reply_to: str | None = None
    room: str | None = None


class Posted(Tell, frozen=True):
    """To debaters and the detector: this message was said."""

    line: Line


class Compose(Request[Utterance], frozen=True):
    """Debater: write your next message — an opening, a main-chat turn with an intent, or a
    crux-room message. ``redraft`` holds why the last draft was refused, when it was."""

    turn: int  # the main chat's turn (a room's: the turn it opened after)
    kind: str  # opening | turn | room_opening | room_turn
    attempt: int = 0
    intent: str = ""
    reply_to: str | None = None
    room: str | None = None
    question: str = ""  # a room's disputed claim
    opponent: str = ""  # a room's other persona (id)
    draft: str = ""  # the refused draft
    redraft: list[str] = msgspec.field(default_factory=list)  # why it was refused


class Assignment(Body, frozen=True):
    """The moderator's decision: who speaks, in what kind of turn, to do what."""

    speaker: str
    kind: str  # opening | turn
    intent: str  # "" for openings
    reply_to: str | None
    chosen: str  # why this speaker


class NextTurn(Request[Assignment], frozen=True):
    """Moderator: who has main-chat turn ``turn``?"""

    turn: int


class TurnTaken(Tell, frozen=True):
    """To the moderator: turn ``turn`` was taken by ``speaker`` (``said`` is its message id,
    None when the turn failed)."""

    turn: int
    speaker: str
    said: str | None = None
    text: str = ""
    reply_to: str | None = None


class PairSignal(msgspec.Struct, frozen=True):
    """How strongly two personas' latest claims oppose each other, and why."""

    pair: list[str]  # sorted persona ids
    opposition: float
    similarity: float
    contrast: str  # contrary_reply | negation | contrast_words | none
    messages: list[str]  # the later claim's id, the earlier claim's id


class Disagreement(msgspec.Struct, frozen=True, kw_only=True):
    """A disagreement the detector model reported, and whether the signals bear it out."""

    pair: list[str]  # sorted persona ids
    claim: str
    confidence: float
    opposition: float = 0.0  # the pair's strongest cheap signal in the window
    corroborated: bool = False  # opposition reached the corroboration threshold: it counts


class Detection(Body, frozen=True, kw_only=True):
    window: list[str]  # the message ids read
    signals: list[PairSignal]  # per pair, its strongest signal in the window
    gate: float  # the strongest opposition of all
    asked: bool  # whether the detector model was asked (the gate was reached)
    found: list[Disagreement] = msgspec.field(default_factory=list)
    attempts: int = 0
    reading: str | None = None
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)


class Detect(Request[Detection], frozen=True):
    """Detector: read the window ending at the latest message; any disagreements?"""

    round: int
    after: int  # main-chat messages said so far


class ExitVerdict(Body, frozen=True, kw_only=True):
    ok: bool
    surfaced: bool = False
    how: str = ""
    reason: str = ""
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)


class CheckExit(Request[ExitVerdict], frozen=True):
    """Detector: has this crux room surfaced its crux?"""

    room: str
    question: str
    pair: list[str]
    lines: list[Line]
    after: int  # exchanges so far


class CardAnswer(Body, frozen=True, kw_only=True):
    ok: bool
    card: dict[str, Any] | None = None
    raw: str = ""
    problems: list[str] = msgspec.field(default_factory=list)
    attempts: int = 0
    reading: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)


class ExtractCard(Request[CardAnswer], frozen=True):
    """Detector: write the crux card of this room (``context``: the pair's main-chat messages
    that led to it; every line may be cited)."""

    room: str
    question: str
    pair: list[str]
    lines: list[Line]
    context: list[Line] = msgspec.field(default_factory=list)


# ─── embedding service ──────────────────────────────────────────────────────
# One service per run embeds every rollout's texts (``loom_sim.actors.embedder``). These travel
# on the service's own channel, never through a rollout's post: they carry vectors, which the
# trace has no use for.


class Embeddings(Body, frozen=True):
    """The vectors of the texts asked for, one row each, in order (a read-only float32 array
    of shape (n, 384)); or, when the embedding model could not be loaded, none, and the
    backend the monitor should use instead."""

    backend: str  # "embedding", or "tfidf" (the fallback: vectors is None then)
    vectors: Any = None


class Embed(Request[Embeddings], frozen=True):
    """Embedding service: the vectors of ``texts`` (a verdict waits on them)."""

    texts: list[str]


class Prefetch(Tell, frozen=True):
    """Embedding service: ``texts`` will be needed; embed them when the model is free."""

    texts: list[str]


# ─── failures ───────────────────────────────────────────────────────────────


class Failure(Body, frozen=True):
    """What the trace records when an actor's handler raised: the requester gets the exception
    itself and raises it as its own type; this is the readable record of it."""

    actor: str
    error: str  # one sentence for people
    kind: str  # the exception class name, for readers of the trace


AnyBody = (
    Speak
    | Utterance
    | Heard
    | Respond
    | Probe
    | CheckCandidate
    | Verdict
    | Observe
    | Observation
    | Judge
    | Judgement
    | Failure
    | PlanAction
    | PlannedAction
    | Observed
    | StartTarget
    | Dispatch
    | Dispatched
    | Collect
    | TargetReply
    | StopTarget
    | TargetStopped
    | Reflect
    | Reflected
    | Evaluate
    | Evaluation
    | Posted
    | Compose
    | NextTurn
    | Assignment
    | TurnTaken
    | Detect
    | Detection
    | CheckExit
    | ExitVerdict
    | ExtractCard
    | CardAnswer
)


class Envelope(msgspec.Struct, frozen=True):
    """A message in flight: the unit the trace records."""

    id: int
    ts: float
    rollout: str
    turn: int
    sender: str
    recipient: str
    body: AnyBody
    reply_to: int | None = None


ENVELOPE_DECODER = msgspec.json.Decoder(Envelope)
